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
import { createToolDiscoveryActivity } from './mcp-tools';
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
    verifyDecision: async ({ conversationId, decision }) => verifyDecision(deps.decisionTrust ?? { keys: [] }, conversationId, decision),
    discoverTools: createToolDiscoveryActivity(deps),
  };
}

/** The activities under the types a worker registers them as: `durableAgent.<name>`. */
export function activityRegistrations(activities: ConversationActivities): Record<string, ConversationActivities[keyof ConversationActivities]> {
  return Object.fromEntries(CONVERSATION_ACTIVITY_NAMES.map((name) => [conversationActivityType(name), activities[name]]));
}
