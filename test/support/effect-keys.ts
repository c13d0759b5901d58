/** Finding the effect keys the workflow minted for calls, from the stored transcript. */
import type { Pool } from 'pg';
import type { ChatMessage } from '../../src/contract/messages';
import { callInstanceKey } from '../../src/core/effect-keys';

/**
 * The effect key of the call with this provider id in the latest stored
 * assistant message that has it; undefined until that message is stored.
 */
export async function effectKeyOf(pool: Pool, conversationId: string, toolCallId: string): Promise<string | undefined> {
  const { rows } = await pool.query<{ seq: number; message: ChatMessage }>(
    `SELECT seq, message FROM durable_agent.conversation_messages WHERE conversation_id = $1 AND role = 'assistant' ORDER BY seq DESC`,
    [conversationId],
  );
  for (const { seq, message } of rows) {
    const index = message.role === 'assistant' ? (message.tool_calls ?? []).findIndex((c) => c.id === toolCallId) : -1;
    if (index >= 0) return callInstanceKey(conversationId, seq, index);
  }
  return undefined;
}

/**
 * For a stored transcript, the effect key of the call each tool message
 * answers, by the tool message's seq. A tool message answers a call of the
 * nearest assistant message before it.
 */
export function toolMessageKeys(
  conversationId: string,
  messages: readonly { seq: number; message: ChatMessage }[],
): Map<number, string> {
  const keys = new Map<number, string>();
  let open: { seq: number; ids: string[] } | undefined;
  for (const { seq, message } of messages) {
    if (message.role === 'assistant') open = { seq, ids: (message.tool_calls ?? []).map((c) => c.id) };
    else if (message.role === 'tool' && open) {
      const index = open.ids.indexOf(message.tool_call_id);
      if (index >= 0) keys.set(seq, callInstanceKey(conversationId, open.seq, index));
    } else open = undefined;
  }
  return keys;
}
