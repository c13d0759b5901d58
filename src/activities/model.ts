/**
 * The model activity: reads the transcript by reference, calls an
 * OpenAI-compatible endpoint, returns the new assistant message with a plan
 * for each tool call.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { ChatMessage, ToolCall } from '../transcript/messages';
import { applyPairingRepair, findPairingProblems, type PairingItem } from '../transcript/pairing';
import type { ToolRegistry } from '../tools/registry';
import type { Pool } from 'pg';
import { ActivityErrorType, type AssistantMessage, type ModelCallInput, type ModelCallResult, type ToolCallPlan } from './contracts';
import { findModelResponse, readTranscript, storeModelResponse } from './transcript-store';
import { checkToolCall } from './tool-calls';

/** Dependencies of the model activity. */
export interface ModelActivityDeps {
  pool: Pool;
  openai: OpenAI;
  tools: ToolRegistry;
  /** Model used when the conversation names none. */
  defaultModel: string;
}

/** The request as sent to the provider, and what came back, assembled into one message. */
export interface ModelCompletion {
  message: AssistantMessage;
  finishReason: string | null;
  usage?: { promptTokens: number; completionTokens: number };
}

/** Default timeout and attempt policy for tools, applied in plans. */
const TOOL_DEFAULTS = { timeoutMs: 60_000, maxAttempts: 3 };
/** Heartbeats carry cancellation to the activity: a cancelled turn stops its model call within about a second. */
const HEARTBEAT_EVERY_MS = 1_000;

/** Builds the `callModel` activity. */
export function createModelActivity(deps: ModelActivityDeps): (input: ModelCallInput) => Promise<ModelCallResult> {
  return async function callModel(input: ModelCallInput): Promise<ModelCallResult> {
    const { info } = Context.current();
    const responseKey = `${info.workflowExecution?.runId ?? 'standalone'}/${info.activityId}`;
    const earlier = await findModelResponse(deps.pool, responseKey);
    if (earlier) {
      // An earlier attempt got the answer but did not report it (crash, lost completion): use it, do not pay twice.
      return { ...earlier, responseKey, calls: planToolCalls(deps, input, earlier.message) };
    }
    const messages = await loadModelMessages(deps.pool, input);
    const tools = deps.tools.specsFor(input.tools);
    const request: ChatCompletionCreateParamsNonStreaming = {
      model: input.settings.model ?? deps.defaultModel,
      messages: messages as ChatCompletionCreateParamsNonStreaming['messages'],
      ...(input.settings.temperature !== undefined ? { temperature: input.settings.temperature } : {}),
      ...(input.settings.maxTokens !== undefined ? { max_tokens: input.settings.maxTokens } : {}),
      ...(tools.length > 0 ? { tools, tool_choice: input.toolChoice } : {}),
    };
    const completion = await requestCompletion(deps.openai, request);
    const stored = await storeModelResponse(deps.pool, {
      key: responseKey,
      conversationId: input.conversationId,
      message: completion.message,
      finishReason: completion.finishReason,
    });
    return { ...stored, usage: completion.usage, responseKey, calls: planToolCalls(deps, input, stored.message) };
  };
}

function planToolCalls(deps: ModelActivityDeps, input: ModelCallInput, message: AssistantMessage): ToolCallPlan[] {
  return (message.tool_calls ?? []).map((call) => planToolCall(deps.tools, input.tools, call));
}

/** Reads the transcript, applies the workflow's repair, and refuses to send anything invalid. */
async function loadModelMessages(pool: Pool, input: ModelCallInput): Promise<ChatMessage[]> {
  const stored = await readTranscript(pool, input.conversationId, input.throughSeq);
  if (stored.length !== input.throughSeq + 1) {
    throw ApplicationFailure.retryable(
      `Conversation ${input.conversationId}: PostgreSQL holds ${stored.length} messages through seq ${input.throughSeq}, expected ${input.throughSeq + 1}.`,
      'TranscriptIncomplete',
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
  return messages;
}

function pairingItem(m: ChatMessage): PairingItem {
  if (m.role === 'assistant') return { role: m.role, callIds: m.tool_calls?.map((c) => c.id) };
  if (m.role === 'tool') return { role: m.role, answers: m.tool_call_id };
  return { role: m.role };
}

/**
 * Sends one request and assembles the assistant message. The single place
 * that talks to the provider, so streaming can replace its body without
 * changing callers. Heartbeats while waiting; stops when the activity is cancelled.
 */
async function requestCompletion(openai: OpenAI, request: ChatCompletionCreateParamsNonStreaming): Promise<ModelCompletion> {
  const context = Context.current();
  const heartbeat = setInterval(() => context.heartbeat(), HEARTBEAT_EVERY_MS);
  let response;
  try {
    response = await openai.chat.completions.create(request, { signal: context.cancellationSignal });
  } catch (err) {
    throw toActivityFailure(err);
  } finally {
    clearInterval(heartbeat);
  }
  const choice = response.choices?.[0];
  if (!choice?.message) {
    throw ApplicationFailure.retryable('The model returned no choices.', 'ModelBehavior');
  }
  const raw = choice.message as typeof choice.message & { reasoning_content?: string };
  const toolCalls: ToolCall[] = (raw.tool_calls ?? []).flatMap((c) =>
    c.type === 'function'
      ? [{ id: c.id, type: 'function' as const, function: { name: c.function.name, arguments: c.function.arguments || '{}' } }]
      : [],
  );
  checkToolCallShape(toolCalls);
  if (toolCalls.length > 0 && choice.finish_reason === 'length') {
    throw ApplicationFailure.retryable(
      'The model stopped at its token limit in the middle of tool calls (finish_reason "length"); their arguments may be truncated, so they are not run.',
      'ModelBehavior',
    );
  }
  const message: AssistantMessage = {
    role: 'assistant',
    content: toolCalls.length > 0 ? (raw.content ?? null) : (raw.content ?? ''),
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    ...(raw.reasoning_content !== undefined && toolCalls.length > 0 ? { reasoning_content: raw.reasoning_content } : {}),
  };
  return {
    message,
    finishReason: choice.finish_reason ?? null,
    usage: response.usage
      ? { promptTokens: response.usage.prompt_tokens, completionTokens: response.usage.completion_tokens }
      : undefined,
  };
}

function checkToolCallShape(calls: ToolCall[]): void {
  const seen = new Set<string>();
  for (const call of calls) {
    if (!call.id || !call.function.name) {
      throw ApplicationFailure.retryable('The model returned a tool call without an id or a name.', 'ModelBehavior');
    }
    if (seen.has(call.id)) {
      throw ApplicationFailure.retryable(`The model returned two tool calls with the id ${call.id}.`, 'ModelBehavior');
    }
    seen.add(call.id);
  }
}

/** Provider errors: 4xx other than 408/409/429 cannot succeed on retry; keep the provider's words. */
function toActivityFailure(err: unknown): unknown {
  if (err instanceof OpenAI.APIError && err.status !== undefined) {
    const status = err.status;
    const details = { status, code: err.code ?? null, param: err.param ?? null, type: err.type ?? null };
    if (status >= 400 && status < 500 && ![408, 409, 429].includes(status)) {
      return ApplicationFailure.create({
        message: `The model provider rejected the request: ${err.message}`,
        type: ActivityErrorType.ModelRequestRejected,
        nonRetryable: true,
        details: [details],
      });
    }
    return ApplicationFailure.create({ message: `Model call failed: ${err.message}`, type: 'ModelCallFailed', details: [details] });
  }
  return err;
}

function planToolCall(registry: ToolRegistry, allowed: readonly string[] | undefined, call: ToolCall): ToolCallPlan {
  const checked = checkToolCall(registry, allowed, call.function.name, call.function.arguments);
  if (!checked.ok) {
    return {
      toolCallId: call.id,
      name: call.function.name,
      problem: { reason: checked.reason, message: checked.message },
      needsApproval: false,
      timeoutMs: TOOL_DEFAULTS.timeoutMs,
      maxAttempts: 1,
    };
  }
  const { tool, args } = checked;
  let needsApproval: boolean;
  try {
    needsApproval = typeof tool.needsApproval === 'function' ? tool.needsApproval(args) : (tool.needsApproval ?? false);
  } catch {
    needsApproval = true; // a predicate that throws must not let a call skip its approval
  }
  return {
    toolCallId: call.id,
    name: tool.name,
    needsApproval,
    timeoutMs: tool.timeoutMs ?? TOOL_DEFAULTS.timeoutMs,
    maxAttempts: tool.idempotent === false ? 1 : (tool.maxAttempts ?? TOOL_DEFAULTS.maxAttempts),
  };
}
