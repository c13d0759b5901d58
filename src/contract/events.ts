/**
 * Events a conversation can wait for: a tool declared with `waitForEvent()`
 * makes its call wait until an event with its name and key arrives (its
 * payload is the call's result) or its deadline passes. Events are sent
 * through `POST /v1/events`, `AgentClient.sendEvent` or the `event` signal
 * (docs/waiting-for-events.md). Types, limits and checks; workflow-safe.
 */
import { describeUnstorableText } from './text';

/** The limits of an event, and how long one nobody waits for is kept for the first wait that matches it. */
export const EVENT_LIMITS = {
  /** Characters of its name, e.g. `payment.settled`. */
  nameMaxChars: 200,
  /** Characters of its key, e.g. an order's id. */
  keyMaxChars: 500,
  /** Bytes of its payload as JSON. */
  payloadMaxBytes: 64 * 1024,
  /** How long an event that no call waits for is kept for the first wait that matches it, by default (24 hours). */
  defaultKeepMs: 24 * 60 * 60 * 1000,
  /** The longest it may be kept (30 days). */
  maxKeepMs: 30 * 24 * 60 * 60 * 1000,
  /** How long a call waits when its tool sets no timeout (3 days). */
  defaultWaitMs: 3 * 24 * 60 * 60 * 1000,
} as const;

/** What an event's name looks like: letters, digits and `.`, `_`, `:`, `-`, starting with a letter or digit. */
export const EVENT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

/** An event as it is sent. */
export interface EventInput {
  /** Its id: sending the same id again delivers nothing new (a retry); a fresh UUID when absent. */
  eventId?: string;
  /** What happened, e.g. `payment.settled`. */
  name: string;
  /** What it is about, e.g. the order's id: a call waits for one name and one key. */
  key: string;
  /** Any JSON: the waiting call's result. */
  payload?: unknown;
}

/** An event as it reaches a waiting conversation: the `event` signal's argument. */
export interface DeliveredEvent {
  eventId: string;
  name: string;
  key: string;
  payload?: unknown;
  /** Who sent it: the API token's subject (absent for the client's and raw signals). */
  sentBy?: string;
  /** When it was sent (ISO 8601). */
  sentAt: string;
  /** The waiting call it was routed to (its effect key); absent: every call of the conversation waiting for it. */
  callKey?: string;
}

/** What a call of a `waitForEvent()` tool waits for, as its plan says. */
export interface EventWaitPlan {
  /** The event's name. */
  event: string;
  /** The key it waits for, from the call's arguments. */
  key: string;
  /** How long it waits, from when it starts waiting. */
  timeoutMs: number;
}

/** Input of `registerEventWait`: a call starts waiting for an event. */
export interface RegisterEventWaitInput {
  conversationId: string;
  callKey: string;
  toolCallId: string;
  toolName: string;
  /** Seq of the assistant message that asked for the call (the wait ends when its tool message is written). */
  assistantSeq: number;
  name: string;
  key: string;
  /** Workflow time its wait ends, ms since the epoch. */
  deadlineAt: number;
}

/**
 * What `registerEventWait` found: an event sent before the wait (kept, and now taken by this call), or one delivered
 * to this call already (a retried registration, a reset run); absent when the call now waits.
 */
export interface RegisterEventWaitResult {
  event?: DeliveredEvent;
}

/** A call waiting for an event, as the conversation's state shows it. */
export interface EventWaitView {
  callKey: string;
  toolCallId: string;
  toolName: string;
  /** The event's name and key it waits for. */
  event: string;
  key: string;
  /** When it started waiting, and when it stops (ISO 8601). */
  since: string;
  deadlineAt: string;
}

/** What is wrong with an event's name, key or payload, or undefined when nothing is. */
export function eventProblem(event: { name?: unknown; key?: unknown; payload?: unknown }): string | undefined {
  const { name, key } = event;
  if (typeof name !== 'string' || name.length === 0)
    return 'An event needs a name (what happened, e.g. "payment.settled").';
  if (name.length > EVENT_LIMITS.nameMaxChars)
    return `The event's name has ${name.length} characters; at most ${EVENT_LIMITS.nameMaxChars}.`;
  if (!EVENT_NAME_PATTERN.test(name))
    return `The event's name "${name}" may hold letters, digits and . _ : - only, starting with a letter or digit.`;
  if (typeof key !== 'string' || key.length === 0)
    return "An event needs a key (what it is about, e.g. the order's id): a call waits for one name and one key.";
  // Characters are Unicode code points, as the API's document (JSON Schema's maxLength) counts them.
  const keyChars = [...key].length;
  if (keyChars > EVENT_LIMITS.keyMaxChars)
    return `The event's key has ${keyChars} characters; at most ${EVENT_LIMITS.keyMaxChars}.`;
  const unstorable = describeUnstorableText("The event's key", key);
  if (unstorable) return `${unstorable}.`;
  const bytes = new TextEncoder().encode(JSON.stringify(event.payload ?? null)).length;
  if (bytes > EVENT_LIMITS.payloadMaxBytes)
    return `The event's payload is ${bytes} bytes as JSON; at most ${EVENT_LIMITS.payloadMaxBytes}. Send a reference to larger data instead.`;
  return undefined;
}
