/** The failure types the conversation's activities raise, and the details a store refusal carries. Workflow-safe. */

/** Failure types the activities raise, for retry policies and for readers of the history. */
export const ActivityErrorType = {
  /** The provider refused the request (4xx other than 408/409/429): retrying cannot help. */
  ModelRequestRejected: 'ModelRequestRejected',
  /** The transcript about to be sent breaks the pairing rules: a bug, never sent. */
  InvalidTranscript: 'InvalidTranscript',
  UnknownTool: 'UnknownTool',
  /** The conversation is with an agent this worker does not have. */
  UnknownAgent: 'UnknownAgent',
  InvalidToolArguments: 'InvalidToolArguments',
  /** A tool reported a failure that a retry cannot fix. */
  ToolFailedPermanently: 'ToolFailedPermanently',
  /** A streamed response was cut, truncated or malformed: nothing of it is used; retried. */
  IncompleteModelResponse: 'IncompleteModelResponse',
  /** A stream went silent longer than its idle timeout: abandoned and retried. */
  ModelStreamStalled: 'ModelStreamStalled',
  /** The model's answer has no choice or a tool call without a name: retried. */
  ModelBehavior: 'ModelBehavior',
  /** The provider failed in a way a retry may fix (5xx, 408, 409, 429, network). */
  ModelCallFailed: 'ModelCallFailed',
  /**
   * The request was larger than the model's context window. The model
   * activity fits it tighter and tries once more; a second refusal fails the
   * call as `ModelRequestRejected`.
   */
  ContextLengthExceeded: 'ContextLengthExceeded',
  /** PostgreSQL does not yet hold every message the model call needs: retried. */
  TranscriptIncomplete: 'TranscriptIncomplete',
  /**
   * A tool that is not idempotent cannot tell whether its effect applied (e.g.
   * its MCP server's connection closed mid-call): settled as `effect_unknown`.
   */
  ToolEffectUnknown: 'ToolEffectUnknown',
  /** A guardrail threw: retried by the activity's policy; the message names the guardrail. */
  GuardrailFailed: 'GuardrailFailed',
  /** A conversation's typed output schema (`ConversationInput.output`) cannot be compiled. */
  InvalidOutputSchema: 'InvalidOutputSchema',
  /** A conversation names an MCP server this worker does not have. */
  UnknownMcpServer: 'UnknownMcpServer',
  /** A conversation would offer more tools than providers accept. */
  TooManyTools: 'TooManyTools',
  /** An MCP server could not be reached under its reconnect policy: nothing was sent to it. */
  McpServerUnreachable: 'McpServerUnreachable',
  /**
   * PostgreSQL refused a value (a constraint, data it cannot hold): no retry
   * can fix it. The failure's details name the refused seqs
   * ({@link StoreRefusedDetails}) when it was a transcript write.
   */
  StoreRefused: 'StoreRefused',
  /**
   * The write came from a workflow run that a later run of the conversation
   * displaced (a late activity of a run abandoned by a reset): nothing of it
   * is stored, and no retry can change that.
   */
  RunDisplaced: 'RunDisplaced',
  /**
   * The attempt's worker stopped without shutting down (killed, its host
   * lost), and another worker failed the attempt so that it is retried at
   * once (lost-worker takeover). Like a heartbeat timeout, the attempt was
   * cut off: its effect may have applied.
   */
  WorkerLost: 'WorkerLost',
  /**
   * The budget the call draws on (its top-level conversation's, shared with
   * every agent called below it) is spent: the call was not made. The turn
   * ends as `budget_exceeded`.
   */
  BudgetExceeded: 'BudgetExceeded',
} as const;

/**
 * The details of a `StoreRefused` failure of a transcript write: the seqs PostgreSQL refused (the others of the write
 * are stored).
 */
export interface StoreRefusedDetails {
  refusedSeqs: number[];
}
