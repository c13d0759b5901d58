/**
 * What a check of one tool call sees besides its arguments: a tool's or an
 * agent tool's `needsApproval` function, an agent tool's `inputBuilder`, and
 * a tool guardrail. Each runs in the model call's activity, where I/O is
 * allowed, when the call is planned; what it decided is part of the plan the
 * workflow records, so a replay never runs it again.
 */
import type { ChatMessage } from '../contract/messages';

/** The conversation, the turn and the call a check is about. */
export interface ToolCallContext {
  /** The conversation whose model asked for the call. */
  conversationId: string;
  /**
   * The top-level conversation (a person's): the same as `conversationId`,
   * except in the child conversation of an agent called as a tool.
   */
  rootConversationId: string;
  /**
   * Who asked: the senders of the turn's messages (in a child conversation,
   * of the top-level turn's). Empty when the messages named no sender.
   */
  requestedBy: readonly string[];
  /** The agent whose model asked for the call, for conversations with named agents. */
  agent?: string;
  /** The provider's id of the call. */
  toolCallId: string;
  /**
   * The messages the model read before it asked for the call (the
   * conversation's transcript, without the answer that holds the call),
   * read from PostgreSQL on the first call of this function, not before.
   */
  messages(): Promise<ChatMessage[]>;
  /** Aborted when the check runs out of time or the activity is cancelled. */
  signal: AbortSignal;
}

/**
 * Whether a person must approve a call first: always, never, or as a
 * function of the (checked) arguments and the call's context, which may be
 * async (`async (args, ctx) => args.amount > (await lifetimeValue(args.customerId))`).
 * A function that throws, or takes longer than {@link APPROVAL_CHECK_TIMEOUT_MS},
 * counts as `true`: the call waits for a person, and the worker logs why.
 */
export type NeedsApproval<Args> = boolean | ((args: Args, context: ToolCallContext) => boolean | Promise<boolean>);

/** How long a `needsApproval` function may take before the call waits for a person instead. */
export const APPROVAL_CHECK_TIMEOUT_MS = 10_000;
