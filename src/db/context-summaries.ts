/**
 * Summaries a model was sent in place of earlier messages (`model.contextOverflow: 'summarize'`), by conversation
 * and the seq range they replace. The transcript keeps every message; a summary only changes what later model
 * calls are sent. Each summary names the model call that wrote it (its response key), so that call reports what
 * the summary cost once, whichever of its attempts wrote it.
 */
import type { Pool } from 'pg';
import type { TokenUsage } from '../contract/turn-records';
import type { AgentTables } from './schema';

/** One stored summary. */
export interface StoredSummary {
  conversationId: string;
  fromSeq: number;
  throughSeq: number;
  /** SHA-256 of the messages summarised, as they were sent: a summary of messages since replaced does not match. */
  digest: string;
  summary: string;
  model: string;
  usage?: TokenUsage;
  costUsd?: number;
  /** The model call that wrote it. */
  responseKey: string;
}

interface SummaryRow {
  conversation_id: string;
  from_seq: number;
  through_seq: number;
  digest: string;
  summary: string;
  model: string;
  usage: TokenUsage | null;
  cost_usd: number | null;
  response_key: string;
}

function fromRow(r: SummaryRow): StoredSummary {
  return {
    conversationId: r.conversation_id,
    fromSeq: r.from_seq,
    throughSeq: r.through_seq,
    digest: r.digest,
    summary: r.summary,
    model: r.model,
    ...(r.usage ? { usage: r.usage } : {}),
    ...(r.cost_usd !== null ? { costUsd: r.cost_usd } : {}),
    responseKey: r.response_key,
  };
}

/**
 * The conversation's summaries that start at `fromSeq` and end before `beforeSeq`, the longest first (at most
 * `limit`): the candidates a model call checks against the messages it is about to send.
 */
export async function readSummaries(
  pool: Pool,
  tables: AgentTables,
  conversationId: string,
  fromSeq: number,
  beforeSeq: number,
  limit = 32,
): Promise<StoredSummary[]> {
  const { rows } = await pool.query<SummaryRow>(
    `SELECT * FROM ${tables.contextSummaries}
      WHERE conversation_id = $1 AND from_seq = $2 AND through_seq < $3
      ORDER BY through_seq DESC, created_at LIMIT $4`,
    [conversationId, fromSeq, beforeSeq, limit],
  );
  return rows.map(fromRow);
}

/**
 * Stores a summary; when one of the same range and messages is stored already (another attempt got there first),
 * that one is kept and returned, so every call sends the same text.
 */
export async function storeSummary(pool: Pool, tables: AgentTables, s: StoredSummary): Promise<StoredSummary> {
  const { rows } = await pool.query<SummaryRow>(
    `WITH inserted AS (
       INSERT INTO ${tables.contextSummaries}
         (conversation_id, from_seq, through_seq, digest, summary, model, usage, cost_usd, response_key)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT DO NOTHING RETURNING *)
     SELECT * FROM inserted
     UNION ALL
     SELECT * FROM ${tables.contextSummaries}
      WHERE conversation_id = $1 AND from_seq = $2 AND through_seq = $3 AND digest = $4
        AND NOT EXISTS (SELECT 1 FROM inserted)`,
    [
      s.conversationId,
      s.fromSeq,
      s.throughSeq,
      s.digest,
      s.summary,
      s.model,
      s.usage ? JSON.stringify(s.usage) : null,
      s.costUsd ?? null,
      s.responseKey,
    ],
  );
  return fromRow(rows[0]);
}

/** The summaries the model call `responseKey` wrote (by any of its attempts), oldest first. */
export async function summariesWrittenBy(
  pool: Pool,
  tables: AgentTables,
  responseKey: string,
): Promise<StoredSummary[]> {
  const { rows } = await pool.query<SummaryRow>(
    `SELECT * FROM ${tables.contextSummaries} WHERE response_key = $1 ORDER BY created_at, through_seq`,
    [responseKey],
  );
  return rows.map(fromRow);
}
