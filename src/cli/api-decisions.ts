/**
 * The command line through the HTTP API: decisions, so they are signed and
 * recorded under an authenticated subject, and, with AGENT_API_URL and
 * AGENT_API_TOKEN, everything an approver or requester does (`pending`,
 * `say`), so they need neither Temporal nor PostgreSQL access. Beside a
 * running `npm start` that serves the CLI's target (embedded Temporal or a
 * team's cluster), decisions use its API and the local approver's
 * development token (readable by its owner only).
 */
// tokens.ts, not setup.ts: the CLI must not load the API server (Fastify, jose, the inbox) to read a token file.
import { readTokenFile } from '../api/tokens';
import type { RunningApi } from './running-api';
import type { DecisionKind, GrantRequest, WaitingCall, WaitingPolicy } from '../contract';

/** Where and as whom the CLI decides through the API. */
export interface ApiDecider {
  url: string;
  token: string;
  /** Whom the token names, when known (development tokens). */
  subject?: string;
}

/**
 * The API to decide through: AGENT_API_URL with AGENT_API_TOKEN, else the
 * running `npm start`'s (as `findRunningApi` finds it) with AGENT_API_TOKEN or,
 * when that `npm start` made development tokens, their approver's token (its
 * file is refused when others can read it). Undefined when there is none.
 */
export function findApiDecider(env: NodeJS.ProcessEnv, running: RunningApi): ApiDecider | undefined {
  const remote = remoteApi(env);
  if (remote) return remote;
  if (running.found !== 'api') return undefined;
  const url = running.url;
  const token = env.AGENT_API_TOKEN?.trim();
  if (token) return { url, token };
  if (!running.developmentTokensFile) return undefined;
  const approver = readTokenFile(running.developmentTokensFile).find((t) => t.roles.includes('approver'));
  return approver ? { url, token: approver.token, subject: approver.subject } : undefined;
}

/** One call as the API decided it. */
export interface ApiCallDecision {
  /** The decision's id (one per call), as recorded in `approval_decisions`. */
  decisionId?: string;
  toolCallId: string;
  callKey: string;
  toolName: string;
  arguments: unknown;
  /** The approval policy's rule the call waited under, with its approvals before this decision. */
  policy?: WaitingPolicy;
  /** The standing grant given with this approval (its id is the decision's). */
  grant?: GrantRequest & { id: string };
}

/** What the API did: applied, or queued because no worker answered. */
export interface ApiDecisionOutcome {
  decidedBy: string;
  queued: boolean;
  results: ApiCallDecision[];
}

/**
 * Calls the API with the CLI's token; throws with the API's message when it refuses, and saying `notDone` (what did not
 * happen) when it does not answer.
 */
export async function callApi<T>(
  api: ApiDecider,
  method: 'GET' | 'POST' | 'DELETE',
  route: string,
  body?: unknown,
  notDone = 'Nothing was decided.',
): Promise<T> {
  const response = await fetch(`${api.url}${route}`, {
    method,
    headers: {
      authorization: `Bearer ${api.token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).catch((err: Error) => {
    throw new Error(
      `The HTTP API at ${api.url} did not answer (${err.message}). Is npm start (or npm run api) running? ${notDone}`,
    );
  });
  const json = (await response.json().catch(() => undefined)) as
    (T & { error?: undefined }) | { error?: { code: string; message: string } } | undefined;
  if (!response.ok || !json || json.error) {
    const error = json?.error;
    throw new Error(error ? `${error.message} (${error.code})` : `The API at ${api.url} answered ${response.status}.`);
  }
  return json as T;
}

/**
 * The calls waiting for a decision, of one conversation or of all, as the API lists them (from the list in PostgreSQL:
 * no worker needed): those the token may decide first (`mayDecide`).
 */
export async function waitingThroughApi(
  api: ApiDecider,
  conversationId?: string,
): Promise<(WaitingCall & { mayDecide?: boolean })[]> {
  const query = conversationId === undefined ? '' : `?conversationId=${encodeURIComponent(conversationId)}`;
  const { approvals } = await callApi<{ approvals: (WaitingCall & { mayDecide?: boolean })[] }>(
    api,
    'GET',
    `/v1/approvals${query}`,
  );
  // The list of a top-level conversation has the calls of the agents it called as tools too; those are decided in their
  // own.
  return conversationId === undefined ? approvals : approvals.filter((a) => a.conversationId === conversationId);
}

/** The API named by AGENT_API_URL with AGENT_API_TOKEN, when both are set: the CLI then talks to it alone. */
export function remoteApi(env: NodeJS.ProcessEnv): ApiDecider | undefined {
  const url = env.AGENT_API_URL?.trim();
  if (!url) return undefined;
  const token = env.AGENT_API_TOKEN?.trim();
  if (!token)
    throw new Error(
      "AGENT_API_URL is set but AGENT_API_TOKEN is not: set the token the API gave you (a requester's to send messages, an approver's to decide).",
    );
  return { url: url.replace(/\/+$/, ''), token };
}

/**
 * Decides named calls through the API; throws with the API's message when it refuses. Returns whom the API recorded,
 * the calls, and whether they were queued.
 */
export async function decideThroughApi(
  api: ApiDecider,
  conversationId: string,
  body: {
    decision: DecisionKind;
    toolCallIds?: string[];
    callKeys?: string[];
    reason?: string;
    arguments?: Record<string, unknown>;
    response?: string;
    grant?: GrantRequest;
  },
): Promise<ApiDecisionOutcome> {
  const outcome = await callApi<ApiDecisionOutcome>(
    api,
    'POST',
    `/v1/conversations/${encodeURIComponent(conversationId)}/decisions`,
    body,
  );
  return { decidedBy: outcome.decidedBy, queued: outcome.queued === true, results: outcome.results };
}
