/**
 * The decisions recorded on a conversation's calls (`approval_decisions`),
 * by call key: how a chat stream opened after a call was decided still
 * shows that the call waited and how it was decided (`src/api/ui-turn.ts`).
 */
import type { Pool } from 'pg';
import type { DecisionKind } from '../contract/decisions';
import type { AgentTables } from './schema';

/** A person's decision on one call, as recorded (the first per call key). */
export interface CallDecisionRecord {
  decision: DecisionKind;
  reason?: string;
  decidedBy?: string;
}

/**
 * The decisions recorded on the conversation's calls named by `callKeys` (all its calls when unset), by call key;
 * without those a Temporal reset superseded (made by the abandoned run on calls the new run may ask for again).
 */
export async function readCallDecisions(
  pool: Pool,
  tables: AgentTables,
  conversationId: string,
  callKeys?: readonly string[],
): Promise<Map<string, CallDecisionRecord>> {
  const decided = new Map<string, CallDecisionRecord>();
  if (callKeys?.length === 0) return decided;
  const { rows } = await pool.query<{
    call_keys: string[];
    decision: DecisionKind;
    reason: string | null;
    decided_by: string | null;
  }>(
    `SELECT call_keys, decision, reason, decided_by FROM ${tables.approvalDecisions}
      WHERE conversation_id = $1 AND superseded_at IS NULL AND NOT call_still_waits AND ($2::text[] IS NULL OR call_keys && $2::text[])
      ORDER BY decided_at, decision_id`,
    [conversationId, callKeys ?? null],
  );
  for (const row of rows)
    for (const key of row.call_keys ?? [])
      if ((callKeys === undefined || callKeys.includes(key)) && !decided.has(key))
        decided.set(key, {
          decision: row.decision,
          ...(row.reason ? { reason: row.reason } : {}),
          ...(row.decided_by ? { decidedBy: row.decided_by } : {}),
        });
  return decided;
}
