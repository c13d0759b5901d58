/**
 * Activities: everything the conversation does with I/O. Built by a factory
 * from real dependencies, so tests pass theirs instead of mocking modules.
 */
import {
  CONVERSATION_ACTIVITY_NAMES,
  conversationActivityType,
  type ConversationActivities,
  type VerifyDecisionInput,
} from '../contract/activities';
import { guardrailsByAgent, toolGuardrailsOf, toolVerdict, type ApplicableGuardrails } from './guardrails';
import { createModelActivity } from './model';
import { editCheckContext } from './model/call-checks';
import { createToolActivity } from './tools';
import { recordDecision } from '../db/decision-store';
import { recordGrantRevocation } from '../db/grants';
import { appendMessagesListingWaits } from '../db/approval-store';
import { recordEscalation, escalationPayload } from '../db/escalations';
import { enqueueNotification } from '../db/outbox';
import { announceTurnEnd } from '../db/turn-end-notices';
import { registerEventWait } from '../db/event-waits';
import { agentTables } from '../db/schema';
import { verifyDecision } from '../common/decision-signing';
import { turnRegistry } from './mcp-tools';
import { createToolDiscoveryActivity } from './tool-discovery';
import { checkToolCall } from './tool-calls';
import { failOnRefusal } from './store-failures';
import { writingRun } from './activity-context';
import type { ActivityDeps } from './deps';
import type { Agent } from '../tools/agents';

/** Builds the activities registered on the worker. Throws a `ConfigError` when `schema` is not a usable name. */
export function createActivities(deps: ActivityDeps): ConversationActivities {
  const tables = agentTables(deps.schema);
  const guardrailsOf = guardrailsByAgent(deps.guardrails);
  return {
    appendMessages: (input) => failOnRefusal(() => appendMessagesListingWaits(deps.pool, tables, input, writingRun())),
    callModel: createModelActivity(deps),
    runTool: createToolActivity(deps),
    recordDecision: (record) => failOnRefusal(() => recordDecision(deps.pool, tables, record, writingRun())),
    recordGrantRevocation: (record) => recordGrantRevocation(deps.pool, tables, record),
    recordEscalation: async (record) => {
      // The step is announced (call.escalated) in the transaction that records it, once per step.
      await recordEscalation(deps.pool, tables, record, async (client) => {
        await enqueueNotification(client, tables, {
          type: 'call.escalated',
          conversationId: record.conversationId,
          callKey: record.callKey,
          payload: { escalation: escalationPayload(record) },
        });
      });
    },
    announceTurnEnd: async (notice) => void (await announceTurnEnd(deps.pool, tables, notice)),
    registerEventWait: (input) => registerEventWait(deps.pool, tables, input),
    verifyDecision: async ({ conversationId, decision, edit }) => {
      const verdict = verifyDecision(deps.decisionTrust ?? { keys: [] }, conversationId, decision);
      if (verdict.refusal || !edit) return verdict;
      const refusal = await describeRefusedEdit(deps, guardrailsOf, edit, conversationId, decision.arguments);
      return refusal ? { ...verdict, refusal } : verdict;
    },
    discoverTools: createToolDiscoveryActivity(deps),
  };
}

/**
 * Why an edit's new arguments cannot run: they do not fit the tool's schema
 * (zod or an MCP server's JSON Schema), or a tool guardrail blocks them (an
 * edit never gets past a guardrail the model's arguments would meet).
 * Undefined when they can.
 */
async function describeRefusedEdit(
  deps: ActivityDeps,
  guardrailsOf: (speaker: Agent | undefined) => ApplicableGuardrails,
  edit: NonNullable<VerifyDecisionInput['edit']>,
  conversationId: string,
  args: unknown,
): Promise<string | undefined> {
  const registry = await turnRegistry(deps.tools, deps.mcp, edit.toolset);
  const checked = checkToolCall(registry, undefined, edit.toolName, JSON.stringify(args ?? null));
  const still = 'Nothing changed; the call still waits for a decision.';
  if (!checked.ok) return `Edit refused: the new arguments do not fit ${edit.toolName}: ${checked.message} ${still}`;
  const speaker = edit.agent !== undefined ? deps.agents?.get(edit.agent) : undefined;
  const guards = toolGuardrailsOf(guardrailsOf(speaker), checked.tool);
  if (guards.length === 0) return undefined;
  const verdict = await toolVerdict(
    guards,
    { toolName: checked.tool.name, arguments: checked.args },
    editCheckContext(deps, conversationId, edit),
  );
  if (verdict.action !== 'block') return undefined;
  return `Edit refused: the guardrail "${verdict.guardrail}" blocks these arguments: ${verdict.reason} ${still}`;
}

/** The activities under the types a worker registers them as: `durableAgent.<name>`. */
export function activityRegistrations(
  activities: ConversationActivities,
): Record<string, ConversationActivities[keyof ConversationActivities]> {
  return Object.fromEntries(
    CONVERSATION_ACTIVITY_NAMES.map((name) => [conversationActivityType(name), activities[name]]),
  );
}
