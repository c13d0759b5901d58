/**
 * The package's main entry, for the worker side: {@link DurableAgentPlugin}
 * for a team's own Temporal worker, `tool()` to declare tools, and the
 * project's errors. Other entries: `durable-agent-worker/workflow` (workflow
 * sandbox), `durable-agent-worker/client` (anywhere), and
 * `durable-agent-worker/testing` (the scripted model server for tests).
 *
 * @packageDocumentation
 */
export { DurableAgentPlugin, WORKFLOW_INTERCEPTOR_MODULES, WORKFLOWS_PATH } from './runtime/plugin';
export type { DurableAgentModelOptions, DurableAgentPluginOptions } from './runtime/plugin-options';
export { WORKER_LOST_ERROR_TYPE, type LostWorkerOptions } from './runtime/lost-workers';
export { tool, ToolEffectUnknownError, ToolError, TOOL_DEFAULTS, type Tool, type ToolContext, type ToolDefinition } from './tools/tool';
export {
  DEFAULT_MCP_RECONNECT,
  MCP_EFFECT_KEY_CAPABILITY,
  MCP_EFFECT_KEY_META,
  type McpApprovalMode,
  type McpApprovalRules,
  type McpHttpServerConfig,
  type McpReconnectPolicy,
  type McpServerConfig,
  type McpServers,
  type McpStdioServerConfig,
} from './mcp/protocol';
export { migrate } from './db/migrations';
export {
  ensureSearchAttributes,
  SearchAttributeLimitError,
  type SearchAttributeOptions,
  type SearchAttributeRegistration,
} from './runtime/search-attributes';
export { ACTIVITY_TYPE_PREFIX, conversationActivityType, type ConversationActivityName } from './activities/contracts';
export {
  AgentError,
  ConfigError,
  ConversationClosedError,
  DecisionRefusedError,
  EncryptedPayloadError,
  InvalidConversationInputError,
  MessageTooLargeError,
} from './errors';
export { AGENT_METRICS, agentHistogramBuckets, type MetricSpec } from './core/metrics';
export {
  AesGcmPayloadCodec,
  encryptingDataConverter,
  ENCRYPTED_ENCODING,
  ENCRYPTING_FAILURE_CONVERTER_PATH,
  KeylessPayloadCodec,
  parsePayloadKeys,
  type PayloadKey,
} from './codec';
