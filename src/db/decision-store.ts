/** Decisions on tool calls, as recorded for people in `approval_decisions` (and the grants they give). */
import type { Pool, PoolClient } from 'pg';
import type { DecisionRecord } from '../contract/activities';
import { parseJsonOrText, toStorableValue } from '../contract/text';
import { recordGrant } from './grants';
import type { AgentTables } from './schema';

/**
 * Records a decision for people; the same decision id twice is stored once. Text PostgreSQL cannot store is replaced
 * with U+FFFD. `runId` is the workflow run that applied it:
 * - a run displaced by a later one (a late activity of a run abandoned by a reset) records nothing;
 * - a decision a reset superseded (`insertMessages`) that the new run applies again (Temporal reapplies signals and
 *   updates after the reset point) is the new run's, live again;
 * - it supersedes the decisions other runs recorded on the same calls: a call decided again after a reset (to a
 *   point where it waited, nothing reapplied) has the new run's decision only.
 */
export async function recordDecision(
  pool: Pool | PoolClient,
  tables: AgentTables,
  decision: DecisionRecord,
  runId?: string,
): Promise<void> {
  const record = toStorableValue(decision).value;
  await pool.query(
    `WITH displaced AS (
       SELECT 1 FROM ${tables.transcriptRuns} r WHERE r.conversation_id = $1 AND r.run_id = $14 AND r.displaced_at IS NOT NULL),
     other_runs AS (
       UPDATE ${tables.approvalDecisions} d SET superseded_at = now()
        WHERE d.conversation_id = $1 AND d.decision_id <> $2 AND $14::text IS NOT NULL AND d.run_id IS DISTINCT FROM $14
          AND d.call_keys && $9::text[] AND d.superseded_at IS NULL AND NOT EXISTS (SELECT 1 FROM displaced))
     INSERT INTO ${tables.approvalDecisions}
            (conversation_id, decision_id, decision, tool_call_ids, reason, decided_by, decided_at, via, call_keys, authenticated,
             arguments, model_arguments, response, run_id, rule, decider_groups, call_still_waits, signed_decision, grant_id, grant_amount)
     SELECT $1, $2, $3, $4, $5, $6, to_timestamp($7 / 1000.0), $8, $9, $10, $11::jsonb, $12::jsonb, $13, $14, $15, $16, $17, $18::jsonb, $19, $20
      WHERE NOT EXISTS (SELECT 1 FROM displaced)
     ON CONFLICT (conversation_id, decision_id) DO UPDATE SET
       decision = EXCLUDED.decision, tool_call_ids = EXCLUDED.tool_call_ids, reason = EXCLUDED.reason,
       decided_by = EXCLUDED.decided_by, decided_at = EXCLUDED.decided_at, via = EXCLUDED.via, call_keys = EXCLUDED.call_keys,
       authenticated = EXCLUDED.authenticated, arguments = EXCLUDED.arguments, model_arguments = EXCLUDED.model_arguments,
       response = EXCLUDED.response, run_id = EXCLUDED.run_id, rule = EXCLUDED.rule, decider_groups = EXCLUDED.decider_groups,
       call_still_waits = EXCLUDED.call_still_waits, signed_decision = EXCLUDED.signed_decision, grant_id = EXCLUDED.grant_id,
       grant_amount = EXCLUDED.grant_amount, superseded_at = NULL
      WHERE ${tables.approvalDecisions}.superseded_at IS NOT NULL`,
    [
      record.conversationId,
      record.decisionId,
      record.decision,
      record.toolCallIds,
      record.reason ?? null,
      record.decidedBy ?? null,
      record.decidedAt,
      record.via,
      record.callKeys ?? null,
      record.authenticated ?? null,
      record.arguments ?? null,
      jsonOrNull(record.modelArguments),
      record.response ?? null,
      runId ?? null,
      record.rule ?? null,
      record.deciderGroups ?? null,
      record.callStillWaits === true,
      record.signedDecision === undefined ? null : JSON.stringify(record.signedDecision),
      record.grantId ?? null,
      record.grantAmount ?? null,
    ],
  );
  if (record.grant) await recordGrant(pool, tables, record.conversationId, record.grant);
}

/**
 * The model's arguments as JSON for a jsonb column: as they are when they parse, else as a JSON string (a model may
 * send text that is not JSON).
 */
function jsonOrNull(text: string | undefined): string | null {
  return text === undefined ? null : JSON.stringify(parseJsonOrText(text));
}
