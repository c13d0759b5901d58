/**
 * A waiting call's escalation steps, as approvers' lists show them: each step
 * taken updates the call's row in `pending_approvals` (the groups that may
 * decide it now, how many steps were taken), once per step.
 */
import type { Pool, PoolClient } from 'pg';
import type { EscalationRecord } from '../contract/activities';
import type { AgentTables } from './schema';
import { inTransaction } from './transaction';

/**
 * Records a step of a waiting call's escalation ladder in approvers' list. A step recorded already (a retried
 * activity) or a call no longer listed changes nothing; returns whether this call recorded it. `also` runs in the
 * same transaction when it did (the step's notification).
 */
export async function recordEscalation(
  pool: Pool,
  tables: AgentTables,
  record: EscalationRecord,
  also?: (client: PoolClient) => Promise<void>,
): Promise<boolean> {
  return inTransaction(pool, async (client) => {
    const { rowCount } = await client.query(
      `UPDATE ${tables.pendingApprovals}
          SET policy = policy || jsonb_build_object('escalated', $3::int)
                      || CASE WHEN $4::jsonb IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('groups', $4::jsonb) END
        WHERE conversation_id = $1 AND call_key = $2 AND policy IS NOT NULL
          AND COALESCE((policy ->> 'escalated')::int, 0) < $3`,
      [record.conversationId, record.callKey, record.step, record.groups ? JSON.stringify(record.groups) : null],
    );
    if ((rowCount ?? 0) === 0) return false;
    await also?.(client);
    return true;
  });
}

/** What a `call.escalated` notification says about the step (its `escalation`), times as ISO 8601. */
export function escalationPayload(record: EscalationRecord): Record<string, unknown> {
  return {
    rule: record.rule,
    step: record.step,
    remind: record.remind,
    addedGroups: record.addedGroups,
    groups: record.groups ?? null,
    escalatedAt: new Date(record.escalatedAt).toISOString(),
    nextEscalationAt: record.nextEscalationAt === undefined ? null : new Date(record.nextEscalationAt).toISOString(),
    deadlineAt: new Date(record.deadlineAt).toISOString(),
  };
}
