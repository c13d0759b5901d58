/** What the chaos run did and saw, recorded as it happens and read by the final checks. */
import type { ForkAt } from '../../src/client/client';
import { DECISION_PATHS, type ConversationPlan, type DecisionPath, type ResetKind } from './plan';
import type { DecisionKind } from '../../src/contract';

/** Every kind of fault the run injects. */
export const FAULT_KINDS = [
  'model_500',
  'model_slow',
  'unknown_tool',
  'malformed_arguments',
  'reused_ids',
  'duplicate_ids',
  'model_429',
  'context_length_exceeded',
  'huge_answer',
  'huge_arguments',
  'large_result',
  'handoff',
  'sub_agent',
  'user_message_near_limit',
  'user_message_over_limit',
  'low_continue_as_new',
  'tool_failure',
  'worker_kill',
  'server_restart',
  'database_restart',
  'cancel',
  'interrupt',
  'reject',
  'approval_timeout',
  'duplicate_decision',
  'late_decision',
  'unsigned_decision',
  'malformed_signal',
  'reset',
  'fork',
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

/** A decision the driver sent as a signal. */
export interface DecisionSent {
  conversationId: string;
  decisionId: string;
  decision: DecisionKind;
  /** Unset: every call awaiting approval. */
  toolCallId?: string;
  /** The calls it was meant for, as the state showed them waiting just before it was sent. */
  targets: { toolCallId: string; callKey: string; requestedAt: number }[];
  sentAt: number;
  /** When the server acknowledged the signal; unset when every attempt failed. */
  ackAt?: number;
  /** A second send of a decision id already acknowledged. */
  duplicate: boolean;
  path: DecisionPath;
  /** Sent around the API without a signature: it must be refused, never recorded. */
  unsigned?: boolean;
}

/** A cancel or an interrupting message the driver sent during a turn. */
export interface InterventionSent {
  conversationId: string;
  kind: 'cancel' | 'interrupt';
  sentAt: number;
  ackAt?: number;
}

/** A user message sent at or over the size limit, and what the client said. */
export interface SizedMessageSent {
  conversationId: string;
  messageId: string;
  /** UTF-8 bytes of its text. */
  bytes: number;
  /** Over `USER_MESSAGE_MAX_BYTES`: the client must refuse it. */
  overLimit: boolean;
  /** The client's error, when it refused the message. */
  refusal?: string;
}

/** A reset the driver made. */
export interface ResetDone {
  conversationId: string;
  kind: ResetKind;
  /** The completed workflow task reset to. */
  eventId: number;
  /** When that task completed (the server's time): signals after it are applied again by the new run. */
  pointAt: number;
  /** When the reset was asked for, and when the server answered it. */
  sentAt: number;
  doneAt: number;
}

/** A fork the driver made. */
export interface ForkDone {
  sourceId: string;
  forkId: string;
  at: ForkAt;
  /** The source's seq the fork keeps up to. */
  forkSeq: number;
  /** The calls the copy answered (`ran`: the source's result; `not_run`: the fork's outcome). */
  answered: { toolCallId: string; how: 'ran' | 'not_run' }[];
  /** Made while calls of the source waited for a person. */
  whileWaiting: boolean;
}

/** The driver's view of one conversation. */
export interface ConversationRecord {
  plan: ConversationPlan;
  /** User message ids the server acknowledged, in order. */
  messageIds: string[];
  /** Ids whose sending failed on every attempt (they may or may not have arrived). */
  unacknowledgedMessageIds: string[];
  /** True while a turn the driver waits for runs. */
  inFlight: boolean;
  turnsFinished: number;
  /** Why the driver stopped following the conversation before its script ended. */
  gaveUp?: string;
  /** For a fork: the user messages it copied from its source (stored once, in no turn of its own). */
  copiedMessageIds?: string[];
}

/** The shared record of a run. */
export class RunLog {
  readonly faults: Record<FaultKind, number> = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<
    FaultKind,
    number
  >;
  readonly decisions: DecisionSent[] = [];
  readonly interventions: InterventionSent[] = [];
  readonly sizedMessages: SizedMessageSent[] = [];
  /** Decisions sent, by the way they were sent (one per call through the API or the CLI), refused ones included. */
  readonly decisionPaths: Record<DecisionPath, number> = Object.fromEntries(
    DECISION_PATHS.map((p) => [p, 0]),
  ) as Record<DecisionPath, number>;
  /** Decisions the API (or the CLI through it) refused because the calls no longer waited. */
  apiRefusals = 0;
  /** Answers of the API or the CLI that should never happen (a 4xx other than a refusal, a decision without its id). */
  readonly apiErrors: string[] = [];
  readonly conversations = new Map<string, ConversationRecord>();
  /** Client calls that failed and were tried again. */
  clientRetries = 0;
  /** Temporal resets the driver made. */
  readonly resets: ResetDone[] = [];
  /** Forks the driver made (each is also one of `conversations`). */
  readonly forks: ForkDone[] = [];

  constructor(plans: readonly ConversationPlan[]) {
    for (const plan of plans) {
      this.conversations.set(plan.id, {
        plan,
        messageIds: [],
        unacknowledgedMessageIds: [],
        inFlight: false,
        turnsFinished: 0,
      });
    }
  }

  /** Adds a fork to the conversations followed and checked; returns its record. */
  addConversation(plan: ConversationPlan, copiedMessageIds: string[]): ConversationRecord {
    const record: ConversationRecord = {
      plan,
      messageIds: [],
      unacknowledgedMessageIds: [],
      inFlight: false,
      turnsFinished: 0,
      copiedMessageIds,
    };
    this.conversations.set(plan.id, record);
    return record;
  }

  /** Ids of conversations with a turn in flight. */
  inFlight(): string[] {
    return [...this.conversations.values()].filter((c) => c.inFlight).map((c) => c.plan.id);
  }
}
