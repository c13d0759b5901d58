/**
 * Decisions from the command line through the HTTP API, so they are signed
 * and recorded under an authenticated subject: with AGENT_API_URL and
 * AGENT_API_TOKEN, or, beside a running `npm start`, its API and the local
 * approver's development token (readable by its owner only).
 */
import fs from 'node:fs';
import path from 'node:path';
// tokens.ts, not setup.ts: the CLI must not load the API server (Fastify, jose, the inbox) to find a file name.
import { DEVELOPMENT_TOKENS_FILE, type ApiTokenConfig } from '../api/tokens';

/** Where and as whom the CLI decides through the API. */
export interface ApiDecider {
  url: string;
  token: string;
  /** Whom the token names, when known (development tokens). */
  subject?: string;
}

/** The API to decide through, or undefined when none is configured or running. */
export function findApiDecider(env: NodeJS.ProcessEnv, dataDir: string, runtimeApiUrl: string | undefined): ApiDecider | undefined {
  const url = env.AGENT_API_URL?.trim() || runtimeApiUrl;
  if (!url) return undefined;
  const token = env.AGENT_API_TOKEN?.trim();
  if (token) return { url, token };
  if (env.AGENT_API_URL) return undefined;
  try {
    const tokens = JSON.parse(fs.readFileSync(path.join(dataDir, DEVELOPMENT_TOKENS_FILE), 'utf8')) as ApiTokenConfig[];
    const approver = tokens.find((t) => t.roles.includes('approver'));
    return approver ? { url, token: approver.token, subject: approver.subject } : undefined;
  } catch {
    return undefined;
  }
}

/** Decides named calls through the API; throws with the API's message when it refuses. Returns the subject recorded and the calls decided. */
export async function decideThroughApi(
  api: ApiDecider,
  conversationId: string,
  body: { decision: 'approve' | 'reject'; toolCallIds?: string[]; callKeys?: string[]; reason?: string },
): Promise<{ decidedBy: string; toolCallIds: string[] }> {
  const response = await fetch(`${api.url}/v1/conversations/${encodeURIComponent(conversationId)}/decisions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await response.json().catch(() => undefined)) as
    | { decidedBy: string; results: { toolCallId: string }[] }
    | { error?: { code: string; message: string } }
    | undefined;
  if (!response.ok || !json || !('results' in json)) {
    const error = json && 'error' in json ? json.error : undefined;
    throw new Error(error ? `${error.message} (${error.code})` : `The API at ${api.url} answered ${response.status}.`);
  }
  return { decidedBy: json.decidedBy, toolCallIds: json.results.map((r) => r.toolCallId) };
}
