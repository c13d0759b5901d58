/**
 * What a conversation shows of itself: the state its query returns
 * ({@link ConversationState}) with its status, open calls and calls of
 * unknown effect, and the summary the workflow returns when it ends. Finished
 * turns are in `turn-records.ts`, calls waiting for a person in
 * `waiting-calls.ts`. Types only; workflow-safe.
 */
import type { EventWaitView } from './events';
import type { ComeBackView } from './comebacks';
import type { StandingGrant } from './grants';
import type { ExtractedAgentResult } from './activities';
import type { AgentCaller, ForkOrigin } from './conversation-input';
import type { UnknownEffect } from './carried-conversation';
import type { RefusedDecision } from './decisions';
import type { MessageMeta } from './messages';
import type { ConversationUsage, TurnRecord } from './turn-records';
import type { PendingApproval, PendingBelow } from './waiting-calls';

/** The state returned by {@link stateQuery}. */
export interface ConversationState {
  conversationId: string;
  status: ConversationStatus;
  /** Model calls made so far, all turns together. */
  steps: number;
  /** The last error of a failed turn, cleared when a turn answers. */
  lastError?: string;
  /** The transcript's structure since this run began (bodies live in PostgreSQL). */
  messages: MessageMeta[];
  /** Messages in the whole conversation, all runs together. */
  messageCount: number;
  /** Workflow runs so far (a conversation continues as new between turns). */
  runs: number;
  /**
   * The agent that answers now (see {@link ConversationInput.agent}); absent for conversations of one unnamed agent.
   */
  agent?: string;
  /** Set when this conversation runs an agent called as a tool: who called it (its task cut to 500 characters). */
  calledBy?: AgentCaller;
  /** Set on a fork: the conversation and seq its transcript was copied from. */
  forkedFrom?: ForkOrigin;
  /** User messages received but not yet taken into a turn. */
  queuedMessages: number;
  /** Tool calls waiting for a person's decision. */
  pendingApprovals: PendingApproval[];
  /**
   * Calls waiting for a person inside agents this conversation called as
   * tools (at any depth): the conversation waits on them (its status is
   * `awaiting_approval`). Each is decided in its own `conversationId`.
   */
  waitingBelow?: PendingBelow[];
  /** Calls waiting for an event (`waitForEvent()` tools); absent when none waits. */
  eventWaits?: EventWaitView[];
  /** Come-backs the conversation holds, soonest first; absent when none. */
  comeBacks?: ComeBackView[];
  /** Ids of tool calls whose activities are running. */
  runningToolCalls: string[];
  /** Decision ids applied so far (a decision is applied once per id). */
  decisionsApplied: number;
  /**
   * Decision signals the conversation refused, and why, newest last (at most
   * {@link REFUSED_DECISIONS_KEPT}). A signal gets no answer, so this is where
   * its sender finds out; the update `submitDecision` answers directly instead.
   */
  refusedDecisions: RefusedDecision[];
  /** Standing grants given in this conversation (live, spent, expired or revoked); absent when none was given. */
  grants?: GrantView[];
  /** The most recent turns, newest last (at most {@link RECENT_TURNS_KEPT}). */
  recentTurns: TurnRecord[];
  /** The turn running now: the user messages it answers, and the seq of its first message. */
  currentTurn?: { messageIds: string[]; firstSeq: number };
  /**
   * The calls of the assistant message being worked on (the open batch), in
   * order, those settled with their outcome: what a client shows before the
   * batch's tool messages are written.
   */
  openCalls?: OpenCall[];
  /**
   * Calls whose effect is unknown (`effect_unknown`), newest last (at most
   * {@link UNKNOWN_EFFECTS_KEPT}); `unknownEffectsCount` counts all of them.
   * Someone should check each in the system the tool acts on.
   */
  unknownEffects: UnknownEffect[];
  /** Calls settled as `effect_unknown` in the whole conversation (also the `UnknownEffects` search attribute). */
  unknownEffectsCount: number;
  /**
   * Turns regenerated so far (absent: none). Call keys minted after a regeneration carry it:
   * `<conversation>/regen-<n>/msg-<seq>/call-<index>`.
   */
  regenerations?: number;
  /**
   * Tokens and cost of the whole conversation (each turn's are in `recentTurns`), the agents it called as tools
   * included: its budget covers them.
   */
  usage: ConversationUsage;
  /**
   * The same by agent: each agent's model calls, in this conversation and in the conversations of agents it called as
   * tools, at any depth. Absent when no agent is named.
   */
  usageByAgent?: Record<string, ConversationUsage>;
  /**
   * Times the transcript had to be repaired before a model call. Should
   * always be 0: anything else is a bug, and is logged as a warning.
   */
  transcriptRepairs: number;
}

/** Where the conversation stands. */
export type ConversationStatus = 'idle' | 'running' | 'awaiting_approval' | 'failed' | 'closed';

/** A call of the open batch, as {@link ConversationState.openCalls} shows it. */
export interface OpenCall {
  callKey: string;
  toolCallId: string;
  toolName: string;
  /** Once settled: how (`ok`, `rejected`, `tool_failed`, ...) and the result the model reads (a preview when long). */
  outcome?: { kind: string; content: string };
}

/** What the workflow returns when the conversation ends. */
export interface ConversationSummary {
  conversationId: string;
  steps: number;
  messages: number;
  transcriptRepairs: number;
  /**
   * How its last turn ended, for a conversation started for an agent called
   * as a tool (`calledBy`): what the calling call's result is made of.
   */
  lastTurn?: SubAgentTurn;
}

/** The one turn of an agent called as a tool, as its caller reads it. */
export interface SubAgentTurn {
  agent?: string;
  outcome: TurnRecord['outcome'];
  /** Why it did not answer. */
  error?: string;
  /**
   * The answer's model response, whose full text becomes the calling call's result, and its text (a preview when long).
   */
  answer?: { responseKey: string; text: string; extracted?: ExtractedAgentResult };
  /** What the conversation spent, its own calls and its agents' below it: added to the caller's. */
  usage?: ConversationUsage;
  /** The same by agent. */
  usageByAgent?: Record<string, ConversationUsage>;
}

/** A standing grant as the state shows it: times as ISO 8601, and whether it still covers calls now. */
export type GrantView = Omit<StandingGrant, 'grantedAt' | 'expiresAt' | 'revokedAt'> & {
  grantedAt: string;
  expiresAt: string;
  revokedAt?: string;
  /** Whether it covers calls now: not revoked, not expired, within its limits. */
  live: boolean;
};
