/**
 * Notifications in PostgreSQL: an outbox (`notification_outbox`) whose rows
 * are written in the transaction of the change they announce, and each
 * row's deliveries to the webhook endpoints that want it
 * (`notification_deliveries`), which the workers' dispatchers
 * (`src/notifications/`) claim, send and record. Migration 24 makes the
 * tables, the triggers that write `call.waiting`, `call.decided`,
 * `call.timed_out` and `call.cancelled`, and `enqueue_notification`, which
 * {@link enqueueNotification} calls for the events activities announce.
 *
 * Why an outbox and not an activity that posts: an activity would need new
 * workflow commands (and a patch) at each change, and could announce a
 * change whose transaction then failed; a row written by the change's own
 * transaction exists exactly when the change does, survives any crash, and
 * is delivered at least once from there.
 */
import type { Pool, PoolClient } from 'pg';
import {
  NOTIFICATION_TYPES,
  type NotificationDelivery,
  type NotificationEvent,
  type NotificationStatus,
  type NotificationType,
} from '../contract/notifications';
import type { AgentTables } from './schema';

/** The NOTIFY channel `enqueue_notification` wakes dispatchers on; the payload is the schema's name. */
export const NOTIFICATION_CHANNEL = 'agent_notifications';

/** The keys of an event's body that `enqueue_notification` writes itself. */
const ENVELOPE_KEYS = ['id', 'type', 'createdAt', 'conversationId', 'rootConversationId', 'call'];

/** An event to write with {@link enqueueNotification}. */
export interface NotificationInput {
  type: NotificationType;
  conversationId: string;
  /**
   * The call it is about: its details (tool, arguments, requester, rule) are added from the list of waiting calls and
   * the transcript, and its events are delivered in the order they were written.
   */
  callKey?: string;
  /**
   * More fields of the body, beside the envelope; not id, type, createdAt, conversationId, rootConversationId, call.
   * A `call.escalated` event carries the step in `escalation` (an object; docs/webhook-payload.schema.json).
   */
  payload?: Record<string, unknown>;
}

/**
 * Writes a notification: a row of the outbox and one delivery per endpoint
 * that wants its type, and wakes the dispatchers when the transaction
 * commits. Call it with the client of the transaction that records the
 * change it announces, so both commit or neither. Returns the event's id, or
 * undefined when no endpoint wants the type (nothing is written).
 *
 * Takes the conversation's lock to the end of the transaction (events of a
 * conversation are numbered in commit order). Throws a `TypeError` for a
 * type that is not one of `NOTIFICATION_TYPES`, a `call.escalated` without
 * its call or step, or a payload that sets a field of the envelope.
 */
export async function enqueueNotification(
  db: Pool | PoolClient,
  tables: AgentTables,
  event: NotificationInput,
): Promise<string | undefined> {
  if (!NOTIFICATION_TYPES.includes(event.type))
    throw new TypeError(
      `enqueueNotification: "${String(event.type)}" is not a notification type (${NOTIFICATION_TYPES.join(', ')}); add a new one to NOTIFICATION_TYPES and docs/webhook-payload.schema.json first.`,
    );
  if (event.type === 'call.escalated' && (event.callKey === undefined || event.payload?.escalation === undefined))
    throw new TypeError(
      'enqueueNotification: a call.escalated event names its call (callKey) and carries the step in payload.escalation.',
    );
  const reserved = Object.keys(event.payload ?? {}).filter((k) => ENVELOPE_KEYS.includes(k));
  if (reserved.length > 0)
    throw new TypeError(
      `enqueueNotification: the payload may not set ${reserved.join(', ')}: the event's envelope (${ENVELOPE_KEYS.join(', ')}) is written from its type, conversation and call key.`,
    );
  const { rows } = await db.query<{ event_id: string | null }>(
    `SELECT ${tables.quotedSchema}.enqueue_notification($1, $2, $3, NULL, $4::jsonb) AS event_id`,
    [event.type, event.conversationId, event.callKey ?? null, JSON.stringify(event.payload ?? {})],
  );
  return rows[0]?.event_id ?? undefined;
}

/**
 * Registers endpoints, or says they are still served: events written from now on get a delivery for each endpoint
 * that wants their type (`events`, all when absent).
 */
export async function registerEndpoints(
  db: Pool,
  tables: AgentTables,
  endpoints: readonly { name: string; events?: readonly string[] }[],
): Promise<void> {
  if (endpoints.length === 0) return;
  await db.query(
    `INSERT INTO ${tables.notificationEndpoints} (name, events)
     SELECT e ->> 'name', CASE WHEN e ? 'events' THEN ARRAY(SELECT jsonb_array_elements_text(e -> 'events')) END
       FROM jsonb_array_elements($1::jsonb) AS e
     ON CONFLICT (name) DO UPDATE SET events = EXCLUDED.events, last_seen_at = now()`,
    [JSON.stringify(endpoints.map((e) => ({ name: e.name, ...(e.events ? { events: e.events } : {}) })))],
  );
}

/** An event claimed for delivery to one endpoint. */
export interface ClaimedDelivery {
  eventId: string;
  /** Its attempts, this one included: the claim's token (a later claim or a resend changes it). */
  attempts: number;
  payload: NotificationEvent;
}

/**
 * Claims up to `limit` events for `endpoint`: each the oldest undelivered event of its call (or conversation) whose
 * attempt is due, none another dispatcher holds. A claim counts an attempt and holds the event for `leaseMs`: a
 * dispatcher that dies while it sends leaves it to another once the lease ends. Later events of a claimed call wait
 * until it is delivered, so every call's events are delivered in order, however many dispatchers run.
 */
export async function claimDeliveries(
  db: Pool,
  tables: AgentTables,
  endpoint: string,
  limit: number,
  leaseMs: number,
): Promise<ClaimedDelivery[]> {
  const { rows } = await db.query<{ event_id: string; attempts: number; payload: NotificationEvent }>(
    `WITH heads AS (
       SELECT d.event_id FROM ${tables.notificationDeliveries} d
        WHERE d.endpoint = $1 AND d.delivered_at IS NULL AND d.next_attempt_at <= now()
          AND NOT EXISTS (SELECT 1 FROM ${tables.notificationDeliveries} e
                           WHERE e.endpoint = d.endpoint AND e.order_key = d.order_key AND e.delivered_at IS NULL
                             AND e.event_seq < d.event_seq)
        ORDER BY d.event_seq
        LIMIT $2
        FOR UPDATE SKIP LOCKED)
     UPDATE ${tables.notificationDeliveries} d
        SET attempts = d.attempts + 1, last_attempt_at = now(), next_attempt_at = now() + $3 * interval '1 millisecond'
       FROM heads, ${tables.notificationOutbox} o
      WHERE d.endpoint = $1 AND d.event_id = heads.event_id AND o.event_id = d.event_id
      RETURNING d.event_id, d.attempts, o.payload`,
    [endpoint, limit, leaseMs],
  );
  return rows.map((r) => ({ eventId: r.event_id, attempts: r.attempts, payload: r.payload }));
}

/** How a claimed delivery ended. */
export type DeliveryOutcome =
  | { delivered: true; status: number }
  | {
      delivered: false;
      status?: number;
      error: string;
      /** When to try again. */
      retryInMs: number;
      /** Whether it counts as failing from now on (the dispatcher's number of attempts is reached). */
      failing: boolean;
    };

/**
 * Records how a claimed delivery ended, unless the claim is stale (another dispatcher claimed it again after its
 * lease, or it was resent): returns false then, and the newer claim decides.
 */
export async function recordDelivery(
  db: Pool,
  tables: AgentTables,
  endpoint: string,
  claim: Pick<ClaimedDelivery, 'eventId' | 'attempts'>,
  outcome: DeliveryOutcome,
): Promise<boolean> {
  const result = outcome.delivered
    ? await db.query(
        `UPDATE ${tables.notificationDeliveries}
            SET delivered_at = now(), last_status = $4, last_error = NULL, failing_since = NULL
          WHERE event_id = $1 AND endpoint = $2 AND attempts = $3 AND delivered_at IS NULL`,
        [claim.eventId, endpoint, claim.attempts, outcome.status],
      )
    : await db.query(
        `UPDATE ${tables.notificationDeliveries}
            SET next_attempt_at = now() + $4 * interval '1 millisecond', last_status = $5, last_error = $6,
                failing_since = CASE WHEN $7 THEN coalesce(failing_since, now()) END
          WHERE event_id = $1 AND endpoint = $2 AND attempts = $3 AND delivered_at IS NULL`,
        [
          claim.eventId,
          endpoint,
          claim.attempts,
          Math.max(0, Math.round(outcome.retryInMs)),
          outcome.status ?? null,
          outcome.error.slice(0, 1000),
          outcome.failing,
        ],
      );
  return (result.rowCount ?? 0) > 0;
}

/** Ends a claim without an attempt (a dispatcher stopping mid-send): the event is due again at once. */
export async function releaseClaim(
  db: Pool,
  tables: AgentTables,
  endpoint: string,
  claim: Pick<ClaimedDelivery, 'eventId' | 'attempts'>,
): Promise<void> {
  await db.query(
    `UPDATE ${tables.notificationDeliveries} SET attempts = attempts - 1, next_attempt_at = now()
      WHERE event_id = $1 AND endpoint = $2 AND attempts = $3 AND delivered_at IS NULL`,
    [claim.eventId, endpoint, claim.attempts],
  );
}

/** Narrows {@link readNotifications}. */
export interface NotificationFilter {
  /** `pending` (undelivered, failing or not; the default), `failing`, or `delivered` (most recent first). */
  status?: NotificationStatus;
  /** At most this many (default 100). */
  limit?: number;
  /** Only this event's deliveries. */
  eventId?: string;
}

/** The deliveries of events, by status: undelivered oldest first, delivered most recent first. */
export async function readNotifications(
  db: Pool,
  tables: AgentTables,
  filter: NotificationFilter = {},
): Promise<NotificationDelivery[]> {
  const status = filter.status ?? 'pending';
  const { rows } = await db.query<DeliveryRow>(
    `SELECT o.event_id, o.type, o.conversation_id, o.call_key, o.created_at, d.endpoint, d.attempts, d.next_attempt_at,
            d.last_attempt_at, d.delivered_at, d.last_status, d.last_error, d.failing_since, e.last_seen_at
       FROM ${tables.notificationDeliveries} d
       JOIN ${tables.notificationOutbox} o ON o.event_id = d.event_id
       LEFT JOIN ${tables.notificationEndpoints} e ON e.name = d.endpoint
      WHERE ($1::text IS NULL OR d.event_id = $1)
        AND CASE $2::text WHEN 'delivered' THEN d.delivered_at IS NOT NULL
                          WHEN 'failing' THEN d.delivered_at IS NULL AND d.failing_since IS NOT NULL
                          ELSE d.delivered_at IS NULL END
      ORDER BY CASE WHEN $2::text = 'delivered' THEN d.delivered_at END DESC, d.event_seq, d.endpoint
      LIMIT $3`,
    [filter.eventId ?? null, status, filter.limit ?? 100],
  );
  return rows.map(fromDeliveryRow);
}

interface DeliveryRow {
  event_id: string;
  type: NotificationType;
  conversation_id: string;
  call_key: string | null;
  created_at: Date;
  endpoint: string;
  attempts: number;
  next_attempt_at: Date;
  last_attempt_at: Date | null;
  delivered_at: Date | null;
  last_status: number | null;
  last_error: string | null;
  failing_since: Date | null;
  last_seen_at: Date | null;
}

function fromDeliveryRow(r: DeliveryRow): NotificationDelivery {
  const status: NotificationStatus = r.delivered_at ? 'delivered' : r.failing_since ? 'failing' : 'pending';
  return {
    eventId: r.event_id,
    type: r.type,
    conversationId: r.conversation_id,
    callKey: r.call_key,
    createdAt: r.created_at,
    endpoint: r.endpoint,
    status,
    attempts: r.attempts,
    nextAttemptAt: r.delivered_at ? null : r.next_attempt_at,
    lastAttemptAt: r.last_attempt_at,
    deliveredAt: r.delivered_at,
    lastStatus: r.last_status,
    lastError: r.last_error,
    failingSince: r.failing_since,
    endpointLastSeenAt: r.last_seen_at,
  };
}

/**
 * Sends an event again: its deliveries (to `endpoint`, or to every endpoint it was for) become due at once, with
 * their attempts counted from zero, delivered or not; it keeps its id. Returns the endpoints, none when the event (or
 * its delivery to `endpoint`) is unknown or was pruned.
 */
export async function resendNotification(
  db: Pool,
  tables: AgentTables,
  eventId: string,
  endpoint?: string,
): Promise<string[]> {
  const { rows } = await db.query<{ endpoint: string }>(
    `UPDATE ${tables.notificationDeliveries}
        SET delivered_at = NULL, attempts = 0, next_attempt_at = now(), failing_since = NULL
      WHERE event_id = $1 AND ($2::text IS NULL OR endpoint = $2)
      RETURNING endpoint`,
    [eventId, endpoint ?? null],
  );
  if (rows.length > 0) await db.query('SELECT pg_notify($1, $2)', [NOTIFICATION_CHANNEL, tables.schema]);
  return rows.map((r) => r.endpoint).sort();
}

/** Undelivered events by endpoint: how many, how many failing, and when the oldest was written. */
export interface UndeliveredCount {
  endpoint: string;
  pending: number;
  failing: number;
  oldestAt: Date | null;
}

/** {@link UndeliveredCount} of each endpoint that has undelivered events. */
export async function countUndelivered(db: Pool, tables: AgentTables): Promise<UndeliveredCount[]> {
  const { rows } = await db.query<{ endpoint: string; pending: number; failing: number; oldest_at: Date | null }>(
    `SELECT d.endpoint, count(*)::int AS pending, count(d.failing_since)::int AS failing, min(o.created_at) AS oldest_at
       FROM ${tables.notificationDeliveries} d JOIN ${tables.notificationOutbox} o ON o.event_id = d.event_id
      WHERE d.delivered_at IS NULL GROUP BY d.endpoint`,
  );
  return rows.map((r) => ({ endpoint: r.endpoint, pending: r.pending, failing: r.failing, oldestAt: r.oldest_at }));
}

/**
 * Deletes events older than `keepMs` (at most `limit` at a time) that nothing still waits to receive: every delivery
 * done, or undelivered only to endpoints no worker has served for 7 days. Returns how many it deleted.
 */
export async function pruneNotifications(db: Pool, tables: AgentTables, keepMs: number, limit = 1000): Promise<number> {
  const result = await db.query(
    `DELETE FROM ${tables.notificationOutbox} o
      WHERE o.id IN (
        SELECT x.id FROM ${tables.notificationOutbox} x
         WHERE x.created_at < now() - $1 * interval '1 millisecond'
           AND NOT EXISTS (SELECT 1 FROM ${tables.notificationDeliveries} d
                             JOIN ${tables.notificationEndpoints} e ON e.name = d.endpoint
                            WHERE d.event_id = x.event_id AND d.delivered_at IS NULL
                              AND e.last_seen_at > now() - interval '7 days')
         ORDER BY x.id LIMIT $2)`,
    [keepMs, limit],
  );
  return result.rowCount ?? 0;
}
