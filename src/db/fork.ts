/**
 * A fork's transcript, copied in PostgreSQL: the source's live messages up to
 * the fork point ({@link planFork}), and a result for every call the copy
 * leaves open, in one transaction, under the fork's conversation id.
 */
import type { Pool, PoolClient } from 'pg';
import type { ChatMessage } from '../contract/messages';
import { forkedCallContent, ForkTargetExistsError, planFork, type ForkAt, type SourceRow } from './fork-point';
import type { AgentTables } from './schema';
import { inTransaction } from './transaction';

/**
 * The effect key of the call at `index` of the assistant message at `assistantSeq` (the core's `callInstanceKey`,
 * passed in: this layer does not import the core).
 */
export type CallKeyOf = (conversationId: string, assistantSeq: number, index: number) => string;

/** What {@link copyForFork} copied: what the fork's workflow starts from. */
export interface ForkCopy {
  /** The source seq the fork keeps up to (its `forkedFrom.seq`). */
  forkSeq: number;
  /** Messages in the fork: its next message's seq. */
  nextSeq: number;
  /** The agent speaking at the fork point, when the transcript names one. */
  agent: string | undefined;
  /** User turns in the copy. */
  turns: number;
  /** The calls the copy answered: with the source's result (`ran`), or with the fork's outcome (`not_run`). */
  answered: { toolCallId: string; how: 'ran' | 'not_run' }[];
}

/**
 * Copies the live transcript of `sourceId` up to `at` into `targetId`, in one
 * transaction. A call of the last copied assistant message without a result
 * in the copy gets the source's result when the source has one (the call ran
 * there: its effect is done, and the fork never runs it again), else
 * {@link forkedCallContent}. Throws {@link ForkTargetExistsError} when
 * `targetId` has messages already, `ForkPointError` for a fork point that
 * names no place; either way nothing is written.
 */
export async function copyForFork(
  pool: Pool,
  tables: AgentTables,
  sourceId: string,
  targetId: string,
  at: ForkAt,
  callKey: CallKeyOf,
): Promise<ForkCopy> {
  if (sourceId === targetId)
    throw new ForkTargetExistsError(`A fork needs a conversation id of its own, not its source's (${sourceId}).`);
  return inTransaction(pool, async (tx) => {
    // Two forks into the same id at once: the second waits here, then finds the first one's rows.
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`durable-agent-worker.fork:${targetId}`]);
    const taken = await tx.query(`SELECT 1 FROM ${tables.conversationMessages} WHERE conversation_id = $1 LIMIT 1`, [
      targetId,
    ]);
    if ((taken.rowCount ?? 0) > 0) {
      throw new ForkTargetExistsError(
        `Conversation ${targetId} has messages already; a fork starts a new conversation. Choose another id, or leave it out for a new one.`,
      );
    }
    const { rows } = await tx.query<{ seq: number; message: ChatMessage; created_at: Date; ref_key: string | null }>(
      `SELECT seq, message, created_at, ref_key FROM ${tables.conversationMessages} WHERE conversation_id = $1 ORDER BY seq`,
      [sourceId],
    );
    const plan = planFork(
      sourceId,
      rows.map((r): SourceRow => ({ seq: r.seq, message: r.message, createdAt: r.created_at, refKey: r.ref_key })),
      at,
    );
    const results = await ranResults(
      tx,
      tables,
      plan.open.map((call) => callKey(sourceId, call.assistantSeq, call.index)),
    );
    const answered: ForkCopy['answered'] = [];
    const extra = plan.open.map((call) => {
      const ran = results.get(callKey(sourceId, call.assistantSeq, call.index));
      answered.push({ toolCallId: call.toolCallId, how: ran === undefined ? 'not_run' : 'ran' });
      const message: ChatMessage = {
        role: 'tool',
        tool_call_id: call.toolCallId,
        content: ran?.content ?? forkedCallContent(sourceId, plan.forkSeq),
      };
      return { message, createdAt: undefined, refKey: ran?.storedUnder };
    });
    const written = [...plan.rows, ...extra].map((row, seq) => ({
      seq,
      role: row.message.role,
      message: row.message,
      created_at: row.createdAt ?? null,
      // Where a copied result came from: the source's effect key, so the fork's row names the effect that ran.
      ref_key: row.refKey ?? null,
    }));
    await tx.query(
      `INSERT INTO ${tables.conversationMessages} (conversation_id, seq, role, message, created_at, ref_key)
       SELECT $1, r.seq, r.role, r.message, coalesce(r.created_at, now()), r.ref_key
         FROM jsonb_to_recordset($2::jsonb) AS r (seq int, role text, message jsonb, created_at timestamptz, ref_key text)`,
      [targetId, JSON.stringify(written)],
    );
    return { forkSeq: plan.forkSeq, nextSeq: written.length, agent: plan.agent, turns: plan.turns, answered };
  });
}

/**
 * The results the source stored under the open calls' keys, by key: a call
 * that ran and whose batch is not closed yet (another call of it still waits)
 * has its result in `tool_results`, under its effect key (the call instance
 * key, or that key with a suffix naming what ran). The suffix match reads
 * `tool_results` whole; it runs only for a fork point inside a batch with
 * calls left open, which is rare.
 */
async function ranResults(
  tx: PoolClient,
  tables: AgentTables,
  keys: readonly string[],
): Promise<Map<string, { content: string; storedUnder: string }>> {
  if (keys.length === 0) return new Map();
  const { rows } = await tx.query<{ key: string; content: string; stored_under: string }>(
    `SELECT k.key, r.content, r.idempotency_key AS stored_under
       FROM unnest($1::text[]) AS k (key)
       JOIN LATERAL (
         SELECT content, idempotency_key FROM ${tables.toolResults}
          WHERE idempotency_key = k.key OR starts_with(idempotency_key, k.key || '/')
          ORDER BY created_at LIMIT 1) r ON true`,
    [keys],
  );
  return new Map(rows.map((r) => [r.key, { content: r.content, storedUnder: r.stored_under }]));
}

/**
 * Takes back a fork's copy whose workflow could not be started (its id was
 * taken meanwhile), so the fork may be asked for again. Only rows no workflow
 * wrote: called before any run of the fork started.
 */
export async function removeForkCopy(pool: Pool, tables: AgentTables, targetId: string): Promise<void> {
  await pool.query(`DELETE FROM ${tables.conversationMessages} WHERE conversation_id = $1`, [targetId]);
}
