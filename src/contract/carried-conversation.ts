/**
 * What a conversation carries into its next run when it continues as new
 * ({@link CarriedConversation}, the input's `carried`), with the calls of
 * unknown effect it keeps ({@link UnknownEffect}, which its state shows too).
 * Types only; workflow-safe.
 */
import type { StandingGrant } from './grants';
import type { ComeBack } from './comebacks';
import type { DecisionResult, RefusedDecision } from './decisions';
import type { ConversationUsage, TurnRecord } from './turn-records';
import type { MessageFile } from './message-files';

/**
 * What a conversation carries into its next run when it continues as new,
 * always at an idle point (every call settled, everything stored).
 */
export interface CarriedConversation {
  /** Seq of the next message: messages 0..nextSeq-1 are stored in PostgreSQL and settled. */
  nextSeq: number;
  steps: number;
  transcriptRepairs: number;
  lastError?: string;
  phase: 'idle' | 'failed';
  recentTurns: TurnRecord[];
  /** The most recent user message ids, for deduplication (at most {@link DEDUP_MEMORY}). */
  receivedMessageIds: string[];
  /** The most recent applied decisions, for deduplication (at most {@link DEDUP_MEMORY}). */
  decisions: DecisionResult[];
  /** Standing grants given in this conversation, live or spent (absent when none was ever given). */
  grants?: StandingGrant[];
  /** Come-backs asked for and not yet due (absent when none was ever asked for). */
  comeBacks?: ComeBack[];
  /** The most recent refused decision signals (absent in runs started by older versions). */
  refusedDecisions?: RefusedDecision[];
  /** Messages received and not yet answered. */
  inbox: { text: string; messageId: string; sentBy?: string; files?: MessageFile[] }[];
  /** A cancel that arrived for the queued messages before their turn started. */
  pendingCancel?: string;
  /**
   * Calls settled as `effect_unknown` so far, and the most recent of them (absent in runs started by older versions).
   */
  unknownEffects?: { count: number; recent: UnknownEffect[] };
  ending: boolean;
  /** Runs so far, this one included. */
  runs: number;
  /** Tokens and cost so far (absent in runs started by older versions: counting starts there). */
  usage?: ConversationUsage;
  /**
   * Tokens and cost so far by agent: each agent's own model calls, and what the agents it called as tools spent (absent
   * in runs started by older versions, and for a conversation of one unnamed agent that called none).
   */
  usageByAgent?: Record<string, ConversationUsage>;
  /** Turns taken so far (absent in runs started by older versions: numbering starts again there). */
  turns?: number;
  /** The agent that answers now, when it is not the input's `agent` (a handoff moved the conversation). */
  agent?: string;
  /**
   * The user messages of the last turn, seqs `fromSeq` to `toSeq - 1`: what a regenerated turn answers again
   * (absent in runs started by older versions, and before the first turn: nothing to regenerate).
   */
  lastInput?: { fromSeq: number; toSeq: number };
  /** Regenerated turns so far: folded into the call keys minted after the first (absent: none). */
  regenerations?: number;
  /** A regenerate request accepted and not yet taken into a turn. */
  regenerate?: { requestId: string; sentBy?: string };
}

/** A call that settled as `effect_unknown`: it started, did not report back, and its tool is not idempotent. */
export interface UnknownEffect {
  toolCallId: string;
  /** Effect key of the call instance. */
  callKey: string;
  toolName: string;
  /** Why it did not report back (timed out, worker lost). */
  why: string;
  /** When it settled (ISO 8601, workflow time). */
  settledAt: string;
}
