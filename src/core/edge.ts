/**
 * What the conversation core and its edge (the workflow, or a test's stand-in)
 * exchange: what the core needs from the world, and the shapes of what it
 * asks the edge to do. Pure.
 */
import type { StoredMessageRef } from '../activities/contracts';
import type { BatchCall } from './batch';
import type { ConversationStatus, TurnRecord } from './contract';
import type { ChatMessage } from './messages';
import type { ToolFailureReason } from './outcomes';

/** What the core needs from the world: a clock, fresh ids and a log. The workflow passes its deterministic ones. */
export interface CoreEnvironment {
  /** The current time, ms since the epoch (in the workflow: the time of the workflow task). */
  now(): number;
  /** A fresh id, for a user message sent without one. */
  newId(): string;
  log: {
    info(message: string, attributes?: Record<string, unknown>): void;
    warn(message: string, attributes?: Record<string, unknown>): void;
  };
  /**
   * Whether a rule added after conversations were already running applies
   * to this one (the workflow's `patched(id)`): asked only where the rule
   * would change what happens, so runs recorded before it replay as they ran.
   */
  allows(patchId: string): boolean;
}

/**
 * Patch: effect keys per call instance (`effect-keys.ts`) and `effect_unknown`.
 * Batches made before it keep the key `${conversationId}/${toolCallId}` and
 * settle as before, so a call that may already have run keeps its key.
 */
export const CALL_INSTANCE_KEYS_PATCH = 'call-instance-effect-keys';

/**
 * Patch: user messages over USER_MESSAGE_MAX_BYTES are refused, a turn takes
 * at most TURN_INPUT_MAX_BYTES of them, continue-as-new carries at most
 * CARRIED_INBOX_MAX_BYTES, and decisions with fields over
 * DECISION_FIELD_MAX_CHARS are refused.
 */
export const MESSAGE_SIZE_LIMITS_PATCH = 'message-size-limits';

/**
 * Patch: who asked and what waits is published for approvers (the
 * `PendingApprovalTags` and `AwaitingApprovalSince` search attributes), and
 * each decision's signature is checked by the `verifyDecision` activity before
 * the decision applies. Asked at a run's first publish, so a run begun before
 * keeps its commands to its end.
 */
export const APPROVAL_IDENTITY_PATCH = 'approval-identity';

/**
 * Patch: the conversation's tokens and cost are published (the `AgentTokens`
 * and `AgentCostUsd` search attributes), riding on upserts the workflow makes
 * anyway. Asked at the first such upsert that would carry new figures, so a
 * run begun before it keeps its commands until a worker with the new code
 * handles it.
 */
export const USAGE_SEARCH_ATTRIBUTES_PATCH = 'usage-search-attributes';

/**
 * Patch: text from people that PostgreSQL cannot store (U+0000, unpaired
 * surrogates; `src/core/text.ts`) is refused: a user message, a decision or
 * a cancel that holds it changes nothing but `lastError`, and a conversation
 * started with such a system prompt fails at once. Asked only when such text
 * arrives, so no other history gets its marker; a run that received such
 * text before it takes it as it did (its writes store it with U+FFFD).
 */
export const UNSTORABLE_TEXT_PATCH = 'unstorable-text';

/** A message to store: its body, and a reference when an activity already stored the body. */
export interface StoreEntry {
  message: ChatMessage;
  ref?: StoredMessageRef;
}

/** Why a tool call's activity failed, as the edge read it from the failure. */
export interface ToolFailure {
  message: string;
  reason: ToolFailureReason;
  /** Set when the run was cut off (timed out, worker lost) rather than failed by the tool: why. */
  cutOff?: string;
}

/** What follows a stored assistant message: the turn's end, or calls to run. */
export type AfterAnswer = { finished: TurnRecord } | { calls: readonly BatchCall[] };

/** The values of the search attributes that changed since they were last published. */
export interface SearchAttributeValues {
  status: ConversationStatus;
  pendingApprovals: number;
  /** Present when the count of unknown effects changed. */
  unknownEffects?: number;
  /**
   * With {@link APPROVAL_IDENTITY_PATCH}: what visibility indexes about the
   * calls awaiting approval (`call:<callKey>`, `tool:<name>`,
   * `requester:<sentBy>`; empty when none waits) and since when the oldest
   * waits (ms since the epoch; null when none waits).
   */
  approvals?: { tags: string[]; since: number | null };
  /**
   * With {@link USAGE_SEARCH_ATTRIBUTES_PATCH}, when they changed since this
   * run last published them (a run's first publish always carries them):
   * what the whole conversation spent, all runs together. Never the only
   * change: published only beside a change of the values above.
   */
  usage?: PublishedUsage;
}

/** A conversation's spending as visibility indexes it. */
export interface PublishedUsage {
  /** Prompt and completion tokens of every model call that reported them. */
  tokens: number;
  /** US dollars of the calls whose model had a price (unpriced calls add nothing). */
  costUsd: number;
}

/** Why a turn stopped early, as tool messages and turn records say it. */
export const STOP_REASONS = {
  cancelledByUser: 'the user cancelled the turn',
  interruptedByMessage: 'a new user message interrupted the turn',
  workflowCancelled: 'the conversation was cancelled',
} as const;
