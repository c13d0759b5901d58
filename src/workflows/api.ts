/**
 * The conversation workflow's public surface: its signals, update, query and
 * search attributes, beside the contract's plain data types and validators
 * (`src/core/contract.ts`, re-exported here). Defined once, imported by the
 * workflow and by clients. Workflow-safe: no I/O, no Node imports.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ApprovalDecision, CancelTurnRequest, ConversationState, DecisionResult, UserMessage } from '../core/contract';

export * from '../core/contract';

/** A user message. The client uses signal-with-start, so the first message also starts the conversation. */
export const userMessageSignal = defineSignal<[UserMessage]>('userMessage');

/** A decision on tool calls awaiting approval. Invalid or stale decisions change nothing and are listed in the state's `refusedDecisions`. */
export const decisionSignal = defineSignal<[ApprovalDecision]>('decision');

/**
 * The same decision as an update, for callers that want an answer: a decision
 * for an unknown, settled or not-awaiting call is refused with a clear error
 * and changes nothing; a decision id already applied returns `applied: false`.
 */
export const decisionUpdate = defineUpdate<DecisionResult, [ApprovalDecision]>('submitDecision');

/** Cancels the current turn: running calls are interrupted, the rest cancelled; finished results are kept. */
export const cancelTurnSignal = defineSignal<[CancelTurnRequest?]>('cancelTurn');

/** Ends the conversation once the current turn and queued messages are done. */
export const endConversationSignal = defineSignal<[]>('endConversation');

/** The conversation's state. */
export const stateQuery = defineQuery<ConversationState>('state');

/** Search attribute with the conversation's {@link ConversationStatus}. */
export const AgentStatusAttribute = defineSearchAttributeKey('AgentStatus', SearchAttributeType.KEYWORD);

/** Search attribute with the number of tool calls waiting for a person's decision. */
export const PendingApprovalsAttribute = defineSearchAttributeKey('PendingApprovals', SearchAttributeType.INT);

/**
 * Search attribute with the number of tool calls whose effect is unknown
 * (`effect_unknown`), set once there is one: `UnknownEffects > 0` lists the
 * conversations someone should check.
 */
export const UnknownEffectsAttribute = defineSearchAttributeKey('UnknownEffects', SearchAttributeType.INT);

/**
 * Search attribute indexing the calls awaiting approval, for approvers'
 * lists and filters without a query per conversation: `call:<callKey>`,
 * `tool:<toolName>` and `requester:<sentBy>` for each call waiting (empty when
 * none waits). E.g. `PendingApprovalTags = 'tool:issue_refund'`. One
 * KeywordList holds all three, since SQL visibility offers only three lists.
 */
export const PendingApprovalTagsAttribute = defineSearchAttributeKey('PendingApprovalTags', SearchAttributeType.KEYWORD_LIST);

/** Search attribute with the time the oldest call awaiting approval was asked for (unset when none waits). */
export const AwaitingApprovalSinceAttribute = defineSearchAttributeKey('AwaitingApprovalSince', SearchAttributeType.DATETIME);

/**
 * Search attribute with the tokens the whole conversation used (prompt and
 * completion, all runs together), as of its last status change: at least
 * every turn's end. E.g. `AgentTokens > 100000`.
 */
export const AgentTokensAttribute = defineSearchAttributeKey('AgentTokens', SearchAttributeType.INT);

/**
 * Search attribute with what the whole conversation cost in US dollars (the
 * model calls whose model had a price; all runs together), updated with
 * {@link AgentTokensAttribute}. E.g. `AgentCostUsd > 1`.
 */
export const AgentCostUsdAttribute = defineSearchAttributeKey('AgentCostUsd', SearchAttributeType.DOUBLE);

/**
 * Every custom search attribute the workflow sets: the dev server registers
 * these at start, a worker registers the missing ones before it polls
 * (`ensureSearchAttributes`).
 */
export const SEARCH_ATTRIBUTES = [
  AgentStatusAttribute,
  PendingApprovalsAttribute,
  UnknownEffectsAttribute,
  PendingApprovalTagsAttribute,
  AwaitingApprovalSinceAttribute,
  AgentTokensAttribute,
  AgentCostUsdAttribute,
];

/** Failure types the conversation workflow ends with, for clients and readers of the history. */
export const ConversationErrorType = {
  /** The conversation's input broke a rule of {@link describeInvalidInput}; it ended before doing anything. */
  InvalidConversationInput: 'InvalidConversationInput',
} as const;

/** The workflow type name, for clients that start it by name. */
export const CONVERSATION_WORKFLOW_TYPE = 'conversationWorkflow';
