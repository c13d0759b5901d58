/**
 * What one scripted reply becomes: a {@link CompletionPlan} (ids, content,
 * tool calls, finish reason, usage) rendered as a `chat.completion` object,
 * or streamed by `stream-writer.ts`.
 *
 * @packageDocumentation
 */

import { countPromptTokens } from './context-window';
import { randomAlphanumeric, toolCallIdMaker } from './ids';
import type { FinishReason, ScriptedMessageReply, ToolCallIdScheme } from './types';

/** The fields of a valid Chat Completions request the reply depends on. */
export interface ChatRequestBody {
  model: string;
  messages: unknown[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  tools?: unknown[];
  /** The prompt's tokens as the context window counted them, when it did. */
  promptTokens?: number;
}

/** Everything needed to render one scripted reply, streaming or not. */
export interface CompletionPlan {
  id: string;
  created: number;
  model: string;
  content: string | null;
  reasoningContent?: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: FinishReason;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  includeUsage: boolean;
}

/** Plans the answer to `request` from `reply`, making tool call ids under `toolCallIds`. */
export function planCompletion(
  reply: ScriptedMessageReply,
  request: ChatRequestBody,
  toolCallIds: ToolCallIdScheme,
): CompletionPlan {
  const makeId = toolCallIdMaker(toolCallIds);
  const toolCalls = (reply.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? makeId(call.name, index),
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
  }));
  const hasToolCalls = toolCalls.length > 0;
  const content = reply.content !== undefined ? reply.content : hasToolCalls ? null : '';
  // As a provider counts them: messages and tool definitions, with the tokenizer the worker estimates with.
  const promptTokens = request.promptTokens ?? countPromptTokens(request);
  const completionTokens = estimateTokens(
    (content ?? '') + (reply.reasoningContent ?? '') + toolCalls.map((c) => c.name + c.arguments).join(''),
  );
  return {
    id: `chatcmpl-${randomAlphanumeric(29)}`,
    created: nowSeconds(),
    model: request.model,
    content,
    reasoningContent: reply.reasoningContent,
    toolCalls,
    finishReason: reply.finishReason ?? (hasToolCalls ? 'tool_calls' : 'stop'),
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    },
    includeUsage: request.stream_options?.include_usage === true,
  };
}

/** The non-streaming answer: a `chat.completion` object with one choice. */
export function completionObject(plan: CompletionPlan): Record<string, unknown> {
  const message: Record<string, unknown> = { role: 'assistant', content: plan.content, refusal: null };
  if (plan.reasoningContent !== undefined) message.reasoning_content = plan.reasoningContent;
  if (plan.toolCalls.length > 0) {
    message.tool_calls = plan.toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
  }
  return {
    id: plan.id,
    object: 'chat.completion',
    created: plan.created,
    model: plan.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: plan.finishReason }],
    usage: plan.usage,
  };
}

/** The current time in whole seconds, as `created` fields carry it. */
export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** A rough token count (four characters a token), at least one. */
function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}
