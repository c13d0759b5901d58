// The team's workflows module: its own workflows, and the conversation workflow in one line.
export { agentConversation } from 'durable-agent-worker/workflow';
