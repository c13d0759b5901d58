/**
 * Sending an event (docs/waiting-for-events.md, "Sending events"): under the
 * lock of its name and key (the one `registerEventWait` takes, so an event is
 * either routed to a wait or kept for it, never missed between the two), it
 * is recorded in `agent_events` with the waits it is routed to, or kept for
 * the first wait to come; after the commit each waiting conversation gets the
 * `event` signal. The event id makes a retry safe: an id recorded already is
 * delivered again to where it was routed, and nothing new is written. Used by
 * `AgentClient.sendEvent`, and through it by `POST /v1/events` and the CLI.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { Pool, PoolClient } from 'pg';
import { AgentError } from '../common/errors';
import { logger } from '../common/logger';
import { SENT_BY_MAX_CHARS } from '../contract/limits';
import { EVENT_LIMITS, eventProblem, type DeliveredEvent, type EventInput } from '../contract/events';
import { describeUnstorableText, toStorableValue } from '../contract/text';
import { eventSignal } from '../contract/workflow';
import { EVENT_LOCK_SQL } from './event-migration';
import type { AgentTables } from './schema';
import { inTransaction } from './transaction';

/** The longest event id, in characters (Unicode code points). */
export const EVENT_ID_MAX_CHARS = 200;

/** A waiting call an event was routed to. */
export interface EventTarget {
  conversationId: string;
  /** The call's effect key. */
  callKey: string;
}

/** An event to send: its name, key and payload, its id (a fresh UUID when absent), and who sends it. */
export interface EventToSend extends EventInput {
  /** Who sends it, as your authentication knows them (the API's token subject); recorded and delivered with it. */
  sentBy?: string;
}

/** Options of {@link sendEvent}. */
export interface SendEventOptions {
  /**
   * How long the event is kept for the first wait to come when no call waits for it now, in milliseconds: 0 (not kept)
   * to `EVENT_LIMITS.maxKeepMs` (30 days); default `EVENT_LIMITS.defaultKeepMs` (24 hours).
   */
  keepMs?: number;
}

/** What became of a sent event. A retry with the same event id answers the same. */
export interface SentEvent {
  eventId: string;
  /** When it was first sent (ISO 8601). */
  sentAt: string;
  /** The waiting calls it was routed to, each signalled in its conversation; empty when none waited. */
  deliveredTo: EventTarget[];
  /** True when no call waited for it and it is kept for the first wait that matches. */
  kept: boolean;
  /** Until when it is kept (ISO 8601), when kept. */
  keptUntil?: string;
  /** Targets whose conversation no longer runs (ended, or deleted), so they got no signal. */
  notRunning?: EventTarget[];
}

/** Signals one conversation (workflow id = conversation id) with an event. */
export type EventSignaller = (conversationId: string, event: DeliveredEvent) => Promise<void>;

/** The event cannot be sent as given (name, key, payload, id, keepMs, sender); nothing was recorded. */
export class InvalidEventError extends AgentError {}

/** The event id was recorded before for another name, key or payload; nothing was sent. */
export class EventIdConflictError extends AgentError {}

/**
 * The event is recorded and routed, but signalling some of its conversations failed (Temporal did not answer, or
 * refused). Sending it again with the same event id delivers it: a retry is safe.
 */
export class EventDeliveryError extends AgentError {
  constructor(
    message: string,
    /** The event as recorded. */
    readonly sent: SentEvent,
    /** The targets whose signal failed. */
    readonly failed: EventTarget[],
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** One row of `agent_events`, as read here. */
export interface EventRow {
  event_id: string;
  name: string;
  key: string;
  payload: unknown;
  sent_by: string | null;
  sent_at: Date;
  delivered_to: EventTarget[] | null;
  expires_at: Date | null;
}

const COLUMNS = 'event_id, name, key, payload, sent_by, sent_at, delivered_to, expires_at';

/**
 * Sends an event: records it and routes it to the calls waiting for its name and key (or keeps it for the first wait
 * to come), then signals each waiting conversation through `temporal` (a Temporal `Client`, or a function that
 * signals). A conversation that no longer runs is skipped and listed in `notRunning`.
 *
 * Throws {@link InvalidEventError} for an event that cannot be sent (the message names the limit),
 * {@link EventIdConflictError} for an id sent before with another name, key or payload, and
 * {@link EventDeliveryError} when the event is recorded but a signal failed (send it again with the same id).
 */
export async function sendEvent(
  pool: Pool,
  temporal: Pick<Client, 'workflow'> | EventSignaller,
  tables: AgentTables,
  input: EventToSend,
  options: SendEventOptions = {},
): Promise<SentEvent> {
  const event = checkedEvent(input, options);
  let row: EventRow;
  try {
    row = await recordEvent(pool, tables, event);
  } catch (err) {
    // The same new id sent at once under another name or key (another lock): the loser reads the winner's row.
    if ((err as { code?: string }).code !== '23505') throw err;
    row = await recordEvent(pool, tables, event);
  }
  const signal: EventSignaller =
    typeof temporal === 'function'
      ? temporal
      : (conversationId, delivered) => temporal.workflow.getHandle(conversationId).signal(eventSignal, delivered);
  return deliver(row, signal);
}

/** An event checked and made ready to record. */
interface CheckedEvent {
  eventId: string;
  name: string;
  key: string;
  /** As JSON, with what PostgreSQL cannot store replaced; null for no payload. */
  payloadJson: string | null;
  sentBy: string | null;
  keepMs: number;
}

/** `input` checked (throws {@link InvalidEventError} saying what is wrong and the limit). */
function checkedEvent(input: EventToSend, options: SendEventOptions): CheckedEvent {
  const refuse = (problem: string): never => {
    throw new InvalidEventError(`${problem} Nothing was sent.`);
  };
  const keepMs = options.keepMs ?? EVENT_LIMITS.defaultKeepMs;
  if (!Number.isInteger(keepMs) || keepMs < 0 || keepMs > EVENT_LIMITS.maxKeepMs)
    refuse(
      `keepMs must be a whole number of milliseconds from 0 (not kept) to ${EVENT_LIMITS.maxKeepMs} (30 days); got ${String(keepMs)}.`,
    );
  const eventId = input.eventId ?? randomUUID();
  if (typeof eventId !== 'string' || eventId.length === 0 || [...eventId].length > EVENT_ID_MAX_CHARS)
    refuse(`An event id is 1 to ${EVENT_ID_MAX_CHARS} characters; got ${JSON.stringify(eventId)?.slice(0, 60)}.`);
  const badId = describeUnstorableText("The event's id", eventId);
  if (badId) refuse(`${badId}.`);
  let payloadJson: string | undefined;
  try {
    payloadJson = JSON.stringify(input.payload);
  } catch (err) {
    refuse(`The event's payload must be JSON: ${(err as Error).message}.`);
  }
  // Text PostgreSQL cannot store becomes U+FFFD, as in tool results: the payload is the waiting call's result.
  const payload = payloadJson === undefined ? null : toStorableValue(JSON.parse(payloadJson) as unknown).value;
  const problem = eventProblem({ name: input.name, key: input.key, payload });
  if (problem) refuse(problem);
  const sentBy = input.sentBy ?? null;
  if (sentBy !== null) {
    if (typeof sentBy !== 'string' || sentBy.length === 0 || sentBy.length > SENT_BY_MAX_CHARS)
      refuse(`sentBy is 1 to ${SENT_BY_MAX_CHARS} characters.`);
    const badSender = describeUnstorableText('sentBy', sentBy);
    if (badSender) refuse(`${badSender}.`);
  }
  return {
    eventId,
    name: input.name,
    key: input.key,
    payloadJson: payload === null ? null : JSON.stringify(payload),
    sentBy,
    keepMs,
  };
}

/**
 * In one transaction under the event's lock: the row of an id recorded already (a retry; another name, key or payload
 * is refused), else a new row routed to the calls that wait now, or kept.
 */
function recordEvent(pool: Pool, tables: AgentTables, event: CheckedEvent): Promise<EventRow> {
  return inTransaction(pool, async (db) => {
    await db.query(EVENT_LOCK_SQL, [event.name, event.key]);
    const found = await db.query<EventRow & { same_payload: boolean }>(
      `SELECT ${COLUMNS}, payload IS NOT DISTINCT FROM $2::jsonb AS same_payload
         FROM ${tables.agentEvents} WHERE event_id = $1`,
      [event.eventId, event.payloadJson],
    );
    const recorded = found.rows[0];
    if (recorded) {
      refuseAnother(recorded, event);
      return recorded;
    }
    const targets = await waitingCalls(db, tables, event);
    const kept = targets.length === 0 && event.keepMs > 0;
    const inserted = await db.query<EventRow>(
      `INSERT INTO ${tables.agentEvents} (event_id, name, key, payload, sent_by, delivered_to, expires_at)
       VALUES ($1, $2, $3, $4::jsonb, $5, $6::jsonb, now() + $7::double precision * interval '1 millisecond')
       RETURNING ${COLUMNS}`,
      [
        event.eventId,
        event.name,
        event.key,
        event.payloadJson,
        event.sentBy,
        kept ? null : JSON.stringify(targets),
        kept ? event.keepMs : null,
      ],
    );
    return inserted.rows[0];
  });
}

/**
 * The calls waiting for the event's name and key before their deadline, oldest first, leaving out those an event was
 * routed to (or taken by) already: a wait takes one event, and a second one is kept for the next wait.
 */
async function waitingCalls(db: PoolClient, tables: AgentTables, event: CheckedEvent): Promise<EventTarget[]> {
  const call = `jsonb_build_object('conversationId', w.conversation_id, 'callKey', w.call_key)`;
  const { rows } = await db.query<EventTarget>(
    `SELECT w.conversation_id AS "conversationId", w.call_key AS "callKey"
       FROM ${tables.eventWaits} w
      WHERE w.name = $1 AND w.key = $2 AND w.deadline_at > now()
        AND NOT EXISTS (
          SELECT 1 FROM ${tables.agentEvents} e
           WHERE e.name = w.name AND e.key = w.key
             AND (e.delivered_to @> jsonb_build_array(${call}) OR e.taken_by = ${call}))
      ORDER BY w.created_at, w.conversation_id, w.call_key`,
    [event.name, event.key],
  );
  return rows;
}

/** Throws {@link EventIdConflictError} when `recorded` is another event than `event` under the same id. */
function refuseAnother(recorded: EventRow & { same_payload: boolean }, event: CheckedEvent): void {
  const differences = [
    ...(recorded.name === event.name ? [] : [`the name "${recorded.name}" (not "${event.name}")`]),
    ...(recorded.key === event.key ? [] : [`the key "${recorded.key}" (not "${event.key}")`]),
    ...(recorded.same_payload ? [] : ['another payload']),
  ];
  if (differences.length === 0) return;
  throw new EventIdConflictError(
    `Event ${event.eventId} was sent at ${recorded.sent_at.toISOString()} with ${differences.join(', ')}: an event id names one event. ` +
      'Send a different event with another eventId (or none, for a fresh one); to retry the first one, send it as it was. Nothing was sent.',
  );
}

/** Signals each target of `row` after the commit; the outcome as {@link SentEvent}. */
async function deliver(row: EventRow, signal: EventSignaller): Promise<SentEvent> {
  const targets = row.delivered_to ?? [];
  const kept = row.delivered_to === null;
  const sent: SentEvent = {
    eventId: row.event_id,
    sentAt: row.sent_at.toISOString(),
    deliveredTo: targets,
    kept,
    ...(kept && row.expires_at ? { keptUntil: row.expires_at.toISOString() } : {}),
  };
  const outcomes = await Promise.allSettled(
    targets.map((target) => signal(target.conversationId, deliveredEvent(row, target.callKey))),
  );
  const notRunning = targets.filter((_, i) => {
    const outcome = outcomes[i];
    return outcome.status === 'rejected' && outcome.reason instanceof WorkflowNotFoundError;
  });
  if (notRunning.length > 0) {
    sent.notRunning = notRunning;
    logger.info({ eventId: row.event_id, notRunning }, 'event routed to calls whose conversation no longer runs');
  }
  const failures = targets
    .map((target, i) => ({ target, outcome: outcomes[i] }))
    .filter(
      (f): f is { target: EventTarget; outcome: PromiseRejectedResult } =>
        f.outcome.status === 'rejected' && !(f.outcome.reason instanceof WorkflowNotFoundError),
    );
  if (failures.length > 0) {
    const first = failures[0].outcome.reason as Error;
    const which = failures.map((f) => f.target.conversationId).join(', ');
    throw new EventDeliveryError(
      `Event ${row.event_id} is recorded and routed to ${targets.length} waiting call${targets.length === 1 ? '' : 's'}, ` +
        `but signalling conversation${failures.length === 1 ? '' : 's'} ${which} failed: ${first?.message ?? String(first)}. ` +
        `Send it again with the same eventId (${row.event_id}) to deliver it: a retry is safe, no call gets it twice.`,
      sent,
      failures.map((f) => f.target),
      { cause: first },
    );
  }
  return sent;
}

/** The `event` signal's argument for the call `callKey`, from a row of `agent_events`. */
export function deliveredEvent(
  row: Pick<EventRow, 'event_id' | 'name' | 'key' | 'payload' | 'sent_by' | 'sent_at'>,
  callKey: string,
): DeliveredEvent {
  return {
    eventId: row.event_id,
    name: row.name,
    key: row.key,
    ...(row.payload !== null ? { payload: row.payload } : {}),
    ...(row.sent_by !== null ? { sentBy: row.sent_by } : {}),
    sentAt: row.sent_at.toISOString(),
    callKey,
  };
}
