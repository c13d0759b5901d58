/**
 * A finished turn as the conversation keeps it ({@link TurnRecord}: how it
 * ended, its answer, its typed output), and the tokens and cost counted for a
 * turn and for the whole conversation. Types only; workflow-safe.
 */
import type { GuardrailResult } from './guardrail-results';

/** A finished turn, kept so clients can find the answer to their message. */
export interface TurnRecord {
  /** Ids of the user messages this turn answered. */
  messageIds: string[];
  /** Seq of the turn's first message (absent from records of older workflow code). */
  firstSeq?: number;
  /**
   * The regenerate request whose turn replaced this turn's messages after its user messages: they are superseded
   * (readable as superseded messages, reason `regenerate`), and `answerSeq` no longer holds this turn's answer.
   */
  supersededBy?: string;
  /**
   * `answered`: a final answer. `failed`: the model call failed or maxSteps ran out.
   * `cancelled`: stopped by a cancel request. `interrupted`: stopped by a new user message.
   * `budget_exceeded`: a limit of {@link ConversationInput.budget} was reached before a model call.
   * `invalid_output`: a typed output was asked for and the model's answers did not match it
   * within its retries (`error` says how the last one failed; `answerSeq` is that answer).
   * `guardrail_tripped`: an input guardrail stopped the turn before any model call, or an
   * output guardrail withheld the answer (`guardrail` says which; `answerSeq` is the note
   * stored in the answer's place, which the user and the model read).
   */
  outcome:
    'answered' | 'failed' | 'cancelled' | 'interrupted' | 'budget_exceeded' | 'invalid_output' | 'guardrail_tripped';
  /** The guardrail that stopped the turn (`guardrail_tripped`). */
  guardrail?: GuardrailTrip;
  /**
   * What each input and output guardrail said in the turn (its latest verdict), in the order they first ran: tripped
   * or not, with its `outputInfo`. Absent when none ran (and in records of older workflow code).
   */
  guardrails?: GuardrailResult[];
  /** Seq of the final assistant message, when the turn answered (or its last answer did not match a typed output). */
  answerSeq?: number;
  /**
   * The typed output (see {@link ConversationInput.output}), parsed from the
   * answer and checked against the schema, when the turn answered with one
   * whose JSON is at most 4,096 characters.
   */
  output?: unknown;
  /**
   * True when the typed output was checked but is too large for the record: parse the answer at `answerSeq`
   * (`AgentClient.ask` does).
   */
  outputInAnswer?: boolean;
  /** Why the turn failed. */
  error?: string;
  /** Model calls made in the turn. */
  steps: number;
  /** Who sent the turn's messages (their `sentBy`), when any said. */
  requestedBy?: string[];
  /**
   * Tokens the provider counted over the turn's model calls, when it reported them, and their cost when the model has a
   * price.
   */
  usage?: TurnUsage;
}

/** A guardrail that stopped a turn: where it ran, its name and its reason. */
export interface GuardrailTrip {
  on: 'input' | 'output';
  guardrail: string;
  reason: string;
}

/** Tokens of a turn, and what they cost in US dollars when every call's model had a price. */
export interface TurnUsage extends TokenUsage {
  costUsd?: number;
}

/** Tokens and cost of a whole conversation. */
export interface ConversationUsage extends TokenUsage {
  /** US dollars, over the model calls whose model had a price. */
  costUsd: number;
  /** Model calls whose model had no price (their cost is not in `costUsd`). */
  unpricedCalls: number;
}

/** Tokens a provider counted: prompts sent and completions received. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}
