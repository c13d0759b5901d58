/**
 * What the core says happens next, in one small vocabulary that every edge
 * interprets: the workflow (src/workflows/conversation.ts) with activities,
 * timers and handlers, the property test's driver (test/support/core-driver.ts)
 * with events a test sends. The order of things lives in the core, once: an
 * edge performs the step it is given and tells the core how it went. Pure.
 */
import type {
  AppendMessagesInput,
  ApprovalRequest,
  DecisionRecord,
  ModelCallInput,
  ToolCallInput,
  ToolDiscoveryInput,
  VerifyDecisionInput,
} from '../contract/activities';
import type { ApprovalDecision, DecisionResult } from '../contract/decisions';
import type { TurnRecord } from '../contract/turn-records';
import type { BatchCall } from './batch';
import type { SubAgentStart } from './edge';
import type { EventWaitRun } from './event-waits';
export type { PendingWrite } from './writes';

/** The next step of a running turn ({@link ConversationCore.nextTurnStep}). */
export type TurnStep =
  /** List the tools of the conversation's MCP servers (once a turn, before its first model call). */
  | { kind: 'discoverTools'; input: ToolDiscoveryInput; summary: string }
  /** Call the model, which writes the unwritten messages first. */
  | { kind: 'callModel'; request: ModelCallInput; summary: string }
  /** A regenerated turn's first step: supersede the stored messages from `input.supersedeFrom` on (an empty write). */
  | { kind: 'supersede'; input: AppendMessagesInput; summary: string }
  /** Write what is unwritten, with the calls that now wait for a person: whoever decides may read the transcript. */
  | { kind: 'write'; waiting: ApprovalRequest[]; ruled?: DecisionRecord[] }
  /** Run the batch's calls, each as its own {@link CallStep}s say, then close the batch. */
  | { kind: 'runCalls'; calls: readonly BatchCall[] }
  /** The turn is over: write its end and finish it with this record. */
  | { kind: 'endTurn'; record: TurnRecord };

/** The next step of one call of the open batch ({@link ConversationCore.nextCallStep}). */
export type CallStep =
  /** Wait for a person's decision, until the deadline (then {@link ConversationCore.approvalDeadlinePassed}). */
  | {
      kind: 'waitForPerson';
      timeoutMs: number;
      summary: string;
      /**
       * The next step of the call's escalation ladder, due before the deadline: wait `inMs` for a decision, then take
       * the step ({@link ConversationCore.escalate}) and ask again.
       */
      escalation?: { inMs: number; summary: string };
    }
  /** Nothing to run: the call is settled (rejected, answered by a person, timed out) or runs already. */
  | { kind: 'none' }
  /** Run it: the edge starts it ({@link ConversationCore.startCall}) unless the turn was stopped meanwhile. */
  | { kind: 'start' };

/** How a started call runs ({@link ConversationCore.startCall}, {@link ConversationCore.callFailed}). */
export type CallRun =
  /**
   * Run the tool's activity, with at most `attempts` attempts (1: once more under the same key, after its worker was
   * lost; unset: the call's own).
   */
  | { kind: 'runTool'; request: ToolCallInput; summary: string; attempts?: number }
  /** Run an agent as a tool: its child conversation. */
  | { kind: 'startAgent'; start: SubAgentStart }
  /** Wait for an event (a `waitForEvent()` tool): list the wait, then wait until the event or the deadline. */
  | EventWaitRun
  /** Nothing to run: the call settled as it started (a `comeBackLater()` call). */
  | { kind: 'done' };

/** A run of an activity or a child conversation: what a failed run may be followed by. */
export type ActivityRun = Exclude<CallRun, EventWaitRun | { kind: 'done' }>;

/** Where a decision goes next ({@link ConversationCore.receiveDecision}, {@link ConversationCore.decisionVerified}). */
export type DecisionStep =
  /** Refused: an update's caller gets the problem; a signal's refusal is kept in the state. */
  | { kind: 'refused'; problem: string }
  /**
   * Verify its signature (and an edit's arguments) with an activity, then {@link ConversationCore.decisionVerified}.
   */
  | { kind: 'verify'; input: VerifyDecisionInput; summary: string; pending: PendingDecision }
  /** Applied now: record it for people (an activity), then answer with the result. */
  | { kind: 'record'; record: DecisionRecord; summary: string; result: DecisionResult }
  /** Applied before (the same decision id): answer with the result, nothing else. */
  | { kind: 'answered'; result: DecisionResult };

/** A decision between its first check and its verdict. */
export interface PendingDecision {
  decision: ApprovalDecision;
  via: 'signal' | 'update';
  /** The call instances it was checked against: what it may still decide once verified. */
  scope: string[];
}
