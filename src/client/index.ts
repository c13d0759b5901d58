/** Client side of the durable agent worker. */
export { AgentClient, ConversationClosedError, type AgentClientOptions, type SendMessageOptions, type TurnAnswer } from './client';
export { formatTranscript } from './format';
