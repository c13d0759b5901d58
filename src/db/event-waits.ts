/**
 * A call of a `waitForEvent()` tool starts waiting (`registerEventWait`):
 * under the lock of the event's name and key, it takes an event delivered
 * to it already (a retried activity, a run reset to before the wait), or the
 * oldest event kept for a wait to come, or else lists itself in
 * `event_waits`, where a sent event finds it (`src/db/events.ts`).
 */
import type { Pool } from 'pg';
import type { RegisterEventWaitInput, RegisterEventWaitResult } from '../contract/events';
import { deliveredEvent, type EventRow } from './events';
import { EVENT_LOCK_SQL } from './event-migration';
import type { AgentTables } from './schema';
import { inTransaction } from './transaction';

/** One row of `agent_events`, as read here. */
type EventRead = Pick<EventRow, 'event_id' | 'name' | 'key' | 'payload' | 'sent_by' | 'sent_at'>;

/** Registers the wait of `input`'s call; returns the event it takes at once, if any (see the module's comment). */
export async function registerEventWait(
  pool: Pool,
  tables: AgentTables,
  input: RegisterEventWaitInput,
): Promise<RegisterEventWaitResult> {
  return inTransaction(pool, async (client) => {
    await client.query(EVENT_LOCK_SQL, [input.name, input.key]);
    const me = JSON.stringify([{ conversationId: input.conversationId, callKey: input.callKey }]);
    const columns = 'event_id, name, key, payload, sent_by, sent_at';
    const already = await client.query<EventRead>(
      `SELECT ${columns} FROM ${tables.agentEvents}
        WHERE name = $1 AND key = $2 AND (delivered_to @> $3::jsonb OR taken_by @> $4::jsonb)
        ORDER BY sent_at, event_id LIMIT 1`,
      [input.name, input.key, me, JSON.stringify({ conversationId: input.conversationId, callKey: input.callKey })],
    );
    if (already.rows[0]) return { event: deliveredEvent(already.rows[0], input.callKey) };
    const kept = await client.query<EventRead>(
      `UPDATE ${tables.agentEvents} SET taken_by = $3::jsonb
        WHERE event_id = (
          SELECT event_id FROM ${tables.agentEvents}
           WHERE name = $1 AND key = $2 AND delivered_to IS NULL AND taken_by IS NULL AND expires_at > now()
           ORDER BY sent_at, event_id LIMIT 1)
        RETURNING ${columns}`,
      [input.name, input.key, JSON.stringify({ conversationId: input.conversationId, callKey: input.callKey })],
    );
    if (kept.rows[0]) return { event: deliveredEvent(kept.rows[0], input.callKey) };
    await client.query(
      `INSERT INTO ${tables.eventWaits}
         (conversation_id, call_key, tool_call_id, assistant_seq, tool_name, name, key, deadline_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, to_timestamp($8 / 1000.0))
       ON CONFLICT (conversation_id, call_key) DO UPDATE SET deadline_at = EXCLUDED.deadline_at`,
      [
        input.conversationId,
        input.callKey,
        input.toolCallId,
        input.assistantSeq,
        input.toolName,
        input.name,
        input.key,
        input.deadlineAt,
      ],
    );
    return {};
  });
}
