/**
 * The content of the tool message that settles a call, for every way a call
 * can end. Each is a JSON object the model can read, with a `kind`.
 */
import { handoffResultContent, type HandoffRecord } from '../contract/handoffs';
import type { DeliveredEvent, EventWaitPlan } from '../contract/events';

/** How a tool call ended. */
export type OutcomeKind =
  | 'ok'
  | 'tool_failed'
  | 'rejected'
  | 'approval_timeout'
  | 'cancelled'
  | 'interrupted'
  | 'effect_unknown'
  | 'repaired'
  | 'responded'
  | 'guardrail_blocked'
  | 'event_timeout';

/** Why a tool failed, for the model and for people reading the transcript. */
export type ToolFailureReason =
  | 'error'
  | 'unknown_tool'
  | 'invalid_arguments'
  | 'not_run_max_steps'
  | 'too_many_calls'
  | 'handoff_refused'
  | 'agent_too_deep';

/** Content for a call whose tool failed: retries spent, non-retryable, bad arguments or unknown tool. */
export function toolFailedContent(error: string, reason: ToolFailureReason = 'error'): string {
  return JSON.stringify({ error, kind: 'tool_failed', reason });
}

/**
 * Content for the handoff a response made: the agent that answers from now on (as the OpenAI Agents SDK words it),
 * with the checked input and input filter of a `handoff(agent, options)` (plans of older workers have neither).
 */
export function handoffContent(agent: string, record?: HandoffRecord): string {
  return handoffResultContent(agent, record);
}

/** Content for a call a person rejected. */
export function rejectedContent(reason: string | undefined): string {
  return JSON.stringify({
    error: 'A person rejected this tool call; it was not run.',
    kind: 'rejected',
    reason: reason ?? null,
  });
}

/**
 * Content for a call a person answered in the tool's place (`respond`): their text, marked as a person's answer; the
 * tool did not run.
 */
export function respondedContent(response: string, by: string | undefined): string {
  return JSON.stringify({
    kind: 'responded',
    note: 'A person answered this call in place of the tool; the tool did not run.',
    by: by ?? null,
    response,
  });
}

/** Content for a call an approval policy's rule denied: nobody was asked; it did not run. */
export function ruleDeniedContent(rule: string, reason: string | undefined): string {
  return JSON.stringify({
    error: `The approval policy's rule "${rule}" denies this tool call; it was not run and no person was asked.`,
    kind: 'rejected',
    rule,
    reason: reason ?? null,
  });
}

/** Content for a call a tool guardrail blocked: it did not run; the reason is the guardrail's. */
export function guardrailBlockedContent(guardrail: string, reason: string): string {
  return JSON.stringify({
    error: `The guardrail "${guardrail}" blocked this tool call; it was not run.`,
    kind: 'guardrail_blocked',
    guardrail,
    reason,
  });
}

/** Content for a call whose approval did not come in time. */
export function approvalTimeoutContent(): string {
  return JSON.stringify({
    error: 'No decision arrived before the approval timeout; the call was not run.',
    kind: 'approval_timeout',
  });
}

/** Content for a call that never started because its turn was cancelled or interrupted. */
export function cancelledContent(why: string): string {
  return JSON.stringify({ error: `The call was not run: ${why}.`, kind: 'cancelled', started: false });
}

/** Content for a call that was running when its turn was cancelled or interrupted: its effect is unknown. */
export function interruptedContent(why: string): string {
  return JSON.stringify({
    error: `The call was running when ${why}; whether it took effect is unknown.`,
    kind: 'interrupted',
    started: true,
  });
}

/**
 * Content for a call of a tool that is not idempotent whose run timed out or
 * whose worker was lost before it reported: it may or may not have taken
 * effect, and running it again could apply the effect twice.
 */
export function effectUnknownContent(why: string): string {
  return JSON.stringify({
    error:
      `The call started but did not report back (${why}); it may or may not have taken effect. ` +
      'Do not call it again before checking whether it did.',
    kind: 'effect_unknown',
    started: true,
  });
}

/** Content synthesized by the transcript repair for a call that had no result. */
export function repairedContent(): string {
  return JSON.stringify({
    error: 'No result was recorded for this tool call; the worker repaired the transcript before calling the model.',
    kind: 'repaired',
  });
}

/**
 * What is stored in place of a message PostgreSQL refused to store (a value
 * no retry can fix): the same role and tool-call ids, so the pairing holds,
 * and this note instead of the body. A tool message's note is JSON like
 * every other result.
 */
export function notStoredContent(role: string, error: string): string {
  if (role === 'tool')
    return JSON.stringify({
      error: `This tool result could not be stored, so it is lost: ${error}`,
      kind: 'not_stored',
    });
  return `[This message could not be stored, so its text is lost: ${error}]`;
}

/** The result of a call its event settled: the event's name, key, id, when it was sent and its payload. */
export function eventContent(event: DeliveredEvent): string {
  return JSON.stringify({
    kind: 'event',
    event: event.name,
    key: event.key,
    eventId: event.eventId,
    sentAt: event.sentAt,
    ...(event.sentBy !== undefined ? { sentBy: event.sentBy } : {}),
    payload: event.payload ?? null,
  });
}

/** The result of a call whose event did not come in time. */
export function eventTimeoutContent(wait: EventWaitPlan): string {
  return JSON.stringify({
    error: `The event ${wait.event} with key ${wait.key} did not arrive within ${humanMs(wait.timeoutMs)}; nothing was received.`,
    kind: 'event_timeout',
    event: wait.event,
    key: wait.key,
  });
}

/** The result of a call whose turn stopped while it waited for its event. */
export function eventWaitStoppedContent(why: string, wait: EventWaitPlan): string {
  return JSON.stringify({
    error: `The call stopped waiting for the event ${wait.event} with key ${wait.key}: ${why}. Nothing was received.`,
    kind: 'cancelled',
    started: false,
  });
}

/** A duration in words: "90 s", "2 h", "3 days". */
function humanMs(ms: number): string {
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  if (ms < 172_800_000) return `${Math.round(ms / 3_600_000)} h`;
  return `${Math.round(ms / 86_400_000)} days`;
}
