/** Workflow entry point, bundled into Temporal's sandbox. Only workflow functions are exported here. */
export { agentConversation } from './conversation';
