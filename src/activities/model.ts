/**
 * The model activity: reads the transcript by reference, calls an
 * OpenAI-compatible endpoint, returns the new assistant message with a plan
 * for each tool call.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { ChatMessage, ToolCall } from '../contract/messages';
import { applyPairingRepair, findPairingProblems, type PairingItem } from '../core/pairing';
import type { FunctionToolSpec, ToolRegistry } from '../tools/registry';
import type { Agent, AgentRegistry, AgentTool } from '../tools/agents';
import { parseMcpToolName } from '../mcp/protocol';
import { turnRegistry } from './mcp-tools';
import type { Pool } from 'pg';
import {
  ActivityErrorType,
  DEFAULT_MAX_PARALLEL_TOOL_CALLS,
  TOOL_ARGUMENTS_MAX_BYTES,
  type AssistantMessage,
  type ModelCallInput,
  type ModelCallResult,
  type OutputCheck,
  type ToolCallPlan,
} from '../contract/activities';
import { resolveOutputSpec, type ResolvedOutput } from '../common/typed-output';
import type { Tool } from '../tools/tool';
import type { Guardrail, GuardrailContext } from '../tools/guardrails';
import { firstTrip, guardrailContext, guardrailNote, guardrailsByAgent, toolGuardrailsOf, toolVerdict } from './guardrails';
import {
  appendMessages,
  readModelCallState,
  readTranscript,
  storeModelResponse,
  withholdModelResponse,
  type StoredModelResponse,
} from '../db/transcript-store';
import { withDatabaseRetry } from './database-retry';
import { failOnRefusal } from './store-failures';
import { agentTables, type AgentTables } from '../db/schema';
import { contextWindowOf, fitToContext } from './context-budget';
import { heartbeatWhileRunning, releaseStickyWorker } from './activity-context';
import { DEFAULT_INLINE_LIMIT, inlineOrPreview } from './history-preview';
import { requestCompletion, type ModelCompletion } from './completion';
import { DeltaPublisher } from './deltas';
import { checkToolCall } from './tool-calls';
import { logger } from '../common/logger';
import { TOOL_DEFAULTS } from '../contract/tool-defaults';
import { modelCallMeasured, modelFailureOutcome, modelResponseReused } from './metrics';
import { inSpan } from './tracing';
import { costOf, type ModelPrices } from '../core/pricing';
import { defaultDecisions, type TokenUsage } from '../contract';
import type { ModelActivityDeps } from './deps';

/** Builds the `callModel` activity. */
export function createModelActivity(deps: ModelActivityDeps): (input: ModelCallInput) => Promise<ModelCallResult> {
  const tables = agentTables(deps.schema);
  const guardrailsOf = guardrailsByAgent(deps.guardrails);
  // A value PostgreSQL refuses (in the messages written first, or the answer) fails the call at once as StoreRefused.
  return (input) => failOnRefusal(() => callModel(input));
  async function callModel(input: ModelCallInput): Promise<ModelCallResult> {
    const activity = Context.current();
    releaseStickyWorker(activity);
    const { info } = activity;
    const speaker = currentAgent(deps.agents, input.agent ?? deps.defaultAgent, input.conversationId);
    const settings = speaker ? { ...input.settings, ...speaker.modelSettings, ...(speaker.model ? { model: speaker.model } : {}) } : input.settings;
    const model = settings.model ?? deps.model.name;
    const responseKey = `${info.workflowExecution?.runId ?? 'standalone'}/${info.activityId}`;
    const registry = await turnRegistry(deps.tools, deps.mcp, input.toolset);
    const offer = toolOffer(registry, deps.agents, speaker, input);
    const output = typedOutput(deps.agents, speaker, input);
    const guards = guardrailsOf(speaker);
    const guardContext = guardrailContext(deps, input.conversationId, speaker?.name);
    /**
     * The result the workflow gets: the answer as history carries it, its
     * cost, a plan per tool call and its typed output; or, when a guardrail
     * stopped the turn, the note stored in its place. An output guardrail
     * that trips withholds a final answer here (the stored note replaces it).
     */
    const answer = async (response: StoredModelResponse): Promise<ModelCallResult> => {
      const base = { ...response, ...priced(deps.model.prices, model, response.usage), message: inHistory(response.message, deps, responseKey), responseKey };
      if (response.guardrail) return { ...base, calls: [] };
      const typed = checkedOutput(output, response.message);
      if (isFinal(response.message) && guards.output.length > 0 && typed.output?.ok !== false) {
        const subject = { text: response.message.content ?? '', ...(typed.value !== undefined ? { output: typed.value } : {}) };
        const trip = await firstTrip('output', guards.output, subject, guardContext);
        if (trip) {
          const note = guardrailNote(trip, speaker?.name);
          return answer(await withDatabaseRetry('withhold the answer', () => withholdModelResponse(deps.pool, tables, responseKey, note, trip)));
        }
      }
      const calls = await planToolCalls(registry, deps, offer, response.message, (tool) => toolGuardrailsOf(guards, tool), guardContext);
      return { ...base, calls, ...(typed.output ? { output: typed.output } : {}) };
    };
    const spanAttributes = {
      'agent.conversation_id': input.conversationId,
      'agent.model': model,
      'agent.attempt': info.attempt,
      ...(speaker ? { 'agent.name': speaker.name } : {}),
    };
    const deferred = input.append ?? [];
    if (deferred.length > 0) {
      await withDatabaseRetry('store the messages before the model call', () =>
        appendMessages(deps.pool, tables, { conversationId: input.conversationId, messages: deferred }),
      );
    }
    // Both reads at once: the transcript is wasted only on a retry whose earlier attempt stored its answer.
    const [state, read] = await Promise.allSettled([
      withDatabaseRetry('read a stored model response', () => readModelCallState(deps.pool, tables, responseKey, input.conversationId)),
      withDatabaseRetry('read the transcript', () => loadModelMessages(deps.pool, tables, input)),
    ]);
    if (state.status === 'rejected') throw state.reason;
    const { earlier, calibration } = state.value;
    if (earlier) {
      // An earlier attempt got the answer but did not report it (crash, lost completion): use it, do not pay twice.
      modelResponseReused(model, speaker?.name);
      return inSpan('model call', { ...spanAttributes, 'agent.outcome': 'reused' }, async () => answer(earlier));
    }
    if (read.status === 'rejected') throw read.reason;
    const transcript = read.value;
    if (transcript.turnInput && guards.input.length > 0) {
      // The turn's first call: its user messages meet the input guardrails before the model is asked.
      const trip = await firstTrip('input', guards.input, { messages: transcript.turnInput }, guardContext);
      if (trip) {
        // No model is asked: the note is the turn's answer, stored like one so a retry finds it.
        const note = {
          key: responseKey,
          conversationId: input.conversationId,
          message: guardrailNote(trip, speaker?.name),
          finishReason: 'guardrail',
          guardrail: trip,
        };
        return answer(await withDatabaseRetry('store the guardrail note', () => storeModelResponse(deps.pool, tables, note)));
      }
    }
    const loaded = withInstructions(transcript, speaker);
    const tools = offer.specs;
    const windowTokens = contextWindowOf(model, settings.contextWindow ?? deps.model.contextWindow);
    const attempt = info.attempt;
    const stream = settings.stream !== false && attempt <= (settings.streamFallbackAfterAttempts ?? 2);
    // With an output guardrail, nothing of the answer is sent until it has passed.
    const held = guards.output.length > 0;
    const publisher = new DeltaPublisher(deps.pool, tables, { conversationId: input.conversationId, responseKey, attempt }, held);
    /** Ends the stream, heartbeating while its last pieces are written (a long answer has many). */
    const endStream = async (ok: boolean): Promise<void> => {
      const stopHeartbeats = heartbeatWhileRunning(activity);
      try {
        await publisher.end(ok);
      } finally {
        stopHeartbeats();
      }
    };
    const request = (window: number) => {
      const fitted = fitToContext(loaded.messages, {
        windowTokens: window,
        replyTokens: settings.maxTokens ?? Math.min(4096, Math.floor(window / 8)),
        tools,
        calibration,
        seqs: loaded.seqs,
      });
      const body: ChatCompletionCreateParamsNonStreaming = {
        model,
        messages: fitted.messages as ChatCompletionCreateParamsNonStreaming['messages'],
        ...(settings.temperature !== undefined ? { temperature: settings.temperature } : {}),
        ...(settings.maxTokens !== undefined ? { max_tokens: settings.maxTokens } : {}),
        ...(tools.length > 0 ? { tools, tool_choice: input.toolChoice } : {}),
        ...(output ? { response_format: { type: 'json_schema', json_schema: { name: output.name, schema: output.schema, strict: output.strict } } } : {}),
      };
      return { body, report: { windowTokens: window, ...fitted.report } };
    };
    let sent = request(windowTokens);
    let completion: ModelCompletion;
    const options = { stream, idleTimeoutMs: settings.streamIdleMs ?? 60_000, publisher };
    /** One request to the provider, measured. */
    const complete = (body: ChatCompletionCreateParamsNonStreaming): Promise<ModelCompletion> =>
      inSpan('model call', { ...spanAttributes, 'agent.streamed': stream, 'agent.messages': body.messages.length }, async (span) => {
        const started = Date.now();
        try {
          const done = await requestCompletion(deps.model.client, body, options);
          const costUsd = costOf(deps.model.prices, model, done.usage);
          modelCallMeasured({ model, agent: speaker?.name, outcome: 'ok', streamed: stream, ms: Date.now() - started, usage: done.usage, costUsd });
          span.setAttributes({
            'agent.outcome': 'ok',
            'agent.prompt_tokens': done.usage?.promptTokens ?? 0,
            'agent.completion_tokens': done.usage?.completionTokens ?? 0,
            'agent.tool_calls': done.message.tool_calls?.length ?? 0,
            ...(costUsd === undefined ? {} : { 'agent.cost_usd': costUsd }),
          });
          return done;
        } catch (err) {
          const outcome = modelFailureOutcome(err, activity.cancellationSignal.aborted);
          modelCallMeasured({ model, agent: speaker?.name, outcome, streamed: stream, ms: Date.now() - started });
          span.setAttribute('agent.outcome', outcome);
          throw err;
        }
      });
    try {
      try {
        completion = await complete(sent.body);
      } catch (err) {
        const smaller = smallerWindow(err, sent.report.windowTokens);
        if (smaller === undefined) throw err;
        // The provider counts more than the estimate: fit to what it says, with room to spare, and try once more.
        logger.warn(
          { conversationId: input.conversationId, responseKey, windowTokens: sent.report.windowTokens, retryWithin: smaller },
          'The request was over the context window; fitting it tighter and retrying once',
        );
        sent = request(smaller);
        completion = await complete(sent.body).catch((second: unknown) => {
          throw contextStillExceeded(second, sent.report.windowTokens);
        });
      }
    } catch (err) {
      await endStream(false);
      throw err;
    }
    if (!held) await endStream(true);
    if (sent.report.truncated.length > 0 || sent.report.elided > 0) {
      logger.info({ conversationId: input.conversationId, responseKey, ...sent.report }, 'Fitted the request to the context window');
    }
    if (completion.reassignedIds.length > 0) {
      logger.warn(
        { conversationId: input.conversationId, responseKey, reassigned: completion.reassignedIds },
        'The model sent tool calls with empty or repeated ids in one response; gave them ids of their own',
      );
    }
    const stored = await withDatabaseRetry('store the model response', () =>
      storeModelResponse(deps.pool, tables, {
        key: responseKey,
        conversationId: input.conversationId,
        // The transcript names the agent that wrote each answer.
        message: speaker ? { ...completion.message, name: speaker.name } : completion.message,
        finishReason: completion.finishReason,
        usage: completion.usage,
        promptEstimate: sent.report.promptTokens,
        contextBudget: sent.report,
      }),
    );
    const result = await answer(stored);
    if (held) await endStream(!result.guardrail);
    return result;
  }
}

/** Conversations' typed outputs, resolved once per schema (a few distinct ones in practice). */
const resolvedSpecs = new Map<string, ResolvedOutput>();

/**
 * The typed output this call asks for: the current agent's `outputType`,
 * else the conversation's `output`. A conversation's schema that cannot be
 * compiled fails the call for good, saying why.
 */
function typedOutput(agents: AgentRegistry | undefined, speaker: Agent | undefined, input: ModelCallInput): ResolvedOutput | undefined {
  const own = speaker ? agents?.outputOf(speaker) : undefined;
  if (own || !input.output) return own;
  const key = JSON.stringify(input.output);
  let resolved = resolvedSpecs.get(key);
  if (!resolved) {
    try {
      resolved = resolveOutputSpec(input.output);
    } catch (err) {
      throw ApplicationFailure.nonRetryable(`Conversation ${input.conversationId}: ${(err as Error).message}`, ActivityErrorType.InvalidOutputSchema);
    }
    resolvedSpecs.set(key, resolved);
    if (resolvedSpecs.size > 64) resolvedSpecs.delete(resolvedSpecs.keys().next().value!);
  }
  return resolved;
}

/**
 * How a final answer fared against the typed output asked for (nothing for
 * answers with tool calls, or when none was asked for), and its parsed value.
 */
function checkedOutput(output: ResolvedOutput | undefined, message: AssistantMessage): { output?: OutputCheck; value?: unknown } {
  if (!output || !isFinal(message)) return {};
  const verdict = output.check(message.content ?? '');
  if (!verdict.ok) return { output: { ok: false, problem: verdict.problem, retries: output.retries, schemaName: output.name } };
  const value = verdict.value ?? null;
  const inline = JSON.stringify(value).length <= OUTPUT_INLINE_LIMIT;
  return { output: inline ? { ok: true, value } : { ok: true, inAnswer: true }, value };
}

/** True for a final answer: one without tool calls. */
function isFinal(message: AssistantMessage): boolean {
  return (message.tool_calls?.length ?? 0) === 0;
}

/** The largest typed output, as JSON text, that a turn's record carries; a larger one stays in the answer. */
const OUTPUT_INLINE_LIMIT = 4096;

/** The call's cost, when its model has a price and the provider counted tokens. */
function priced(prices: ModelPrices | undefined, model: string, usage: TokenUsage | undefined): { costUsd?: number } {
  const costUsd = costOf(prices, model, usage);
  return costUsd === undefined ? {} : { costUsd };
}

/**
 * The assistant message as it travels through workflow history: a long text
 * (answer or reasoning) becomes a preview, like a long tool result; the whole
 * message is stored and appended by reference, so clients and later model
 * calls read it in full. Tool calls travel whole (the workflow runs them),
 * except the arguments of a call over the limit, which is not run.
 */
function inHistory(message: AssistantMessage, deps: ModelActivityDeps, responseKey: string): AssistantMessage {
  const limit = deps.inlineResultLimit ?? DEFAULT_INLINE_LIMIT;
  const preview = (text: string, what: string) => inlineOrPreview(text, limit, `${what} is stored under model response ${responseKey}`);
  return {
    ...message,
    ...(message.tool_calls?.some(argumentsOverLimit)
      ? { tool_calls: message.tool_calls.map((c) => (argumentsOverLimit(c) ? { ...c, function: { ...c.function, arguments: '{}' } } : c)) }
      : {}),
    content: message.content === null ? null : preview(message.content, 'answer'),
    ...(message.reasoning_content !== undefined ? { reasoning_content: preview(message.reasoning_content, 'reasoning') } : {}),
  };
}

/** The size of a call's arguments in bytes, when over {@link TOOL_ARGUMENTS_MAX_BYTES} (such a call is not run). */
function argumentsOverLimit(call: ToolCall): number | undefined {
  const bytes = Buffer.byteLength(call.function.arguments, 'utf8');
  return bytes > TOOL_ARGUMENTS_MAX_BYTES ? bytes : undefined;
}

/**
 * The window to fit a request to after the provider refused it as too large:
 * three quarters of what the provider says its window is (or of the window
 * used, when it does not say). Undefined when `err` is another failure.
 */
function smallerWindow(err: unknown, usedWindow: number): number | undefined {
  if (!(err instanceof ApplicationFailure) || err.type !== ActivityErrorType.ContextLengthExceeded) return undefined;
  const stated = (err.details?.[0] as { windowTokens?: number | null } | undefined)?.windowTokens;
  return Math.floor(Math.min(stated ?? usedWindow, usedWindow) * 0.75);
}

/** A second refusal after fitting tighter fails the call for good, saying what was tried. */
function contextStillExceeded(err: unknown, windowTokens: number): unknown {
  if (!(err instanceof ApplicationFailure) || err.type !== ActivityErrorType.ContextLengthExceeded) return err;
  return ApplicationFailure.create({
    message:
      `${err.message} The request had already been fitted to ${windowTokens} tokens once. ` +
      "Set the model's real window (ModelSettings.contextWindow or OPENAI_CONTEXT_WINDOW).",
    type: ActivityErrorType.ModelRequestRejected,
    nonRetryable: true,
    details: err.details ?? undefined,
  });
}

/** What a model call offers: tool specs, the names of the tools it may call (undefined: all), and the current agent's handoffs. */
interface ToolOffer {
  specs: FunctionToolSpec[];
  allowed: string[] | undefined;
  handoffTarget(toolName: string): string | undefined;
  agentTool(toolName: string): AgentTool | undefined;
}

/**
 * The current agent's tools and handoffs, or, for a conversation of one
 * unnamed agent, its choice of the worker's tools and the turn's MCP tools.
 */
function toolOffer(registry: ToolRegistry, agents: AgentRegistry | undefined, speaker: Agent | undefined, input: ModelCallInput): ToolOffer {
  if (!speaker || !agents) {
    const allowed = offeredNames(registry, input);
    return { specs: registry.specsFor(allowed), allowed, handoffTarget: () => undefined, agentTool: () => undefined };
  }
  const allowed = agents.toolNames(speaker);
  return {
    specs: [...registry.specsFor(allowed), ...agents.agentToolSpecs(speaker), ...agents.handoffSpecs(speaker)],
    allowed,
    handoffTarget: (toolName) => agents.handoffTarget(speaker, toolName),
    agentTool: (toolName) => agents.agentTool(speaker, toolName),
  };
}

/** The agent of the conversation now (its own, else the worker's default); a name the worker does not know fails the call for good, saying which it knows. */
function currentAgent(agents: AgentRegistry | undefined, name: string | undefined, conversationId: string): Agent | undefined {
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

/**
 * The messages as the current agent sends them: its instructions in place of
 * the stored system message (or first, when there is none); which agent wrote
 * each answer stays in the transcript, never sent.
 */
function withInstructions(loaded: { messages: ChatMessage[]; seqs?: number[] }, speaker: Agent | undefined): { messages: ChatMessage[]; seqs?: number[] } {
  const named = (m: ChatMessage) => m.role === 'assistant' && m.name !== undefined;
  const messages = loaded.messages.some(named)
    ? loaded.messages.map((m) => (named(m) ? withoutName(m as Extract<ChatMessage, { role: 'assistant' }>) : m))
    : loaded.messages;
  if (!speaker?.instructions) return { ...loaded, messages };
  const system: ChatMessage = { role: 'system', content: speaker.instructions };
  if (messages[0]?.role === 'system') return { messages: [system, ...messages.slice(1)], seqs: loaded.seqs };
  return { messages: [system, ...messages] };
}

function withoutName(message: Extract<ChatMessage, { role: 'assistant' }>): ChatMessage {
  const { name: _agent, ...rest } = message;
  return rest;
}

/** The names of the tools a call may use (undefined: all of the worker's). */
function offeredNames(registry: ToolRegistry, input: ModelCallInput): string[] | undefined {
  if (!input.toolset || !input.tools) return input.tools;
  return [...input.tools, ...registry.names().filter((name) => parseMcpToolName(name))];
}

/** The tool guardrails that check a call of `tool`. */
type ToolGuards = (tool: Tool) => Extract<Guardrail, { on: 'tool' }>[];

async function planToolCalls(
  registry: ToolRegistry,
  deps: ModelActivityDeps,
  offer: ToolOffer,
  message: AssistantMessage,
  guards: ToolGuards,
  context: GuardrailContext,
): Promise<ToolCallPlan[]> {
  const calls = message.tool_calls ?? [];
  const limit = deps.maxParallelToolCalls ?? DEFAULT_MAX_PARALLEL_TOOL_CALLS;
  const plans = calls.map((call, index) =>
    index < limit
      ? planToolCall(registry, offer, call, guards, context)
      : unrunnable(call, {
          reason: 'too_many_calls',
          message:
            `The response asked for ${calls.length} tool calls; this worker runs at most ${limit} per response ` +
            '(AGENT_MAX_PARALLEL_TOOL_CALLS). This call was not run: ask for it again in a later step.',
        }),
  );
  return Promise.all(plans);
}

/**
 * The plan of a call of an agent as a tool: its task must be `{"input": "<text>"}`.
 * Never idempotent: the agent's conversation runs once, and one cut off
 * (terminated, timed out) may have done part of its work.
 */
function planAgentCall(asTool: AgentTool, call: ToolCall): ToolCallPlan {
  let task: unknown;
  try {
    task = (JSON.parse(call.function.arguments) as { input?: unknown } | null)?.input;
  } catch {
    task = undefined;
  }
  if (typeof task !== 'string' || task.trim() === '') {
    return unrunnable(call, {
      reason: 'invalid_arguments',
      message: `${asTool.toolName} runs the ${asTool.agent} agent with a task: give arguments {"input": "<the task, in words>"}.`,
    });
  }
  return {
    toolCallId: call.id,
    name: call.function.name,
    subAgent: asTool.agent,
    needsApproval: asTool.needsApproval,
    ...(asTool.needsApproval ? { decisions: ['approve' as const, 'reject' as const] } : {}),
    idempotent: false,
    timeoutMs: asTool.timeoutMs ?? 0,
    maxAttempts: 1,
  };
}

/** The plan of a call that cannot run: the workflow settles it as `tool_failed` with the problem's words. */
function unrunnable(call: ToolCall, problem: NonNullable<ToolCallPlan['problem']>): ToolCallPlan {
  return {
    toolCallId: call.id,
    name: call.function.name,
    problem,
    needsApproval: false,
    idempotent: true,
    timeoutMs: TOOL_DEFAULTS.timeoutMs,
    maxAttempts: 1,
  };
}

/** Reads the transcript, applies the workflow's repair, and refuses to send anything invalid. */
/**
 * The messages the model call sends (repaired when the workflow says so), with
 * their seqs; on a turn's first call, also the text of the turn's user
 * messages (`turnInput`), for the input guardrails.
 */
async function loadModelMessages(
  pool: Pool,
  tables: AgentTables,
  input: ModelCallInput,
): Promise<{ messages: ChatMessage[]; seqs?: number[]; turnInput?: string[] }> {
  const stored = await readTranscript(pool, tables, input.conversationId, input.throughSeq);
  if (stored.length !== input.throughSeq + 1) {
    throw ApplicationFailure.retryable(
      `Conversation ${input.conversationId}: PostgreSQL holds ${stored.length} messages through seq ${input.throughSeq}, expected ${input.throughSeq + 1}.`,
      ActivityErrorType.TranscriptIncomplete,
    );
  }
  const omit = new Set(input.omitSeqs);
  const messages = applyPairingRepair(
    stored.map((s) => s.message),
    {
      problems: [],
      omit: stored.flatMap((s, i) => (omit.has(s.seq) ? [i] : [])),
      synthesize: input.synthesized.map((s) => ({ afterIndex: s.afterSeq, toolCallId: s.toolCallId })),
    },
    (toolCallId): ChatMessage => ({
      role: 'tool',
      tool_call_id: toolCallId,
      content: input.synthesized.find((s) => s.toolCallId === toolCallId)?.content ?? '',
    }),
    (m) => m.role === 'tool',
  );
  const problems = findPairingProblems(messages.map(pairingItem));
  if (problems.length > 0) {
    throw ApplicationFailure.nonRetryable(
      `Conversation ${input.conversationId}: refusing to send a transcript that breaks the tool-call pairing rules: ${JSON.stringify(problems)}`,
      ActivityErrorType.InvalidTranscript,
    );
  }
  // The seq of each message, for the context budget's markers (when nothing was repaired, they line up).
  const repaired = input.omitSeqs.length > 0 || input.synthesized.length > 0;
  const fromSeq = input.turnFromSeq;
  const turnInput = fromSeq === undefined ? undefined : stored.flatMap((s) => (s.seq >= fromSeq && s.message.role === 'user' ? [s.message.content] : []));
  return { messages, seqs: repaired ? undefined : stored.map((s) => s.seq), ...(turnInput ? { turnInput } : {}) };
}

function pairingItem(m: ChatMessage): PairingItem {
  if (m.role === 'assistant') return { role: m.role, callIds: m.tool_calls?.map((c) => c.id) };
  if (m.role === 'tool') return { role: m.role, answers: m.tool_call_id };
  return { role: m.role };
}

/** The plan of one call; its tool guardrails may block it or make it wait for a person. */
async function planToolCall(registry: ToolRegistry, offer: ToolOffer, call: ToolCall, guards: ToolGuards, context: GuardrailContext): Promise<ToolCallPlan> {
  const handoff = offer.handoffTarget(call.function.name);
  if (handoff !== undefined) {
    return {
      toolCallId: call.id,
      name: call.function.name,
      handoff,
      needsApproval: false,
      idempotent: true,
      timeoutMs: TOOL_DEFAULTS.timeoutMs,
      maxAttempts: 1,
    };
  }
  const allowed = offer.allowed;
  const bytes = argumentsOverLimit(call);
  const asTool = offer.agentTool(call.function.name);
  if (asTool && bytes === undefined) return planAgentCall(asTool, call);
  if (bytes !== undefined) {
    return unrunnable(call, {
      reason: 'invalid_arguments',
      message: `The arguments are ${bytes} bytes; a tool call's arguments may be at most ${TOOL_ARGUMENTS_MAX_BYTES} bytes. Ask for less at once, or refer to data by an id the tool can look up.`,
    });
  }
  const checked = checkToolCall(registry, allowed, call.function.name, call.function.arguments);
  if (!checked.ok) return unrunnable(call, { reason: checked.reason, message: checked.message });
  const { tool, args } = checked;
  let needsApproval: boolean;
  try {
    needsApproval = typeof tool.needsApproval === 'function' ? tool.needsApproval(args) : (tool.needsApproval ?? false);
  } catch {
    needsApproval = true; // a predicate that throws must not let a call skip its approval
  }
  const checks = guards(tool);
  const verdict = checks.length > 0 ? await toolVerdict(checks, { toolName: tool.name, arguments: args }, context) : { action: 'allow' as const };
  if (verdict.action === 'require_approval') needsApproval = true;
  return {
    toolCallId: call.id,
    name: tool.name,
    ...(verdict.action === 'block' ? { blocked: { guardrail: verdict.guardrail, reason: verdict.reason } } : {}),
    needsApproval,
    ...(needsApproval ? { decisions: [...(tool.decisions ?? defaultDecisions(tool.idempotent))] } : {}),
    idempotent: tool.idempotent !== false,
    timeoutMs: tool.timeoutMs ?? TOOL_DEFAULTS.timeoutMs,
    maxAttempts: tool.idempotent === false ? 1 : (tool.maxAttempts ?? TOOL_DEFAULTS.maxAttempts),
  };
}
