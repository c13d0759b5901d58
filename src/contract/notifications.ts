/**
 * Notifications: what the worker announces to webhook endpoints about calls
 * that wait for a person, as each event's JSON body carries it, and how a
 * delivery stands. docs/webhook-payload.schema.json is the same shape as a
 * JSON Schema (docs/notifications.md). Types only, and the list of types.
 */
import type { DecisionKind } from './decisions';
import type { WaitingPolicy } from './waiting-calls';

/**
 * The events, by type:
 * - `call.waiting`: a tool call is listed for approvers (it waits for a person);
 * - `call.decided`: a person's decision on it is recorded (an approval that leaves an N-of-M call waiting too);
 * - `call.timed_out`: no decision came before its approval deadline;
 * - `call.cancelled`: it stopped waiting without a decision (its turn was cancelled or interrupted, or the
 *   conversation ended);
 * - `call.escalated`: a step of its rule's escalation ladder was taken;
 * - `turn.ended_after_wait`: a turn some of whose calls waited for a person ended (answered, failed or stopped), with
 *   what was decided on each and the start of its answer. It names no call (`turn.calls` lists them).
 */
export const NOTIFICATION_TYPES = [
  'call.waiting',
  'call.decided',
  'call.timed_out',
  'call.cancelled',
  'call.escalated',
  'turn.ended_after_wait',
] as const;

/** One of {@link NOTIFICATION_TYPES}. */
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

/** The call an event is about. */
export interface NotificationCall {
  /** The call's effect key: unique per call, the key a decision names. */
  callKey: string;
  /** The provider's id of the call. */
  toolCallId: string;
  toolName: string;
  /** Its arguments as the model sent them: parsed JSON, or the text when it is not JSON. */
  arguments?: unknown;
  /** When the model asked for it (ISO 8601). Absent once the call has left approvers' list. */
  requestedAt?: string;
  /** Who sent the messages of the turn that asked for it. */
  requestedBy?: string[];
  /** The agents from the top-level conversation's down to the one asking; empty for one unnamed agent. */
  agentPath?: string[];
  /** What may be decided on it; absent: approve or reject. */
  decisions?: DecisionKind[];
  /** The approval policy's rule it waits under: who may decide it, and who approved it so far. */
  policy?: WaitingPolicy;
}

/** A person's decision, as `call.decided` carries it. */
export interface NotificationDecision {
  decisionId: string;
  decision: DecisionKind;
  /** The deciding person: the API token's subject when the decision was signed. */
  decidedBy?: string;
  /** ISO 8601. */
  decidedAt: string;
  via: 'signal' | 'update';
  /** Whether the decision carried a valid signature of the HTTP API. */
  authenticated?: boolean;
  reason?: string;
  /** The approval policy's rule the call was under. */
  rule?: string;
  /** The groups the decider's signed token gave them. */
  deciderGroups?: string[];
  /** True for an approval that does not decide the call yet: its rule needs more people. */
  callStillWaits: boolean;
  /** `edit`: the arguments the call ran with. */
  arguments?: unknown;
  /** `respond`: the person's answer, the call's result. */
  response?: string;
}

/** One notification, as the JSON body of its delivery. */
export interface NotificationEvent {
  /** The event's id: the same in every delivery of it, so receivers deduplicate by it. */
  id: string;
  type: NotificationType;
  /** When the change it announces was recorded (ISO 8601). */
  createdAt: string;
  /** The conversation of the call. */
  conversationId: string;
  /** The top-level conversation it serves (itself, unless the call waits inside an agent called as a tool). */
  rootConversationId: string;
  call?: NotificationCall;
  /** `call.decided`. */
  decision?: NotificationDecision;
  /** `call.timed_out`, `call.cancelled`: how the call ended (its tool message's kind and words). */
  outcome?: { kind: 'approval_timeout' | 'cancelled' | 'interrupted'; message?: string };
  /** `call.escalated`: the step taken. */
  escalation?: Record<string, unknown>;
  /** `turn.ended_after_wait`: the turn that ended. */
  turn?: NotificationTurn;
}

/** A turn that waited for a person, as `turn.ended_after_wait` carries it. */
export interface NotificationTurn {
  /** The turn's id: one event per turn. */
  id: string;
  /** Its number in the conversation, from 1. */
  number: number;
  outcome:
    'answered' | 'failed' | 'cancelled' | 'interrupted' | 'budget_exceeded' | 'invalid_output' | 'guardrail_tripped';
  /** Why it did not answer. */
  error?: string;
  /** Who sent its messages. */
  requestedBy?: string[];
  /** The start of its final answer (at most 1,000 characters), when it answered. */
  answer?: { seq: number; text: string; truncated: boolean };
  /** ISO 8601. */
  endedAt: string;
  /** The calls that waited for a person, in the order asked, with the decisions recorded on each (none: it timed out or was stopped). */
  calls: {
    callKey: string;
    toolCallId: string;
    toolName: string;
    decisions: { decisionId: string; decision: string; decidedBy?: string; decidedAt: string; via: string }[];
  }[];
}

/** Where one event's delivery to one endpoint stands. */
export type NotificationStatus = 'pending' | 'failing' | 'delivered';

/** One event's delivery to one endpoint, as operators list them. `When` is the type of its times. */
export interface NotificationDelivery<When = Date> {
  eventId: string;
  type: NotificationType;
  conversationId: string;
  /** The call it is about. */
  callKey: string | null;
  createdAt: When;
  /** The endpoint's name. */
  endpoint: string;
  /** `failing`: undelivered after the dispatcher's number of attempts (it keeps trying). */
  status: NotificationStatus;
  /** Attempts made so far. */
  attempts: number;
  /** When the next attempt is due (null once delivered). */
  nextAttemptAt: When | null;
  lastAttemptAt: When | null;
  deliveredAt: When | null;
  /** The HTTP status of the last attempt, when one answered. */
  lastStatus: number | null;
  /** Why the last attempt failed. */
  lastError: string | null;
  /** Since when it is failing. */
  failingSince: When | null;
  /** When a running worker last served the endpoint (an endpoint no worker serves is not delivered to). */
  endpointLastSeenAt: When | null;
}
