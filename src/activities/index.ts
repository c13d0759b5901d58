/**
 * Activities: everything the conversation does with I/O. Built by a factory
 * from real dependencies, so tests pass theirs instead of mocking modules.
 */
import { CONVERSATION_ACTIVITY_NAMES, conversationActivityType, type ConversationActivities } from '../contract/activities';
import { createModelActivity } from './model';
import { createToolActivity } from './tools';
import { recordDecision } from '../db/transcript-store';
import { appendMessagesListingWaits } from '../db/approval-store';
import { agentTables } from '../db/schema';
import { verifyDecision } from '../common/decision-signing';
import { createToolDiscoveryActivity, turnRegistry } from './mcp-tools';
import { checkToolCall } from './tool-calls';
import { failOnRefusal } from './store-failures';
import type { ActivityDeps } from './deps';

/** Builds the activities registered on the worker. Throws a `ConfigError` when `schema` is not a usable name. */
export function createActivities(deps: ActivityDeps): ConversationActivities {
  const tables = agentTables(deps.schema);
  return {
    appendMessages: (input) => failOnRefusal(() => appendMessagesListingWaits(deps.pool, tables, input)),
    callModel: createModelActivity(deps),
    runTool: createToolActivity(deps),
    recordDecision: (record) => failOnRefusal(() => recordDecision(deps.pool, tables, record)),
    verifyDecision: async ({ conversationId, decision, edit }) => {
      const verdict = verifyDecision(deps.decisionTrust ?? { keys: [] }, conversationId, decision);
      if (verdict.refusal || !edit) return verdict;
      const refusal = await describeRefusedEdit(deps, edit, decision.arguments);
      return refusal ? { ...verdict, refusal } : verdict;
    },
    discoverTools: createToolDiscoveryActivity(deps),
  };
}

/** Why an edit's new arguments cannot run (they do not fit the tool's schema, zod or an MCP server's JSON Schema); undefined when they can. */
async function describeRefusedEdit(deps: ActivityDeps, edit: { toolName: string; toolset?: string }, args: unknown): Promise<string | undefined> {
  const registry = await turnRegistry(deps.tools, deps.mcp, edit.toolset);
  const checked = checkToolCall(registry, undefined, edit.toolName, JSON.stringify(args ?? null));
  if (checked.ok) return undefined;
  return `Edit refused: the new arguments do not fit ${edit.toolName}: ${checked.message} Nothing changed; the call still waits for a decision.`;
}

/** The activities under the types a worker registers them as: `durableAgent.<name>`. */
export function activityRegistrations(activities: ConversationActivities): Record<string, ConversationActivities[keyof ConversationActivities]> {
  return Object.fromEntries(CONVERSATION_ACTIVITY_NAMES.map((name) => [conversationActivityType(name), activities[name]]));
}
