/**
 * What a chat page's history is read from (`src/api/ui-history.ts`): the
 * live transcript with the key each row was written by reference under (an
 * assistant message's model response), and the decisions people made on the
 * conversation's calls, by call key. Two queries, one per table.
 */
import type { Pool } from 'pg';
import type { ChatMessage } from '../contract/messages';
import { readCallDecisions, type CallDecisionRecord } from './call-decisions';
import type { AgentTables } from './schema';

/** A stored message, with the key its body was written under by reference (a model response's, a tool result's). */
export interface HistoryRow {
  seq: number;
  message: ChatMessage;
  refKey?: string;
}

/** A conversation's live transcript and the decisions recorded on its calls (the first one per call key). */
export async function readHistorySource(
  pool: Pool,
  tables: AgentTables,
  conversationId: string,
): Promise<{ rows: HistoryRow[]; decisions: Map<string, CallDecisionRecord> }> {
  const [messages, decisions] = await Promise.all([
    pool.query<{ seq: number; message: ChatMessage; ref_key: string | null }>(
      `SELECT seq, message, ref_key FROM ${tables.conversationMessages} WHERE conversation_id = $1 ORDER BY seq`,
      [conversationId],
    ),
    readCallDecisions(pool, tables, conversationId),
  ]);
  return {
    rows: messages.rows.map((r) => ({ seq: r.seq, message: r.message, ...(r.ref_key ? { refKey: r.ref_key } : {}) })),
    decisions,
  };
}
