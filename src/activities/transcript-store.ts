/** Message bodies in PostgreSQL: the workflow appends, the model activity and readers read. */
import type { Pool } from 'pg';
import type { ChatMessage } from '../transcript/messages';
import type { AppendMessagesInput } from './contracts';

/** A stored message with its position. */
export interface StoredMessage {
  seq: number;
  message: ChatMessage;
  createdAt: Date;
}

/**
 * Stores messages at their seqs in one transaction. Upsert: an activity
 * retried after it already wrote writes the same rows again. A message with a
 * `storedResultKey` takes its content from the tool result stored under that key.
 */
export async function appendMessages(pool: Pool, input: AppendMessagesInput): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    for (const { seq, message, storedResultKey } of input.messages) {
      if (storedResultKey && message.role === 'tool') {
        const res = await client.query(
          `INSERT INTO conversation_messages (conversation_id, seq, role, message)
           SELECT $1, $2, 'tool', jsonb_build_object('role', 'tool', 'tool_call_id', $3::text, 'content', content)
             FROM tool_results WHERE idempotency_key = $4
           ON CONFLICT (conversation_id, seq) DO UPDATE SET role = EXCLUDED.role, message = EXCLUDED.message`,
          [input.conversationId, seq, message.tool_call_id, storedResultKey],
        );
        if (res.rowCount === 0) {
          throw new Error(`No stored tool result under key ${storedResultKey} for message ${seq} of ${input.conversationId}.`);
        }
      } else {
        await client.query(
          `INSERT INTO conversation_messages (conversation_id, seq, role, message) VALUES ($1, $2, $3, $4)
           ON CONFLICT (conversation_id, seq) DO UPDATE SET role = EXCLUDED.role, message = EXCLUDED.message`,
          [input.conversationId, seq, message.role, JSON.stringify(message)],
        );
      }
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** Reads a conversation's messages in order, through `throughSeq` (all when unset). */
export async function readTranscript(pool: Pool, conversationId: string, throughSeq?: number): Promise<StoredMessage[]> {
  const { rows } = await pool.query<{ seq: number; message: ChatMessage; created_at: Date }>(
    `SELECT seq, message, created_at FROM conversation_messages
      WHERE conversation_id = $1 AND ($2::int IS NULL OR seq <= $2)
      ORDER BY seq`,
    [conversationId, throughSeq ?? null],
  );
  return rows.map((r) => ({ seq: r.seq, message: r.message, createdAt: r.created_at }));
}

/** Stores a large tool result under its idempotency key (upsert). */
export async function storeToolResult(
  pool: Pool,
  row: { idempotencyKey: string; conversationId: string; toolCallId: string; toolName: string; content: string },
): Promise<void> {
  await pool.query(
    `INSERT INTO tool_results (idempotency_key, conversation_id, tool_call_id, tool_name, content) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (idempotency_key) DO UPDATE SET content = EXCLUDED.content`,
    [row.idempotencyKey, row.conversationId, row.toolCallId, row.toolName, row.content],
  );
}
