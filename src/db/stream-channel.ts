/**
 * The stream of a model's text to people: a PostgreSQL NOTIFY channel and the
 * events on it. Shared by the model activity, which publishes, and clients,
 * which listen.
 */

import type { Pool } from 'pg';
import type { AgentTables } from './schema';

/** The NOTIFY channel carrying {@link StreamEvent}s. */
export const STREAM_CHANNEL = 'agent_stream';

/** One event on {@link STREAM_CHANNEL}. */
export type StreamEvent =
  | {
      type: 'delta';
      conversationId: string;
      responseKey: string;
      attempt: number;
      /** Characters of this attempt's text before `text`. */
      offset: number;
      text: string;
    }
  | { type: 'end'; conversationId: string; responseKey: string; attempt: number; ok: boolean };

/**
 * The pieces of text still kept for the conversation's running model calls
 * (`stream_deltas`), as the events that carried them, in order: what a
 * client that reconnects replays before it follows the live events.
 */
export async function readKeptDeltas(
  pool: Pool,
  tables: Pick<AgentTables, 'streamDeltas'>,
  conversationId: string,
): Promise<StreamEvent[]> {
  const { rows } = await pool.query<{ response_key: string; attempt: number; start_offset: number; text: string }>(
    `SELECT response_key, attempt, start_offset, text FROM ${tables.streamDeltas}
      WHERE conversation_id = $1 ORDER BY created_at, response_key, attempt, start_offset`,
    [conversationId],
  );
  return rows.map((r) => ({
    type: 'delta',
    conversationId,
    responseKey: r.response_key,
    attempt: r.attempt,
    offset: r.start_offset,
    text: r.text,
  }));
}
