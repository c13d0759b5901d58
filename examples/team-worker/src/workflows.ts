// The team's workflows module: its own workflows, and the conversation workflow in one line.
export { conversationWorkflow } from 'durable-agent-worker/workflow';
