/**
 * Activities: everything the conversation does with I/O. Built by a factory
 * from real dependencies, so tests pass theirs instead of mocking modules.
 */
import type OpenAI from 'openai';
import type { Pool } from 'pg';
import type { ToolRegistry } from '../tools/registry';
import { CONVERSATION_ACTIVITY_NAMES, conversationActivityType, type ConversationActivities } from './contracts';
import { createModelActivity } from './model';
import { createToolActivity } from './tools';
import { recordDecision } from '../db/transcript-store';
import { appendMessagesListingWaits } from '../db/approval-store';
import { agentTables } from '../db/schema';
import { verifyDecision, type DecisionTrust } from './decision-signing';
import { createToolDiscoveryActivity, type McpToolsets } from './mcp-tools';
import { failOnRefusal } from './store-failures';
import type { ModelPrices } from '../core/pricing';

/** What the activities need. */
export interface ActivityDeps {
  pool: Pool;
  openai: OpenAI;
  tools: ToolRegistry;
  /** Model used when a conversation names none. */
  defaultModel: string;
  /** Context window in tokens when a conversation does not set one; known per model name when unset. */
  contextWindow?: number;
  /** Tool results longer than this travel through workflow history as a preview only. Default 4096. */
  inlineResultLimit?: number;
  /** Tool calls of one response that run; the rest are answered with an error the model reads. Default 16. */
  maxParallelToolCalls?: number;
  /** PostgreSQL schema of the project's tables (a plain lowercase SQL identifier). Default `durable_agent`. */
  schema?: string;
  /** Keys that authenticate decisions, and whether unsigned ones are refused. Default: none (decisions apply, recorded as unauthenticated). */
  decisionTrust?: DecisionTrust;
  /** Prices by model name (US dollars per million tokens): model calls report their cost. */
  prices?: ModelPrices;
  /** The worker's MCP servers and their tools (`McpToolsets`); unset: the worker has none. */
  mcp?: McpToolsets;
}

/** Builds the activities registered on the worker. Throws a `ConfigError` when `schema` is not a usable name. */
export function createActivities(deps: ActivityDeps): ConversationActivities {
  const tables = agentTables(deps.schema);
  return {
    appendMessages: (input) => failOnRefusal(() => appendMessagesListingWaits(deps.pool, tables, input)),
    callModel: createModelActivity(deps),
    runTool: createToolActivity(deps),
    recordDecision: (record) => failOnRefusal(() => recordDecision(deps.pool, tables, record)),
    verifyDecision: async ({ conversationId, decision }) => verifyDecision(deps.decisionTrust ?? { keys: [] }, conversationId, decision),
    discoverTools: createToolDiscoveryActivity(deps),
  };
}

/**
 * The activities under the types a worker registers: `durableAgent.<name>`,
 * and, when `bare`, also `<name>`, which conversations begun before the
 * prefixed types schedule until they continue as new.
 */
export function activityRegistrations(
  activities: ConversationActivities,
  options: { bare: boolean },
): Record<string, ConversationActivities[keyof ConversationActivities]> {
  return Object.fromEntries(
    CONVERSATION_ACTIVITY_NAMES.flatMap((name) => [
      [conversationActivityType(name), activities[name]],
      ...(options.bare ? [[name, activities[name]]] : []),
    ]),
  );
}

export type * from './contracts';
export { ActivityErrorType, ACTIVITY_TYPE_PREFIX, CONVERSATION_ACTIVITY_NAMES, conversationActivityType } from './contracts';
export { readTranscript, type StoredMessage } from '../db/transcript-store';
export { agentTables, DEFAULT_DATABASE_SCHEMA, type AgentTables } from '../db/schema';
export { createOpenAIClient, type ModelEndpoint } from './openai-client';
export { parseDecisionKeys, readDecisionKeyFile, signDecision, type DecisionKey, type DecisionTrust } from './decision-signing';
