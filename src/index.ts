/**
 * The package's main entry, for the worker side: {@link DurableAgentPlugin}
 * for a team's own Temporal worker, `tool()` and `agent()` to declare tools and agents,
 * `approvalPolicy()` to say who decides their calls, and the errors a tool or a start throws. Other entries:
 * `durable-agent-worker/workflow` (the workflow sandbox),
 * `durable-agent-worker/client` (anywhere, with payload encryption),
 * `durable-agent-worker/api` (the HTTP API) and
 * `durable-agent-worker/testing` (the scripted model server for tests).
 *
 * @packageDocumentation
 */
export { DurableAgentPlugin, WORKFLOW_INTERCEPTOR_MODULES } from './worker/plugin';
export type { DurableAgentModelOptions, DurableAgentPluginOptions } from './worker/plugin-options';
export { tool, type Tool, type ToolContext } from './tools/tool';
export { waitForEvent } from './tools/wait-for-event';
export { comeBackLater } from './tools/come-back-later';
export { agent, type Agent } from './tools/agents';
// A standalone needsApproval or guardrail names its context; options of handoff() and asTool() are inferred.
export type { ToolCallContext } from './tools/call-context';
export { handoff } from './tools/handoff';
export { guardrail, type Guardrail } from './tools/guardrails';
// Who decides each tool call: rules that ask a person (of some groups, N of them), allow or deny without asking.
export { approvalPolicy } from './policies/approval-policy';
export { AgentError, ToolEffectUnknownError, ToolError } from './common/errors';
export { SearchAttributeLimitError } from './worker/search-attributes';
export { migrate } from './db/migrations';
export { agentHistogramBuckets } from './contract/metrics';
