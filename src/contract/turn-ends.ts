/**
 * The end of a turn that waited for a person, as the workflow hands it to
 * `announceTurnEnd`, which writes it as a `turn.ended_after_wait`
 * notification (docs/notifications.md). Types only; workflow-safe.
 */
import type { TurnRecord } from './turn-records';

/** A call of the turn that waited for a person's decision. */
export interface WaitedCall {
  /** The call's effect key: the key a decision names. */
  callKey: string;
  /** The provider's id of the call. */
  toolCallId: string;
  toolName: string;
}

/** A turn that waited for a person, ended: announced once (its `turnId`). */
export interface TurnEndNotice {
  conversationId: string;
  /** Minted by the workflow for this turn: a retried announcement writes one event. */
  turnId: string;
  /** The turn's number in the conversation, from 1 (across continue-as-new). */
  turn: number;
  outcome: TurnRecord['outcome'];
  /** Why it did not answer (failed, cancelled, interrupted, ...). */
  error?: string;
  /** Seq of its final answer, when it answered. */
  answerSeq?: number;
  /** Who sent the turn's messages. */
  requestedBy?: string[];
  /** The turn's calls that waited for a person, in the order they were asked for. */
  waited: WaitedCall[];
  /** Workflow time of the end, ms since the epoch. */
  endedAt: number;
}
