/**
 * One request to an OpenAI-compatible endpoint, streamed or not, turned into
 * one complete assistant message, or a clear failure. The only place that
 * talks to the provider.
 */
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { TokenUsage } from '../contract';
import type { ToolCall } from '../contract/messages';
import { asCancellation, heartbeatWhileRunning } from './activity-context';
import { ActivityErrorType, type AssistantMessage } from '../contract/activities';
import type { DeltaPublisher } from './deltas';
import { StreamAssembler } from './stream-assembler';
import type { ReasoningEntry } from '../db/reasoning-store';

/** The assembled answer of one request. */
export interface ModelCompletion {
  message: AssistantMessage;
  finishReason: string | null;
  usage?: TokenUsage;
  /** Tool calls whose id was empty or repeated within the response, and the id each was given instead. */
  reassignedIds: ReassignedToolCallId[];
  /** The Responses API's reasoning items, stored with the answer and sent back with what followed them. */
  reasoning?: ReasoningEntry[];
}

/** A tool call id the provider sent empty or twice in one response, replaced before the message was stored. */
export interface ReassignedToolCallId {
  /** The call's position in the response. */
  index: number;
  /** What the provider sent (`""` when it sent none). */
  sent: string;
  assigned: string;
}

/** How to make the request. */
export interface CompletionOptions {
  stream: boolean;
  /** Streaming: abandon the request when no chunk arrives for this long. */
  idleTimeoutMs: number;
  /** Where text deltas go while the model speaks. */
  publisher?: DeltaPublisher;
}

/**
 * Sends the request and assembles the answer. Heartbeats while waiting; stops at once when the activity is cancelled.
 */
export async function requestCompletion(
  openai: OpenAI,
  request: ChatCompletionCreateParamsNonStreaming,
  options: CompletionOptions,
): Promise<ModelCompletion> {
  const context = Context.current();
  const stopHeartbeats = heartbeatWhileRunning(context);
  try {
    return options.stream ? await streamed(openai, request, options) : await unstreamed(openai, request, options);
  } catch (err) {
    throw asCancellation(context) ?? err;
  } finally {
    stopHeartbeats();
  }
}

async function unstreamed(
  openai: OpenAI,
  request: ChatCompletionCreateParamsNonStreaming,
  options: CompletionOptions,
): Promise<ModelCompletion> {
  let response;
  try {
    response = await openai.chat.completions.create(request, { signal: Context.current().cancellationSignal });
  } catch (err) {
    throw toActivityFailure(err);
  }
  const choice = response.choices?.[0];
  if (!choice?.message)
    throw ApplicationFailure.retryable('The model returned no choices.', ActivityErrorType.ModelBehavior);
  const raw = choice.message as typeof choice.message & { reasoning_content?: string };
  const completion = toCompletion({
    content: raw.content ?? null,
    reasoningContent: raw.reasoning_content,
    toolCalls: (raw.tool_calls ?? []).flatMap((c) =>
      c.type === 'function' ? [{ id: c.id, name: c.function.name, arguments: c.function.arguments }] : [],
    ),
    finishReason: choice.finish_reason ?? null,
    usage: response.usage
      ? { promptTokens: response.usage.prompt_tokens, completionTokens: response.usage.completion_tokens }
      : undefined,
  });
  options.publisher?.push(completion.message.content ?? '');
  return completion;
}

async function streamed(
  openai: OpenAI,
  request: ChatCompletionCreateParamsNonStreaming,
  options: CompletionOptions,
): Promise<ModelCompletion> {
  const assembler = new StreamAssembler();
  // No heartbeat per chunk: the interval of requestCompletion beats while the answer streams. The SDK sends a
  // call's first heartbeat to the server at once, so one per chunk cost every model call a server round trip.
  await readModelStream(
    options,
    'chunks',
    (signal) =>
      openai.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } }, { signal }),
    (chunk) => options.publisher?.push(assembler.push(chunk)),
  );
  const assembled = assembler.finish();
  if (assembled.problems.length > 0) {
    throw ApplicationFailure.retryable(
      `The model's streamed response is incomplete: ${assembled.problems.join('; ')}. Nothing of it was used.`,
      ActivityErrorType.IncompleteModelResponse,
    );
  }
  return toCompletion({
    content: assembled.content,
    reasoningContent: assembled.reasoningContent,
    toolCalls: assembled.toolCalls,
    finishReason: assembled.finishReason,
    usage: assembled.usage,
  });
}

/**
 * Reads a model stream (Chat Completions chunks or Responses events), with
 * one plain signal for both reasons to stop (a cancel, a stall: nothing for
 * `idleTimeoutMs`), and turns how it broke into the failure the workflow's
 * retry policy reads. Not AbortSignal.any: the OpenAI SDK leaves its abort
 * listener on the signal it is given, and Node keeps a composite signal that
 * has a listener alive until it aborts, so every streamed call that ended
 * normally stayed in memory for good. Returns how many items arrived.
 */
export async function readModelStream<T>(
  options: CompletionOptions,
  unit: 'chunks' | 'events',
  open: (signal: AbortSignal) => Promise<AsyncIterable<T>>,
  each: (item: T) => void,
): Promise<number> {
  const context = Context.current();
  const stop = new AbortController();
  const cancelled = (): void => stop.abort(context.cancellationSignal.reason);
  if (context.cancellationSignal.aborted) cancelled();
  else context.cancellationSignal.addEventListener('abort', cancelled, { once: true });
  let stalled = false;
  let timer: NodeJS.Timeout | undefined;
  const armIdleTimer = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      stalled = true;
      stop.abort();
    }, options.idleTimeoutMs);
  };
  let count = 0;
  armIdleTimer();
  try {
    const stream = await open(stop.signal);
    for await (const item of stream) {
      armIdleTimer();
      count += 1;
      each(item);
    }
  } catch (err) {
    if (context.cancellationSignal.aborted || err instanceof ApplicationFailure) throw err;
    if (stalled) {
      throw ApplicationFailure.retryable(
        `The model stream stalled: nothing arrived for ${options.idleTimeoutMs} ms after ${count} ${unit}. Nothing of it was used.`,
        ActivityErrorType.ModelStreamStalled,
      );
    }
    if (err instanceof OpenAI.APIError && err.status !== undefined) throw toActivityFailure(err);
    throw ApplicationFailure.retryable(
      `The model stream broke after ${count} ${unit} (${(err as Error).message}). Nothing of it was used.`,
      ActivityErrorType.IncompleteModelResponse,
    );
  } finally {
    clearTimeout(timer);
    context.cancellationSignal.removeEventListener('abort', cancelled);
  }
  return count;
}

/**
 * Builds the assistant message. Decides by the presence of tool calls, not by
 * finish_reason (a forced tool_choice can finish with "stop" and tool calls).
 * Shared with the Responses API's path (`model/responses-completion.ts`).
 */
export function toCompletion(parts: {
  content: string | null;
  reasoningContent?: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: string | null;
  usage?: ModelCompletion['usage'];
}): ModelCompletion {
  const toolCalls: ToolCall[] = parts.toolCalls.map((c) => ({
    id: c.id ?? '',
    type: 'function' as const,
    function: { name: c.name, arguments: c.arguments.trim() === '' ? '{}' : c.arguments },
  }));
  if (toolCalls.some((call) => !call.function.name)) {
    throw ApplicationFailure.retryable(
      'The model returned a tool call without a function name.',
      ActivityErrorType.ModelBehavior,
    );
  }
  const reassignedIds = assignUniqueIds(toolCalls);
  if (toolCalls.length > 0 && parts.finishReason === 'length') {
    throw ApplicationFailure.retryable(
      'The model stopped at its token limit in the middle of tool calls (finish_reason "length"); their arguments may be truncated, so they are not run.',
      ActivityErrorType.IncompleteModelResponse,
    );
  }
  const message: AssistantMessage = {
    role: 'assistant',
    content: toolCalls.length > 0 ? parts.content || null : (parts.content ?? ''),
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    // DeepSeek thinking mode: the reasoning of a tool-calling message must be sent back in later requests.
    ...(toolCalls.length > 0 && parts.reasoningContent !== undefined
      ? { reasoning_content: parts.reasoningContent }
      : {}),
  };
  return { message, finishReason: parts.finishReason, usage: parts.usage, reassignedIds };
}

/**
 * Gives each call with an empty id, or an id an earlier call of the same
 * response already has, an id of its own, so its tool message can be paired
 * with it. Ids only pair messages (effects are keyed by call instance), so a
 * fresh id changes nothing else. Returns what it replaced.
 */
function assignUniqueIds(calls: ToolCall[]): ReassignedToolCallId[] {
  const seen = new Set<string>();
  const reassigned: ReassignedToolCallId[] = [];
  calls.forEach((call, index) => {
    if (call.id === '' || seen.has(call.id)) {
      const assigned = `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
      reassigned.push({ index, sent: call.id, assigned });
      call.id = assigned;
    }
    seen.add(call.id);
  });
  return reassigned;
}

/** The longest wait a provider's `Retry-After` may ask for before the next attempt. */
export const MAX_RETRY_AFTER_MS = 10 * 60_000;

/**
 * Provider errors as activity failures. A request over the context window
 * fails as `ContextLengthExceeded` (the model activity fits the request
 * tighter and tries once more); other 4xx than 408/409/429 cannot succeed on
 * retry; the rest are retried, after the provider's `Retry-After` when it
 * sends one. The provider's words are kept.
 */
export function toActivityFailure(err: unknown): unknown {
  if (!(err instanceof OpenAI.APIError) || err.status === undefined) return err;
  const status = err.status;
  const details = { status, code: err.code ?? null, param: err.param ?? null, type: err.type ?? null };
  const stated = /maximum context length is (\d+)/i.exec(err.message);
  if (status === 400 && (err.code === 'context_length_exceeded' || stated)) {
    return ApplicationFailure.create({
      message: `The request was larger than the model's context window: ${err.message}`,
      type: ActivityErrorType.ContextLengthExceeded,
      nonRetryable: true,
      details: [{ ...details, windowTokens: stated ? Number(stated[1]) : null }],
    });
  }
  if (status >= 400 && status < 500 && ![408, 409, 429].includes(status)) {
    return ApplicationFailure.create({
      message: `The model provider rejected the request: ${err.message}`,
      type: ActivityErrorType.ModelRequestRejected,
      nonRetryable: true,
      details: [details],
    });
  }
  const retryAfterMs = retryAfter(err.headers);
  return ApplicationFailure.create({
    message: `Model call failed: ${err.message}${retryAfterMs !== undefined ? ` (the provider asked to retry after ${retryAfterMs} ms)` : ''}`,
    type: ActivityErrorType.ModelCallFailed,
    details: [details],
    ...(retryAfterMs !== undefined ? { nextRetryDelay: retryAfterMs } : {}),
  });
}

/**
 * The wait a provider asks for (`retry-after-ms`, or `retry-after` in seconds or as a date), capped at {@link
 * MAX_RETRY_AFTER_MS}.
 */
export function retryAfter(headers: Headers | undefined, now = Date.now()): number | undefined {
  const ms = Number(headers?.get('retry-after-ms') ?? NaN);
  if (Number.isFinite(ms) && ms >= 0) return Math.min(Math.ceil(ms), MAX_RETRY_AFTER_MS);
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(Math.ceil(seconds * 1000), MAX_RETRY_AFTER_MS);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.min(Math.max(0, date - now), MAX_RETRY_AFTER_MS);
}
