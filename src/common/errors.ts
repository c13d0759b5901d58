/**
 * The project's errors: one base class, narrow subclasses, each message
 * naming the thing, the value and the way out. Pure module, safe anywhere.
 */

/** Base of every error the project throws on purpose. */
export abstract class AgentError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** An environment variable has a value the worker cannot use. */
export class ConfigError extends AgentError {}

/** A conversation's start options are invalid. */
export class InvalidConversationInputError extends AgentError {}

/** Why going back was refused: the API's error code for it, too. */
export type GoingBackRefusal = 'fork_point_outside' | 'conversation_exists' | 'regenerate_refused';

/**
 * A fork or a regeneration was refused, and nothing changed: `fork_point_outside` (the fork point names no place in
 * the source's transcript), `conversation_exists` (the fork's id is taken), `regenerate_refused` (a turn runs, nothing
 * to regenerate, the conversation is ending). The message says why and what to do.
 */
export class GoingBackRefusedError extends AgentError {
  constructor(
    readonly code: GoingBackRefusal,
    message: string,
  ) {
    super(message);
  }
}

/** A conversation has ended and takes no more messages. */
export class ConversationClosedError extends AgentError {
  constructor(conversationId: string) {
    super(
      `Conversation ${conversationId} has ended and cannot take new messages. Start a new conversation with another id.`,
    );
  }
}

/**
 * A message was sent to a child conversation: one that runs an agent called as a tool, which answers only the task its
 * caller gave it. Nothing was sent; the message names the conversation to write to.
 */
export class ChildConversationError extends AgentError {
  constructor(
    readonly conversationId: string,
    /** The conversation whose tool call runs this one. */
    readonly parentConversationId: string,
    /** The top-level conversation (a person's): where messages go. */
    readonly rootConversationId: string,
  ) {
    const caller =
      parentConversationId === rootConversationId ? '' : ` (its caller ${parentConversationId} is a child too)`;
    super(
      `Conversation ${conversationId} runs an agent called as a tool by conversation ${parentConversationId} and answers only that task; it takes no messages. ` +
        `Send your message to the top-level conversation ${rootConversationId}${caller}. Nothing was sent.`,
    );
  }
}

/**
 * A payload is encrypted and cannot be read here: this process has no key for it, or it fails authentication (altered,
 * or another key).
 */
export class EncryptedPayloadError extends AgentError {}

/** A conversation refused a decision (unknown, settled or not-awaiting call); nothing changed. */
export class DecisionRefusedError extends AgentError {}

/** Thrown by a tool for a failure a retry cannot fix (e.g. "order not found"): no further attempts. */
export class ToolError extends AgentError {}

/**
 * Thrown by a tool that is not idempotent when it cannot tell whether its
 * effect applied (it sent the request, then lost the answer): the call
 * settles as `effect_unknown`, and the model is told to check before trying
 * again. An idempotent tool's call settles as failed.
 */
export class ToolEffectUnknownError extends AgentError {}

/**
 * Text from a person holds a character PostgreSQL cannot store (U+0000, an
 * unpaired surrogate); nothing was sent. The message names the field, the
 * character and its offset.
 */
export class UnstorableTextError extends AgentError {}

/**
 * A message (or another input) larger than its limit; nothing was sent. The message names the size, the limit and what
 * to do.
 */
export class MessageTooLargeError extends AgentError {
  constructor(
    message: string,
    readonly bytes: number,
    readonly limitBytes: number,
  ) {
    super(message);
  }
}

/**
 * A turn's typed output does not parse with the schema the caller gave
 * `AgentClient.ask` (the conversation was started with another schema): the
 * turn answered, its record and answer are on the error.
 */
export class OutputMismatchError extends AgentError {
  constructor(
    message: string,
    readonly turn: unknown,
    readonly answer: string | undefined,
  ) {
    super(message);
  }
}
