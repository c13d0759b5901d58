/**
 * The first stage of a model call: who answers (the conversation's agent),
 * with which settings and model, what it is offered (tools, handoffs, a typed
 * output) and which guardrails check it. Nothing is read or written yet.
 */
import type { Context } from '@temporalio/activity';
import type { Attributes } from '@opentelemetry/api';
import { ApplicationFailure } from '@temporalio/common';
import { ActivityErrorType, type ModelCallInput } from '../../contract/activities';
import type { ModelSettings } from '../../contract/conversation-input';
import type { ModelApi } from '../../contract/model-api';
import { describeUnsendableModelSettings } from '../../contract/provider-rules';
import { resolveOutputSpec, type ResolvedOutput } from '../../common/typed-output';
import type { AgentTables } from '../../db/schema';
import type { Agent, AgentRegistry } from '../../tools/agents';
import type { GuardrailContext } from '../../tools/guardrails';
import type { ToolRegistry } from '../../tools/registry';
import type { ModelActivityDeps } from '../deps';
import { guardrailContext, type ApplicableGuardrails } from '../guardrails';
import { turnRegistry } from '../mcp-tools';
import { toolOffer, type ToolOffer } from './offer';
import { enabledHandoffs } from './handoffs';
import { modelApiOf } from './responses-completion';

/** What every stage of the model activity shares: built once per worker, not per call. */
export interface ModelEnv {
  deps: ModelActivityDeps;
  tables: AgentTables;
  /** The guardrails that apply to a call answered by `speaker` (undefined: one unnamed agent). */
  guardrailsOf(speaker: Agent | undefined): ApplicableGuardrails;
}

/** One model call as the later stages see it: decided here, never changed after. */
export interface PreparedCall {
  activity: Context;
  input: ModelCallInput;
  /** The agent that answers; undefined for a conversation of one unnamed agent. */
  speaker: Agent | undefined;
  /** The conversation's settings, overridden by the agent's own. */
  settings: ModelSettings;
  model: string;
  /** Names this call's answer across attempts: the workflow run and the activity id. */
  responseKey: string;
  registry: ToolRegistry;
  offer: ToolOffer;
  output: ResolvedOutput | undefined;
  guards: ApplicableGuardrails;
  guardContext: GuardrailContext;
  spanAttributes: Attributes;
}

/**
 * Decides who answers and with what. Fails for good when the conversation's
 * agent is not on this worker, its settings hold what the provider would
 * refuse, or its typed output cannot be used.
 */
export async function prepareModelCall(env: ModelEnv, activity: Context, input: ModelCallInput): Promise<PreparedCall> {
  const { deps } = env;
  const { info } = activity;
  const speaker = currentAgent(deps.agents, input.agent ?? deps.defaultAgent, input.conversationId);
  const settings = speaker
    ? { ...input.settings, ...speaker.modelSettings, ...(speaker.model ? { model: speaker.model } : {}) }
    : input.settings;
  const model = settings.model ?? deps.model.name;
  refuseUnsendableSettings(settings, modelApiOf(settings.api, deps.model.api), input.conversationId, speaker);
  const responseKey = `${info.workflowExecution?.runId ?? 'standalone'}/${info.activityId}`;
  const registry = await turnRegistry(deps.tools, deps.mcp, input.toolset);
  const handoffScope = { conversationId: input.conversationId, signal: activity.cancellationSignal };
  return {
    activity,
    input,
    speaker,
    settings,
    model,
    responseKey,
    registry,
    offer: toolOffer(registry, deps.agents, speaker, input, await enabledHandoffs(deps.agents, speaker, handoffScope)),
    output: typedOutput(deps.agents, speaker, input),
    guards: env.guardrailsOf(speaker),
    guardContext: guardrailContext(deps, input.conversationId, speaker?.name, settings.api),
    spanAttributes: {
      'agent.conversation_id': input.conversationId,
      'agent.model': model,
      'agent.attempt': info.attempt,
      ...(speaker ? { 'agent.name': speaker.name } : {}),
    },
  };
}

/**
 * Fails the call for good, before anything is sent, when its settings (the conversation's, the agent's over them) hold
 * what the provider of `api` (the one the call speaks, the worker's own when neither says) would refuse: the same check
 * the client and the API make on the API an input names.
 */
function refuseUnsendableSettings(
  settings: ModelSettings,
  api: ModelApi,
  conversationId: string,
  speaker: Agent | undefined,
): void {
  const problems = describeUnsendableModelSettings(settings, api);
  if (problems.length === 0) return;
  const whose = speaker?.modelSettings
    ? `the conversation's input.model with agent "${speaker.name}"'s modelSettings over it`
    : "the conversation's input.model";
  throw ApplicationFailure.nonRetryable(
    `Conversation ${conversationId}: nothing was sent to the model, whose provider would refuse these settings (${whose}): ` +
      `${problems.join('; ')}.`,
    ActivityErrorType.ModelRequestRejected,
  );
}

/**
 * The agent of the conversation now (its own, else the worker's default); a name the worker does not know fails the
 * call for good, saying which it knows.
 */
function currentAgent(
  agents: AgentRegistry | undefined,
  name: string | undefined,
  conversationId: string,
): Agent | undefined {
  if (name === undefined) return undefined;
  const found = agents?.get(name);
  if (found) return found;
  const known = agents?.names() ?? [];
  throw ApplicationFailure.nonRetryable(
    `Conversation ${conversationId} is with agent "${name}", which this worker does not have ` +
      `(${known.length > 0 ? `its agents: ${known.join(', ')}` : 'it has no agents'}). Declare it with agent({...}) in the plugin's agents ` +
      "(or the tools module's agents export) on every worker of the task queue.",
    ActivityErrorType.UnknownAgent,
  );
}

/** Conversations' typed outputs, resolved once per schema (a few distinct ones in practice). */
const resolvedSpecs = new Map<string, ResolvedOutput>();

/**
 * The typed output this call asks for: the current agent's `outputType`,
 * else the conversation's `output`. A conversation's schema that cannot be
 * compiled fails the call for good, saying why.
 */
function typedOutput(
  agents: AgentRegistry | undefined,
  speaker: Agent | undefined,
  input: ModelCallInput,
): ResolvedOutput | undefined {
  const own = speaker ? agents?.outputOf(speaker) : undefined;
  if (own || !input.output) return own;
  const key = JSON.stringify(input.output);
  let resolved = resolvedSpecs.get(key);
  if (!resolved) {
    try {
      resolved = resolveOutputSpec(input.output);
    } catch (err) {
      throw ApplicationFailure.nonRetryable(
        `Conversation ${input.conversationId}: ${(err as Error).message}`,
        ActivityErrorType.InvalidOutputSchema,
      );
    }
    resolvedSpecs.set(key, resolved);
    if (resolvedSpecs.size > 64) resolvedSpecs.delete(resolvedSpecs.keys().next().value!);
  }
  return resolved;
}
