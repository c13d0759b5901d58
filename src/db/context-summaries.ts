/**
 * Summaries a model was sent in place of earlier messages (`model.contextOverflow: 'summarize'`), by conversation
 * and the seq range they replace. The transcript keeps every message; a summary only changes what later model
 * calls are sent. Each summary names the model call that wrote it (its response key), so that call reports what
 * the summary cost once, whichever of its attempts wrote it.
 *
 * A summary request that spent tokens and left no summary (the model wrote nothing: its answer was cut by its
 * token limit) is kept as a row with an empty summary and a digest of its own, only so that what it cost is
 * reported and counted like a summary's; it is never sent.
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
      WHERE conversation_id = $1 AND from_seq = $2 AND through_seq < $3 AND summary <> ''
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

/**
 * The key of a summary request's spend in the budget's ledger (`budget_spend.response_key`): the conversation, the
 * range and the digest, which name one row here whichever call reports it. The hold made before the request uses
 * the key of the summary it is asked to write.
 */
export function summaryLedgerKey(
  s: Pick<StoredSummary, 'conversationId' | 'fromSeq' | 'throughSeq' | 'digest'>,
): string {
  return `${s.conversationId}/summary/${s.fromSeq}-${s.throughSeq}/${s.digest}`;
}

/**
 * Gives `responseKey` the conversation's summaries whose writing call has no stored answer: that call failed for
 * good after writing them (its request was refused, the budget stopped it), so it never reported what they cost.
 * The model calls of one conversation run one at a time, so such a call is over; the next call that reports
 * summaries reports these, once (they are its own from then on). Returns them.
 */
export async function adoptUnreported(
  pool: Pool,
  tables: AgentTables,
  conversationId: string,
  responseKey: string,
): Promise<StoredSummary[]> {
  const { rows } = await pool.query<SummaryRow>(
    `UPDATE ${tables.contextSummaries} s SET response_key = $2
      WHERE s.conversation_id = $1 AND s.response_key <> $2
        AND NOT EXISTS (SELECT 1 FROM ${tables.modelResponses} r WHERE r.response_key = s.response_key)
      RETURNING s.*`,
    [conversationId, responseKey],
  );
  return rows.map(fromRow);
}
