/** Finding the effect keys of calls, from the stored transcript. */
import type { Pool } from 'pg';
import type { ChatMessage } from '../../src/contract/messages';
import { callInstanceKey } from '../../src/core/effect-keys';
import { effectKey } from '../../src/activities/effect-key';

/**
 * The effect key of the call with this provider id in the latest stored
 * assistant message that has it: the key its stored result was read from
 * when its tool message is stored, else the key the tool activity gives the
 * model's arguments (a call not run yet). Undefined until that message is
 * stored.
 */
export async function effectKeyOf(pool: Pool, conversationId: string, toolCallId: string): Promise<string | undefined> {
  const { rows } = await pool.query<{ seq: number; message: ChatMessage; ref_key: string | null }>(
    `SELECT seq, message, ref_key FROM durable_agent.conversation_messages WHERE conversation_id = $1 ORDER BY seq`,
    [conversationId],
  );
  let found: string | undefined;
  let open: string | undefined;
  for (const { seq, message, ref_key: refKey } of rows) {
    if (message.role === 'assistant') {
      const index = (message.tool_calls ?? []).findIndex((c) => c.id === toolCallId);
      open = undefined;
      if (index < 0) continue;
      const call = message.tool_calls![index];
      const args: unknown = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
      found = effectKey(callInstanceKey(conversationId, seq, index), call.function.name, args);
      open = found;
    } else if (message.role === 'tool' && open && message.tool_call_id === toolCallId && refKey) {
      found = refKey;
    }
  }
  return found;
}

/**
 * For a stored transcript, the effect key of each tool message, by its seq: the key its result was stored under
 * (tool messages that answer without running, such as a rejection, have none).
 */
export async function toolMessageKeys(pool: Pool, conversationId: string): Promise<Map<number, string>> {
  const { rows } = await pool.query<{ seq: number; ref_key: string }>(
    `SELECT seq, ref_key FROM durable_agent.conversation_messages
      WHERE conversation_id = $1 AND role = 'tool' AND ref_key IS NOT NULL ORDER BY seq`,
    [conversationId],
  );
  return new Map(rows.map((r) => [r.seq, r.ref_key]));
}

/** The call key an effect key was made from (`src/activities/effect-key.ts`). */
export function callKeyOfEffect(key: string): string {
  return key.replace(/\/args-[0-9a-f]{16}$/, '');
}
