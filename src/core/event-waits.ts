/**
 * Calls that wait for an event (`waitForEvent()` tools): the run that waits
 * instead of an activity, the event that settles the call with its payload,
 * and the deadline that settles it as `event_timeout`. Each call still gets
 * exactly one outcome: the first of the event, its deadline, or a stop of
 * its turn (then `cancelled`: it waited, nothing ran; the batch says so).
 * The results' words are in `outcomes.ts`. Pure.
 */
import { eventProblem, type DeliveredEvent, type EventWaitPlan, type RegisterEventWaitInput } from '../contract/events';
import type { BatchCall } from './batch';
import { parseCallInstanceKey } from './effect-keys';
import type { CoreState } from './state';
import { eventContent, eventTimeoutContent } from './outcomes';

/** How a call that waits for an event runs: list its wait (taking an event kept for it), then wait until its deadline. */
export interface EventWaitRun {
  kind: 'waitForEvent';
  register: RegisterEventWaitInput;
  /** How long to wait after the registration, unless the event came with it. */
  timeoutMs: number;
  /** The activity's and the timer's summary. */
  summary: string;
}

/** The run of a call that waits for `wait`, starting now. */
export function eventWaitRun(s: CoreState, call: BatchCall, wait: EventWaitPlan): EventWaitRun {
  const now = s.env.now();
  return {
    kind: 'waitForEvent',
    register: {
      conversationId: s.id,
      callKey: call.key,
      toolCallId: call.id,
      toolName: call.name,
      assistantSeq: parseCallInstanceKey(call.key)?.assistantSeq ?? -1,
      name: wait.event,
      key: wait.key,
      deadlineAt: now + wait.timeoutMs,
    },
    timeoutMs: wait.timeoutMs,
    summary: `${call.name} (${call.id}) waits for ${wait.event} ${wait.key}`,
  };
}

/**
 * An event arrived (the `event` signal, or taken at registration): every call of the open batch that waits for its
 * name and key (the one its `callKey` names, when set) is settled with it. Returns the calls it settled.
 */
export function receiveEvent(s: CoreState, event: DeliveredEvent): BatchCall[] {
  const batch = s.batch;
  if (!batch) return [];
  const settled = batch
    .all()
    .filter(
      (c) =>
        c.phase === 'running' &&
        c.wait?.event === event.name &&
        c.wait.key === event.key &&
        (event.callKey === undefined || event.callKey === c.key),
    );
  for (const call of settled) batch.settle(call.id, { kind: 'ok', content: eventContent(event) });
  if (settled.length === 0)
    s.env.log.info('An event arrived that no call of this conversation waits for; ignored', {
      conversationId: s.id,
      event: event.name,
      eventId: event.eventId,
    });
  return settled;
}

/** {@link receiveEvent} for an event from outside (a raw signal may hold anything): a malformed one is logged, not taken. */
export function receiveCheckedEvent(s: CoreState, event: unknown): boolean {
  const e = event as Partial<DeliveredEvent> | null;
  const problem =
    typeof e !== 'object' || e === null
      ? 'it is not an object'
      : typeof e.eventId !== 'string' || e.eventId.length === 0 || [...e.eventId].length > 200
        ? 'its eventId is not a string of 1 to 200 characters'
        : typeof e.sentAt !== 'string'
          ? 'its sentAt is not a time'
          : e.callKey !== undefined && typeof e.callKey !== 'string'
            ? 'its callKey is not a string'
            : eventProblem(e);
  if (problem) {
    s.env.log.warn('An event signal was refused', { conversationId: s.id, problem });
    return false;
  }
  return receiveEvent(s, e as DeliveredEvent).length > 0;
}

/** Whether the call still waits for its event. */
export function waitsForEvent(call: BatchCall): boolean {
  return call.phase === 'running' && call.wait !== undefined;
}

/** The call's deadline passed without its event: it settles as `event_timeout`. Returns true when it did. */
export function eventWaitTimedOut(s: CoreState, call: BatchCall): boolean {
  if (!waitsForEvent(call) || !s.batch?.all().includes(call)) return false;
  return s.batch.settle(call.id, { kind: 'event_timeout', content: eventTimeoutContent(call.wait!) });
}
