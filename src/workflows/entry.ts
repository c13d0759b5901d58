/**
 * The package's `./workflow` entry, safe in Temporal's workflow sandbox: the
 * conversation workflow (re-export it from your workflows module), its
 * signals, update, query and search attribute keys, and the types of its
 * input, state and decisions.
 *
 * ```ts
 * // src/workflows.ts of a team's worker
 * export { agentConversation } from 'durable-agent-worker/workflow';
 * ```
 *
 * @packageDocumentation
 */
export { agentConversation } from './conversation';
export {
  cancelTurnSignal,
  CONVERSATION_SEARCH_ATTRIBUTES,
  decisionSignal,
  decisionUpdate,
  endConversationSignal,
  stateQuery,
  userMessageSignal,
  type ApprovalDecision,
  type ConversationInput,
  type ConversationState,
  type ConversationStatus,
} from '../contract';
