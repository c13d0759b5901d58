/**
 * Finding one conversation's requests among those the scripted model server
 * received, on either API: a Chat Completions request carries the transcript
 * as `messages`, a Responses request as `input` items.
 */

type Said = { role?: string; content?: unknown };

/**
 * Whether a request body holds a user message whose text includes `marker`:
 * one of `messages` (Chat Completions) or of `input` (the Responses API).
 * Only plain-text user messages count (not those with files).
 */
export function hasUserText(body: unknown, marker: string): boolean {
  const { messages, input } = (body ?? {}) as { messages?: Said[]; input?: Said[] | string };
  const said = [...(messages ?? []), ...(Array.isArray(input) ? input : [])];
  return said.some((m) => m.role === 'user' && typeof m.content === 'string' && m.content.includes(marker));
}

/** The bodies, in arrival order, of the requests whose user messages include `marker` (see {@link hasUserText}). */
export function requestsWithUserText(
  requests: readonly { body: unknown }[],
  marker: string,
): Record<string, unknown>[] {
  return requests.map((r) => r.body as Record<string, unknown>).filter((body) => hasUserText(body, marker));
}

/** An item of a Responses request's `input`, with the fields the tests read. */
export interface ResponsesItem {
  type?: string;
  role?: string;
  id?: string;
  call_id?: string;
  encrypted_content?: string;
  content?: unknown;
  output?: string;
}
