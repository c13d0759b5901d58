/**
 * `turn.ended_after_wait`: the end of a turn that waited for a person,
 * written to the notification outbox once per turn, with what the people
 * decided on each call that waited and the start of the turn's answer.
 */
import type { Pool } from 'pg';
import type { TurnEndNotice } from '../contract/turn-ends';
import { enqueueNotification } from './outbox';
import type { AgentTables } from './schema';
import { inTransaction } from './transaction';

/** How much of the turn's answer the event carries (characters); the whole answer is in the transcript. */
export const ANSWER_PREVIEW_CHARS = 1000;

/**
 * Writes the `turn.ended_after_wait` event of `notice`'s turn, unless it is written already (a retried activity):
 * the check and the write hold the conversation's lock, which every event of the conversation takes. Returns the
 * event's id; undefined when it was written before or no endpoint wants the type.
 */
export async function announceTurnEnd(
  pool: Pool,
  tables: AgentTables,
  notice: TurnEndNotice,
): Promise<string | undefined> {
  return inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
      `durable-agent-worker.approvals:${notice.conversationId}`,
    ]);
    const written = await client.query(
      `SELECT 1 FROM ${tables.notificationOutbox}
        WHERE conversation_id = $1 AND type = 'turn.ended_after_wait' AND payload -> 'turn' ->> 'id' = $2 LIMIT 1`,
      [notice.conversationId, notice.turnId],
    );
    if ((written.rowCount ?? 0) > 0) return undefined;
    const keys = notice.waited.map((c) => c.callKey);
    const { rows: decisions } = await client.query<{
      call_keys: string[];
      decision_id: string;
      decision: string;
      decided_by: string | null;
      decided_at: Date;
      via: string;
    }>(
      `SELECT call_keys, decision_id, decision, decided_by, decided_at, via FROM ${tables.approvalDecisions}
        WHERE conversation_id = $1 AND call_keys && $2::text[] ORDER BY decided_at, decision_id`,
      [notice.conversationId, keys],
    );
    const answer = notice.answerSeq === undefined ? undefined : await answerPreview(pool, tables, notice);
    const calls = notice.waited.map((call) => ({
      ...call,
      decisions: decisions
        .filter((d) => d.call_keys.includes(call.callKey))
        .map((d) => ({
          decisionId: d.decision_id,
          decision: d.decision,
          ...(d.decided_by !== null ? { decidedBy: d.decided_by } : {}),
          decidedAt: d.decided_at.toISOString(),
          via: d.via,
        })),
    }));
    return enqueueNotification(client, tables, {
      type: 'turn.ended_after_wait',
      conversationId: notice.conversationId,
      payload: {
        turn: {
          id: notice.turnId,
          number: notice.turn,
          outcome: notice.outcome,
          ...(notice.error !== undefined ? { error: notice.error } : {}),
          ...(notice.requestedBy ? { requestedBy: notice.requestedBy } : {}),
          ...(answer ? { answer } : {}),
          endedAt: new Date(notice.endedAt).toISOString(),
          calls,
        },
      },
    });
  });
}

/** The start of the turn's answer, as stored (its seq, and whether the text goes on past the preview). */
async function answerPreview(
  pool: Pool,
  tables: AgentTables,
  notice: TurnEndNotice,
): Promise<{ seq: number; text: string; truncated: boolean } | undefined> {
  const { rows } = await pool.query<{ content: string | null; length: number | null }>(
    `SELECT left(message ->> 'content', $3) AS content, length(message ->> 'content') AS length
       FROM ${tables.conversationMessages} WHERE conversation_id = $1 AND seq = $2`,
    [notice.conversationId, notice.answerSeq, ANSWER_PREVIEW_CHARS],
  );
  const row = rows[0];
  if (row?.content == null) return undefined;
  return { seq: notice.answerSeq!, text: row.content, truncated: (row.length ?? 0) > ANSWER_PREVIEW_CHARS };
}
