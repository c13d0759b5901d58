/**
 * What leaves a conversation's live transcript, and why: messages a run
 * abandoned by a Temporal reset wrote past the reset point, and answers a
 * regenerated turn replaced (`superseded_messages`, moved there by
 * `insertMessages`, `transcript-store.ts`); and the runs that wrote each
 * transcript (`transcript_runs`), by which a displaced run's late write is
 * refused.
 */
import type { Pool, PoolClient } from 'pg';
import type { ChatMessage } from '../contract/messages';
import { prepared } from './prepared';
import type { AgentTables } from './schema';

/** Who writes, and what a write takes out of the live transcript first (`insertMessages`, `transcript-store.ts`). */
export interface WriteScope {
  /**
   * The workflow run that writes: a run's first write displaces the runs before it, and a displaced run's
   * writes are refused. Absent for writes from outside a workflow (they neither displace nor are refused).
   */
  runId?: string;
  /** The live messages from this seq on are superseded, for `supersedeReason` (default `regenerate`). */
  supersedeFrom?: number;
  /** Why `supersedeFrom` supersedes: a regenerated turn, or a turn stopped while its model call ran. */
  supersedeReason?: 'regenerate' | 'stopped';
  /**
   * A model call's write of its own final answer (one message, at the seq the workflow gave it). It stores
   * nothing when the run stopped that call first (the run's fence is at that seq: {@link fenceStoppedAnswer}),
   * and it serializes with the stop on the run's row, so an answer written before the stop is superseded by it.
   */
  ownAnswer?: boolean;
}

/**
 * A turn stopped while its model call ran, which was asked to write its final answer at `seq`: from now on that
 * write stores nothing (the run's fence, `transcript_runs.stopped_answer_seq`). It waits for a write of the answer
 * under way, so the supersede that follows it sees the answer, if it was written. A run with no row yet (no write)
 * has nothing to fence.
 */
export async function fenceStoppedAnswer(
  db: Pool | PoolClient,
  tables: AgentTables,
  conversationId: string,
  runId: string,
  seq: number,
): Promise<void> {
  await db.query(
    prepared(`UPDATE ${tables.transcriptRuns} SET stopped_answer_seq = $3 WHERE conversation_id = $1 AND run_id = $2`, [
      conversationId,
      runId,
      seq,
    ]),
  );
}

/**
 * A write from a workflow run that a later run displaced: a late activity of
 * a run abandoned by a reset. Nothing of it is stored.
 */
export class DisplacedRunError extends Error {
  constructor(conversationId: string, runId: string) {
    super(
      `Run ${runId} of conversation ${conversationId} was displaced by a later run (a reset): its writes are not kept.`,
    );
    this.name = 'DisplacedRunError';
  }
}

/** A message taken out of a conversation's live transcript (`insertMessages`, `transcript-store.ts`). */
export interface SupersededMessage {
  seq: number;
  message: ChatMessage;
  createdAt: Date;
  /**
   * `reset`: a run abandoned by a reset wrote it; `regenerate`: the answer a regenerated turn replaced;
   * `stopped`: a final answer its model call wrote while the turn was being stopped (the turn did not take it).
   */
  reason: 'reset' | 'regenerate' | 'stopped';
  supersededAt: Date;
  /** The workflow run whose write took it out, when a run's write did. */
  supersededByRun?: string;
}

/** The messages taken out of a conversation's live transcript, oldest first, at most `limit` (default 1,000). */
export async function readSuperseded(
  pool: Pool,
  tables: AgentTables,
  conversationId: string,
  limit = 1000,
): Promise<SupersededMessage[]> {
  const { rows } = await pool.query<{
    seq: number;
    message: ChatMessage;
    created_at: Date;
    reason: 'reset' | 'regenerate' | 'stopped';
    superseded_at: Date;
    superseded_by_run: string | null;
  }>(
    `SELECT seq, message, created_at, reason, superseded_at, superseded_by_run FROM ${tables.supersededMessages}
      WHERE conversation_id = $1 ORDER BY id LIMIT $2`,
    [conversationId, limit],
  );
  return rows.map((r) => ({
    seq: r.seq,
    message: r.message,
    createdAt: r.created_at,
    reason: r.reason,
    supersededAt: r.superseded_at,
    ...(r.superseded_by_run ? { supersededByRun: r.superseded_by_run } : {}),
  }));
}
