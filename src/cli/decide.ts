/**
 * Deciding waiting tool calls from the CLI: through the HTTP API when one is
 * configured or running here (signed), else with the client directly, queued
 * when no worker answers.
 */
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../app/config';
import { readRuntimeInfo } from '../app/runtime-file';
import type { AgentClient } from '../client/client';
import { isUnsignedRefusal } from '../common/decision-signing';
import { DecisionRefusedError } from '../common/errors';
import type { DecisionKind, GrantRequest, WaitingPolicy } from '../contract';
import { decideThroughApi, findApiDecider, waitingThroughApi, type ApiDecider } from './api-decisions';
import { withClient } from './connect';
import { findRunningApi, howToDecideThroughApi, type RunningApi } from './running-api';

/** How long a decision waits for the conversation's worker before it is queued instead: the CLI answers within 5 s. */
export const CLI_DECISION_WAIT_MS = 3_000;

/**
 * What the CLI decided: the calls, as whom, and whether no worker answered so they wait in the conversation's history.
 */
export interface CliDecision {
  calls: {
    decisionId?: string;
    toolCallId: string;
    callKey?: string;
    toolName: string;
    arguments: unknown;
    /** The approval policy's rule the call waited under, with its approvals before this decision. */
    policy?: WaitingPolicy;
    /** The standing grant given with this approval (its id is the decision's). */
    grant?: GrantRequest & { id: string };
  }[];
  decidedBy?: string;
  queued: boolean;
  /** Sent without the HTTP API: workers that require signed decisions refuse it. */
  unsigned: boolean;
  /** When unsigned: what to set to decide through the API instead. */
  howToSign?: string;
}

/**
 * Decides calls: through the HTTP API when one is configured or running
 * (signed, under the token's subject), else with the client directly
 * (accepted only by workers that do not require signed decisions; a worker's
 * refusal of it says what to set to decide through the API). No call
 * named: every call waiting now, each named by its key, so a call that
 * appears later is not decided. When no worker answers within
 * {@link CLI_DECISION_WAIT_MS}, the decisions are queued: checked against
 * what the list of waiting calls says waits and sent as signals a worker applies later.
 */
export async function decideCalls(
  conversationId: string,
  d: {
    decision: DecisionKind;
    toolCallId?: string;
    callKey?: string;
    reason?: string;
    decidedBy?: string;
    arguments?: Record<string, unknown>;
    response?: string;
    /** `approve` of one named call: also give a standing grant with these limits. */
    grant?: GrantRequest;
  },
  client?: AgentClient,
): Promise<CliDecision> {
  const { running, api } = localApi();
  const { decision, reason } = d;
  if (d.grant && (decision !== 'approve' || (!d.toolCallId && !d.callKey)))
    throw new Error('A grant goes with the approval of one call: name it (a tool call id or --key), not --all.');
  const extra = {
    ...(d.arguments ? { arguments: d.arguments } : {}),
    ...(d.response !== undefined ? { response: d.response } : {}),
    ...(d.grant ? { grant: d.grant } : {}),
  };
  if (api) {
    const named = d.callKey
      ? { callKeys: [d.callKey] }
      : d.toolCallId
        ? { toolCallIds: [d.toolCallId] }
        : { callKeys: (await waitingThroughApi(api, conversationId)).map((p) => p.callKey) };
    if (named.callKeys?.length === 0)
      throw new Error(`No tool call is waiting for approval in conversation ${conversationId}. Nothing was decided.`);
    const outcome = await decideThroughApi(api, conversationId, { decision, ...named, reason, ...extra });
    return { calls: outcome.results, decidedBy: outcome.decidedBy, queued: outcome.queued, unsigned: false };
  }
  if (!client) return withClient((connected) => decideCalls(conversationId, d, connected));
  const { calls: waiting, workerAnswered } = await client.waitingCalls({
    conversationId,
    below: false,
    workerWaitMs: CLI_DECISION_WAIT_MS,
  });
  const chosen = waiting.filter((p) =>
    d.callKey ? p.callKey === d.callKey : d.toolCallId ? p.toolCallId === d.toolCallId : true,
  );
  if (chosen.length === 0) {
    const what = d.callKey
      ? `Call ${d.callKey} is`
      : d.toolCallId
        ? `Tool call "${d.toolCallId}" is`
        : 'No tool call is';
    const how = workerAnswered
      ? ''
      : ` as its last recorded state says (no worker answered within ${CLI_DECISION_WAIT_MS / 1000} s)`;
    throw new Error(
      `${what} not waiting for approval in conversation ${conversationId}${how}. Nothing was decided; see "pending".`,
    );
  }
  const decided: CliDecision['calls'] = [];
  for (const call of chosen) {
    const one = {
      decisionId: randomUUID(),
      decision,
      toolCallId: call.toolCallId,
      callKey: call.callKey,
      reason,
      decidedBy: d.decidedBy,
      ...extra,
    };
    if (workerAnswered) {
      await client.decide(conversationId, one).catch((err: Error) => {
        // The worker wants decisions signed by the API: say how this CLI reaches one.
        throw isUnsignedRefusal(err.message)
          ? new DecisionRefusedError(`${err.message}\n${howToDecideThroughApi(running)}`)
          : err;
      });
    } else await client.signalDecision(conversationId, one);
    decided.push({
      ...call,
      decisionId: one.decisionId,
      ...(d.grant ? { grant: { id: one.decisionId, ...d.grant } } : {}),
    });
  }
  return {
    calls: decided,
    decidedBy: d.decidedBy,
    queued: !workerAnswered,
    unsigned: true,
    howToSign: howToDecideThroughApi(running),
  };
}

/**
 * The API decisions go through (AGENT_API_URL with AGENT_API_TOKEN, or the
 * API of the `npm start` running here for the CLI's target, with its local
 * approver's token), and what the CLI found of that `npm start`.
 */
export function localApi(): { running: RunningApi; api?: ApiDecider } {
  const config = loadConfig();
  const running = findRunningApi(config, process.env, readRuntimeInfo(config.dataDir));
  return { running, api: findApiDecider(process.env, running) };
}

/** The arguments of `approve --edit`: a JSON object, for one named call. */
export function parseEdit(
  decision: 'approve' | 'reject',
  text: string,
  all: boolean | undefined,
): Record<string, unknown> {
  if (decision !== 'approve') throw new Error('--edit goes with approve: the call runs with your arguments.');
  if (all) throw new Error('--edit decides one call: name it (a tool call id or --key), not --all.');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(
      `--edit takes the arguments as a JSON object, e.g. '{"order_id":"ord_1001","amount_cents":12000}': ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error("--edit takes a JSON object (the tool's arguments).");
  return parsed as Record<string, unknown>;
}
