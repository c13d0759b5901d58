/**
 * Migration 26's SQL: events and the calls waiting for them
 * (src/contract/events.ts, docs/waiting-for-events.md).
 *
 * - `event_waits` lists the calls of `waitForEvent()` tools now waiting, by event name and key: a sent event is
 *   routed to the conversations it lists (a signal to each). A row is written when the call starts waiting
 *   (`registerEventWait`) and deleted by a trigger when the call's tool message is written, however the call ended
 *   (the event, its deadline, a cancel, a new message), as approvers' list is.
 * - `agent_events` keeps every event sent: to whom it was delivered (`delivered_to`, the waits it was routed to), or,
 *   when no call waited for it, until `expires_at`, for the first wait that matches (`taken_by` then names it).
 *   Sending an event and registering a wait take the same lock (by name and key), so an event is either routed to a
 *   wait or kept for it, never missed between the two.
 */
import type { AgentTables } from './schema';

/** The SQL of migration 26 for the tables `t`. */
export function eventWaitsSql(t: AgentTables): string {
  const s = t.quotedSchema;
  return `
      CREATE TABLE ${t.eventWaits} (
        conversation_id text NOT NULL,
        call_key text NOT NULL,
        tool_call_id text NOT NULL,
        assistant_seq integer NOT NULL,
        tool_name text NOT NULL,
        name text NOT NULL,
        key text NOT NULL,
        deadline_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (conversation_id, call_key)
      );
      CREATE INDEX event_waits_by_event ON ${t.eventWaits} (name, key);
      CREATE TABLE ${t.agentEvents} (
        event_id text PRIMARY KEY,
        name text NOT NULL,
        key text NOT NULL,
        payload jsonb,
        sent_by text,
        sent_at timestamptz NOT NULL DEFAULT now(),
        -- [{"conversationId", "callKey"}] the event was routed to; null while it is kept for a wait to come.
        delivered_to jsonb,
        -- Kept events: until when, and the wait that took it ({"conversationId", "callKey"}).
        expires_at timestamptz,
        taken_by jsonb
      );
      CREATE INDEX agent_events_kept ON ${t.agentEvents} (name, key, sent_at)
        WHERE delivered_to IS NULL AND taken_by IS NULL;
      CREATE INDEX agent_events_by_time ON ${t.agentEvents} (sent_at);
      CREATE INDEX agent_events_by_event ON ${t.agentEvents} (name, key);

      -- A waiting call's tool message ends its wait, whatever it says.
      CREATE FUNCTION ${s}.event_wait_answered() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM ${t.eventWaits}
         WHERE conversation_id = NEW.conversation_id AND tool_call_id = NEW.message ->> 'tool_call_id'
           AND assistant_seq < NEW.seq;
        RETURN NULL;
      END $$;
      CREATE TRIGGER event_wait_answered AFTER INSERT OR UPDATE ON ${t.conversationMessages}
        FOR EACH ROW WHEN (NEW.role = 'tool') EXECUTE FUNCTION ${s}.event_wait_answered();
  `;
}

/**
 * The lock `sendEvent` and `registerEventWait` take for an event's name and key, to the end of their transaction. A
 * space parts them (a name holds none, `EVENT_NAME_PATTERN`); PostgreSQL text cannot hold `chr(0)`.
 */
export const EVENT_LOCK_SQL = `SELECT pg_advisory_xact_lock(hashtext('durable-agent-worker.events:' || $1 || ' ' || $2))`;
