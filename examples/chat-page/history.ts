/**
 * The conversation so far, for the chat to start from: the server's
 * transcript as UIMessage[] (GET /v1/conversations/{id}/ui-messages, read
 * with the session cookie). Its answers carry the ids the live stream gives
 * them, so resuming a turn's stream replaces that turn's message instead of
 * adding a second one.
 */
import type { UIMessage } from 'ai';

/** The conversation's messages; none when it has not started. Throws when the server refuses (the page says why). */
export async function loadHistory(conversationId: string): Promise<UIMessage[]> {
  const response = await fetch(`/v1/conversations/${encodeURIComponent(conversationId)}/ui-messages`, {
    credentials: 'same-origin',
  });
  const body = (await response.json()) as { messages?: UIMessage[]; error?: { message: string } };
  if (!response.ok) throw new Error(body.error?.message ?? `Reading the conversation failed (${response.status}).`);
  return body.messages ?? [];
}
