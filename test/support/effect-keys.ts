/** Finding the effect key the workflow minted for a call, from the stored transcript. */
import type { Pool } from 'pg';
import type { ChatMessage } from '../../src/transcript/messages';
import { callInstanceKey } from '../../src/transcript/effect-keys';

/**
 * The effect key of the call with this provider id in the latest stored
 * assistant message that has it; undefined until that message is stored.
 */
export async function effectKeyOf(pool: Pool, conversationId: string, toolCallId: string): Promise<string | undefined> {
  const { rows } = await pool.query<{ seq: number; message: ChatMessage }>(
    `SELECT seq, message FROM conversation_messages WHERE conversation_id = $1 AND role = 'assistant' ORDER BY seq DESC`,
    [conversationId],
  );
  for (const { seq, message } of rows) {
    const index = message.role === 'assistant' ? (message.tool_calls ?? []).findIndex((c) => c.id === toolCallId) : -1;
    if (index >= 0) return callInstanceKey(conversationId, seq, index);
  }
  return undefined;
}
