/**
 * The SQL of migration 24 (notifications' outbox, endpoints and deliveries, and the triggers that write events),
 * apart from the list of migrations in `migrations.ts` for its size.
 */
import type { AgentTables } from './schema';

/**
 * Migration 24 (`src/db/outbox.ts` reads and writes what it makes). Each notification is a row of the outbox, written
 * by a trigger (or `enqueue_notification`) in the transaction of the change it announces, with one delivery row per
 * webhook endpoint that wants it; the workers' dispatchers deliver them (`src/notifications/`).
 *
 * - `notification_endpoints` holds the endpoints the running workers deliver to (a dispatcher registers its own when
 *   it starts and every minute after): an event is written only when some endpoint wants its type, and an endpoint
 *   no worker has served for 7 days gets no new events.
 * - Events of one conversation are numbered (`id`) in the order their transactions commit: `enqueue_notification`
 *   takes the conversation's lock (the one the waiting-call list and its triggers take) before it numbers one, and
 *   the lock is held to the end of the transaction. A dispatcher that delivers the events of a call (`order_key`) in
 *   `id` order therefore never sees a later event of a call before an earlier one has committed.
 * - The triggers on `conversation_messages` and `approval_decisions` are named so that they fire before the
 *   `pending_approval_*` triggers of migration 9 (PostgreSQL fires a table's triggers in name order), which delete
 *   the waiting call's row: they read the call's tool, requester and rule from it.
 */
export function notificationOutboxSql(t: AgentTables): string {
  const s = t.quotedSchema;
  /** Endpoints that want events of the type in `type`, among those a worker served in the last 7 days. */
  const wanting = (type: string) =>
    `SELECT e.name FROM ${t.notificationEndpoints} e
      WHERE e.last_seen_at > now() - interval '7 days' AND (e.events IS NULL OR ${type} = ANY (e.events))`;
  return `
      CREATE TABLE ${t.notificationOutbox} (
        id bigserial PRIMARY KEY,
        event_id text NOT NULL UNIQUE DEFAULT gen_random_uuid()::text,
        type text NOT NULL,
        conversation_id text NOT NULL,
        call_key text,
        order_key text NOT NULL,
        payload jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX notification_outbox_by_age ON ${t.notificationOutbox} (created_at);
      CREATE INDEX notification_outbox_by_conversation ON ${t.notificationOutbox} (conversation_id);
      CREATE TABLE ${t.notificationEndpoints} (
        name text PRIMARY KEY,
        events text[],
        registered_at timestamptz NOT NULL DEFAULT now(),
        last_seen_at timestamptz NOT NULL DEFAULT now()
      );
      -- One row per event and endpoint, written with the event. event_seq and order_key are the event's id and
      -- order key, so a dispatcher finds each call's oldest undelivered event from this table alone.
      CREATE TABLE ${t.notificationDeliveries} (
        event_id text NOT NULL REFERENCES ${t.notificationOutbox} (event_id) ON DELETE CASCADE,
        endpoint text NOT NULL,
        event_seq bigint NOT NULL,
        order_key text NOT NULL,
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        last_attempt_at timestamptz,
        delivered_at timestamptz,
        last_status integer,
        last_error text,
        failing_since timestamptz,
        PRIMARY KEY (event_id, endpoint)
      );
      CREATE INDEX notification_deliveries_due ON ${t.notificationDeliveries} (endpoint, next_attempt_at)
        WHERE delivered_at IS NULL;
      CREATE INDEX notification_deliveries_in_order ON ${t.notificationDeliveries} (endpoint, order_key, event_seq)
        WHERE delivered_at IS NULL;

      -- Text as JSON when it parses (a call's arguments as the model sent them), else as a JSON string.
      CREATE FUNCTION ${s}.notification_json(value text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
      BEGIN
        RETURN value::jsonb;
      EXCEPTION WHEN others THEN
        RETURN to_jsonb(value);
      END $$;
      -- A time as ISO 8601 text in UTC, as JSON carries it.
      CREATE FUNCTION ${s}.notification_time(ts timestamptz) RETURNS text LANGUAGE sql STABLE AS $$
        SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
      $$;
      -- An object without its keys whose value is null (nested values are kept as they are).
      CREATE FUNCTION ${s}.notification_compact(value jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
        SELECT coalesce(jsonb_object_agg(key, v), '{}'::jsonb) FROM jsonb_each(value) AS e (key, v) WHERE v <> 'null'::jsonb
      $$;

      -- The call an event is about: from its row in pending_approvals while it is listed, and from the assistant
      -- message that asked for it (its tool and arguments), found by the call key's seq and index.
      CREATE FUNCTION ${s}.notification_call(conv text, key text, call_id text) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
      DECLARE
        listed boolean := false;
        v_tool_call_id text; v_tool_name text; v_assistant_seq integer; v_call_index integer;
        v_requested_at timestamptz; v_requested_by text[]; v_agent_path text[]; v_decisions text[]; v_policy jsonb;
        v_tool_call jsonb;
        v_call jsonb;
      BEGIN
        SELECT p.tool_call_id, p.tool_name, p.assistant_seq, p.call_index, p.requested_at, p.requested_by, p.agent_path,
               p.decisions, p.policy
          INTO v_tool_call_id, v_tool_name, v_assistant_seq, v_call_index, v_requested_at, v_requested_by, v_agent_path,
               v_decisions, v_policy
          FROM ${t.pendingApprovals} p WHERE p.conversation_id = conv AND p.call_key = key;
        listed := FOUND;
        IF NOT listed THEN
          v_assistant_seq := substring(key FROM '/msg-([0-9]+)/call-[0-9]+$')::int;
          v_call_index := substring(key FROM '/msg-[0-9]+/call-([0-9]+)$')::int;
        END IF;
        IF v_assistant_seq IS NOT NULL AND v_call_index IS NOT NULL THEN
          SELECT m.message -> 'tool_calls' -> v_call_index INTO v_tool_call
            FROM ${t.conversationMessages} m WHERE m.conversation_id = conv AND m.seq = v_assistant_seq;
        END IF;
        v_call := jsonb_build_object(
          'callKey', key,
          'toolCallId', coalesce(v_tool_call_id, v_tool_call ->> 'id', call_id),
          'toolName', coalesce(v_tool_name, v_tool_call -> 'function' ->> 'name'));
        IF v_tool_call IS NOT NULL THEN
          v_call := v_call || jsonb_build_object('arguments', ${s}.notification_json(v_tool_call -> 'function' ->> 'arguments'));
        END IF;
        IF listed THEN
          v_call := v_call || jsonb_build_object(
            'requestedAt', ${s}.notification_time(v_requested_at),
            'requestedBy', to_jsonb(v_requested_by),
            'agentPath', to_jsonb(coalesce(v_agent_path, '{}'::text[])));
          IF v_decisions IS NOT NULL THEN v_call := v_call || jsonb_build_object('decisions', to_jsonb(v_decisions)); END IF;
          IF v_policy IS NOT NULL THEN
            v_call := v_call || jsonb_build_object('policy', v_policy || jsonb_build_object('approvedBy', (
              SELECT coalesce(jsonb_agg(d.decided_by ORDER BY d.decided_at), '[]'::jsonb) FROM ${t.approvalDecisions} d
               WHERE d.conversation_id = conv AND key = ANY (d.call_keys) AND d.call_still_waits
                 AND d.superseded_at IS NULL AND d.decided_by IS NOT NULL)));
          END IF;
        END IF;
        RETURN v_call;
      END $$;

      -- Writes one event (its payload: id, type, createdAt, conversationId, rootConversationId, call when a call key is
      -- given, and the fields of extra) with a delivery per endpoint that wants it, and wakes the dispatchers. Writes
      -- nothing and returns null when no endpoint wants the type. Returns the event's id.
      CREATE FUNCTION ${s}.enqueue_notification(event_type text, conv text, key text, call_id text, extra jsonb)
        RETURNS text LANGUAGE plpgsql AS $$
      DECLARE
        new_id text := gen_random_uuid()::text;
        new_seq bigint;
        root text;
        body jsonb;
      BEGIN
        IF NOT EXISTS (${wanting('event_type')}) THEN
          RETURN NULL;
        END IF;
        PERFORM pg_advisory_xact_lock(hashtext('durable-agent-worker.approvals:' || conv));
        SELECT p.root_conversation_id INTO root FROM ${t.pendingApprovals} p
         WHERE p.conversation_id = conv AND p.root_conversation_id IS NOT NULL
         ORDER BY p.call_key = key DESC NULLS LAST LIMIT 1;
        body := coalesce(extra, '{}'::jsonb) || jsonb_build_object(
          'id', new_id, 'type', event_type, 'createdAt', ${s}.notification_time(now()),
          'conversationId', conv, 'rootConversationId', coalesce(root, conv));
        IF key IS NOT NULL THEN
          body := body || jsonb_build_object('call', ${s}.notification_call(conv, key, call_id));
        END IF;
        INSERT INTO ${t.notificationOutbox} (event_id, type, conversation_id, call_key, order_key, payload)
          VALUES (new_id, event_type, conv, key, coalesce(key, conv), body)
          RETURNING id INTO new_seq;
        INSERT INTO ${t.notificationDeliveries} (event_id, endpoint, event_seq, order_key)
          SELECT new_id, w.name, new_seq, coalesce(key, conv) FROM (${wanting('event_type')}) AS w;
        PERFORM pg_notify('agent_notifications', '${t.schema}');
        RETURN new_id;
      END $$;

      -- call.waiting: a call is listed for approvers (a retried listing updates its row, and says nothing again).
      CREATE FUNCTION ${s}.notification_call_waiting() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM ${s}.enqueue_notification('call.waiting', NEW.conversation_id, NEW.call_key, NEW.tool_call_id, NULL);
        RETURN NULL;
      END $$;
      CREATE TRIGGER notification_call_waiting AFTER INSERT ON ${t.pendingApprovals}
        FOR EACH ROW EXECUTE FUNCTION ${s}.notification_call_waiting();

      -- call.decided: a person's decision is recorded (one event per call it names; via signal or update), or a
      -- decision a reset had superseded is applied again by the new run. What decided a call without a person (an
      -- approval policy's rule, a standing grant) is not announced: those calls never waited.
      CREATE FUNCTION ${s}.notification_call_decided() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        i integer;
        decision jsonb := ${s}.notification_compact(jsonb_build_object(
          'decisionId', NEW.decision_id, 'decision', NEW.decision, 'decidedBy', NEW.decided_by,
          'decidedAt', ${s}.notification_time(NEW.decided_at), 'via', NEW.via, 'authenticated', NEW.authenticated,
          'reason', NEW.reason, 'rule', NEW.rule, 'deciderGroups', to_jsonb(NEW.decider_groups),
          'callStillWaits', NEW.call_still_waits, 'arguments', NEW.arguments, 'response', NEW.response));
      BEGIN
        FOR i IN 1 .. coalesce(array_length(NEW.call_keys, 1), 0) LOOP
          PERFORM ${s}.enqueue_notification('call.decided', NEW.conversation_id, NEW.call_keys[i], NEW.tool_call_ids[i],
            jsonb_build_object('decision', decision));
        END LOOP;
        RETURN NULL;
      END $$;
      CREATE TRIGGER notification_call_decided AFTER INSERT ON ${t.approvalDecisions}
        FOR EACH ROW WHEN (NEW.call_keys IS NOT NULL AND NEW.superseded_at IS NULL AND NEW.via IN ('signal', 'update'))
        EXECUTE FUNCTION ${s}.notification_call_decided();
      CREATE TRIGGER notification_call_decided_again AFTER UPDATE OF superseded_at ON ${t.approvalDecisions}
        FOR EACH ROW WHEN (OLD.superseded_at IS NOT NULL AND NEW.superseded_at IS NULL AND NEW.call_keys IS NOT NULL
                           AND NEW.via IN ('signal', 'update'))
        EXECUTE FUNCTION ${s}.notification_call_decided();

      -- call.timed_out and call.cancelled: a tool message answers a listed call with {"kind": "approval_timeout"}, or
      -- with "cancelled" or "interrupted" (its turn was stopped, or the conversation ended, while it waited). Any
      -- other answer of a listed call follows its decision, which was announced.
      CREATE FUNCTION ${s}.notification_call_settled() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        content text := NEW.message ->> 'content';
        outcome jsonb;
        listed record;
      BEGIN
        IF content IS NULL OR length(content) > 4000 OR position('"kind"' IN content) = 0
           OR NOT EXISTS (SELECT 1 FROM ${t.notificationEndpoints}) THEN
          RETURN NULL;
        END IF;
        FOR listed IN SELECT p.call_key, p.tool_call_id FROM ${t.pendingApprovals} p
                       WHERE p.conversation_id = NEW.conversation_id AND p.tool_call_id = NEW.message ->> 'tool_call_id'
                         AND p.assistant_seq < NEW.seq ORDER BY p.call_key LOOP
          outcome := ${s}.notification_json(content);
          IF jsonb_typeof(outcome) <> 'object' THEN
            RETURN NULL;
          END IF;
          IF outcome ->> 'kind' = 'approval_timeout' THEN
            PERFORM ${s}.enqueue_notification('call.timed_out', NEW.conversation_id, listed.call_key, listed.tool_call_id,
              jsonb_build_object('outcome', ${s}.notification_compact(jsonb_build_object(
                'kind', 'approval_timeout', 'message', outcome -> 'error'))));
          ELSIF outcome ->> 'kind' IN ('cancelled', 'interrupted') THEN
            PERFORM ${s}.enqueue_notification('call.cancelled', NEW.conversation_id, listed.call_key, listed.tool_call_id,
              jsonb_build_object('outcome', ${s}.notification_compact(jsonb_build_object(
                'kind', outcome ->> 'kind', 'message', outcome -> 'error'))));
          END IF;
        END LOOP;
        RETURN NULL;
      END $$;
      CREATE TRIGGER notification_call_settled AFTER INSERT OR UPDATE ON ${t.conversationMessages}
        FOR EACH ROW WHEN (NEW.role = 'tool') EXECUTE FUNCTION ${s}.notification_call_settled();
  `;
}
