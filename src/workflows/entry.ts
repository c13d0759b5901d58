/**
 * The package's `./workflow` entry, safe in Temporal's workflow sandbox: the
 * conversation workflow (re-export it from your workflows module), its
 * signals, update, query and search attributes, and the contract's types.
 *
 * ```ts
 * // src/workflows.ts of a team's worker
 * export { agentConversation } from 'durable-agent-worker/workflow';
 * ```
 *
 * @packageDocumentation
 */
export { agentConversation } from './conversation';
export * from './api';
