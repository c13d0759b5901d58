/**
 * What the conversation core and its edge (the workflow, or a test's stand-in)
 * exchange: what the core needs from the world, and the shapes of what it
 * asks the edge to do. Pure.
 */
import type { StoredMessageRef } from '../contract/activities';
import type { ConversationInput } from '../contract/conversation-input';
import type { ConversationStatus } from '../contract/conversation-state';
import type { ChatMessage } from '../contract/messages';
import type { ToolFailureReason } from './outcomes';
import type { PatchId } from '../contract/patches';

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
   * to this one (the workflow's `patched(id)`, for an id of
   * `WORKFLOW_PATCHES` in src/contract/patches.ts): asked only where the rule
   * would change what happens, so runs recorded before it replay as they ran.
   */
  allows(patchId: PatchId): boolean;
}

/** A message to store: its body, and a reference when an activity already stored the body. */
export interface StoreEntry {
  message: ChatMessage;
  ref?: StoredMessageRef;
}

/** Why a tool call's activity failed, as the edge read it from the failure: facts only, the core draws the rules. */
export interface ToolFailure {
  message: string;
  reason: ToolFailureReason;
  /**
   * Set when the run was cut off (timed out, stopped heartbeating, lost its answer) rather than failed by the tool:
   * why.
   */
  cutOff?: string;
  /** The last attempt failed as `WorkerLost`: its worker was killed and another worker failed the attempt. */
  workerLost?: boolean;
  /**
   * The last attempt ended because its worker stopped (a heartbeat timeout, or `WorkerLost`), maybe after its effect
   * applied.
   */
  workerStopped?: boolean;
}

/**
 * The child conversation that runs a call of an agent as a tool: the edge starts it as a child workflow and awaits its
 * summary.
 */
export interface SubAgentStart {
  /** `<conversation id>~<agent>~<assistant seq>-<call index>`: one per call instance, never reused. */
  workflowId: string;
  input: ConversationInput;
  /** The line the Temporal UI shows for the child: `auditor agent for audit_order, call 1 of turn 3`. */
  summary: string;
  /** How long it may take in all, ms; unset: no limit. */
  timeoutMs?: number;
}

/** The values of the search attributes that changed since they were last published. */
export interface SearchAttributeValues {
  status: ConversationStatus;
  pendingApprovals: number;
  /** Present when the count of unknown effects changed. */
  unknownEffects?: number;
  /**
   * What visibility indexes about the calls awaiting approval (`call:<callKey>`, `tool:<name>`,
   * `requester:<sentBy>`; empty when none waits) and since when the oldest
   * waits (ms since the epoch; null when none waits).
   */
  approvals: { tags: string[]; since: number | null };
  /**
   * When they changed since this run last published them (a run's first publish always carries them):
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
