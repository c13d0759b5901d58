/**
 * Standing grants as people read them (`approval_grants`): the grant an approval gave, and its revocation. What each
 * grant covered is in `approval_decisions` (`via = 'grant'`).
 */
import type { Pool, PoolClient } from 'pg';
import type { GrantRevocationRecord } from '../contract/activities';
import type { StandingGrant } from '../contract/grants';
import type { AgentTables } from './schema';

/** Records a standing grant an approval gave (`approval_grants`); the same grant twice is stored once. */
export async function recordGrant(
  pool: Pool | PoolClient,
  tables: AgentTables,
  conversationId: string,
  grant: StandingGrant,
): Promise<void> {
  await pool.query(
    `INSERT INTO ${tables.approvalGrants}
            (conversation_id, grant_id, tool_name, rule, granted_by, authenticated, call_key, granted_at, expires_at,
             max_calls, amount_argument, max_amount)
     VALUES ($1, $2, $3, $4, $5, $6, $7, to_timestamp($8 / 1000.0), to_timestamp($9 / 1000.0), $10, $11, $12)
     ON CONFLICT (conversation_id, grant_id) DO NOTHING`,
    [
      conversationId,
      grant.id,
      grant.toolName,
      grant.rule ?? null,
      grant.grantedBy ?? null,
      grant.authenticated ?? null,
      grant.callKey,
      grant.grantedAt,
      grant.expiresAt,
      grant.maxCalls ?? null,
      grant.amount?.argument ?? null,
      grant.amount?.total ?? null,
    ],
  );
}

/** Records that a grant was revoked; the first revocation stays. */
export async function recordGrantRevocation(
  pool: Pool,
  tables: AgentTables,
  record: GrantRevocationRecord,
): Promise<void> {
  await pool.query(
    `UPDATE ${tables.approvalGrants} SET revoked_at = to_timestamp($3 / 1000.0), revoked_by = $4, revoke_reason = $5
      WHERE conversation_id = $1 AND grant_id = $2 AND revoked_at IS NULL`,
    [record.conversationId, record.grantId, record.revokedAt, record.revokedBy ?? null, record.reason ?? null],
  );
}
