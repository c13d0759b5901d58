/**
 * What one scripted reply becomes in the Responses API: a {@link ResponsesPlan}
 * (ids, output items, status, usage) rendered as a `response` object, or
 * streamed by `responses-stream.ts`. The reply is the same
 * {@link ScriptedMessageReply} Chat Completions tests script: `reasoningContent`
 * becomes a reasoning item first in the output, `content` an assistant
 * message, each tool call a `function_call` item.
 *
 * @packageDocumentation
 */

import { randomBytes } from 'node:crypto';

import { countTokens } from '../common/tokens';
import { contentTokens, reasoningInputTokens } from './content-tokens';
import { nowSeconds } from './completion';
import { toolCallIdMaker } from './ids';
import { sealReasoning, type SealedReasoning } from './responses-encrypted';
import type { ScriptedMessageReply, ToolCallIdScheme } from './types';

/** The fields of a valid Responses request the reply depends on. */
export interface ResponsesRequestBody {
  model: string;
  input: string | Record<string, unknown>[];
  instructions?: string | null;
  stream?: boolean;
  store?: boolean;
  include?: string[] | null;
  reasoning?: { effort?: string | null; summary?: string | null } | null;
  tools?: Record<string, unknown>[];
  tool_choice?: unknown;
  parallel_tool_calls?: boolean | null;
  text?: Record<string, unknown> | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  metadata?: Record<string, string> | null;
  /** The input's tokens as the context window counted them, when it did. */
  promptTokens?: number;
}

/** A reasoning output item. */
export interface ReasoningItem {
  type: 'reasoning';
  id: string;
  summary: { type: 'summary_text'; text: string }[];
  encrypted_content?: string;
}

/** An assistant message output item with one `output_text` part. */
export interface MessageItem {
  type: 'message';
  id: string;
  role: 'assistant';
  status: 'completed' | 'incomplete';
  content: { type: 'output_text'; text: string; annotations: []; logprobs: [] }[];
}

/** A function call output item. */
export interface FunctionCallItem {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: 'completed';
}

/** One output item of a scripted response. */
export type OutputItem = ReasoningItem | MessageItem | FunctionCallItem;

/** Everything needed to render one scripted response, streamed or not. */
export interface ResponsesPlan {
  id: string;
  createdAt: number;
  request: ResponsesRequestBody;
  output: OutputItem[];
  /** `incomplete` when the reply's finish reason is `length` or `content_filter`; `failed` when it scripts a `responseError`. */
  status: 'completed' | 'incomplete' | 'failed';
  incompleteReason: 'max_output_tokens' | 'content_filter' | null;
  /** The `error` of a failed response. */
  error: { code: string; message: string } | null;
  usage: {
    input_tokens: number;
    input_tokens_details: { cached_tokens: number };
    output_tokens: number;
    output_tokens_details: { reasoning_tokens: number };
    total_tokens: number;
  };
}

/** Plans the answer to `request` from `reply`, making call ids under `toolCallIds`. */
export function planResponse(
  reply: ScriptedMessageReply,
  request: ResponsesRequestBody,
  toolCallIds: ToolCallIdScheme,
): ResponsesPlan {
  const makeId = toolCallIdMaker(toolCallIds);
  const calls: FunctionCallItem[] = (reply.toolCalls ?? []).map((call, index) => ({
    type: 'function_call',
    id: itemId('fc'),
    call_id: call.id ?? makeId(call.name, index),
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    status: 'completed',
  }));
  const text = reply.content ?? '';
  const failed = reply.responseError !== undefined;
  const incompleteReason = failed
    ? null
    : reply.finishReason === 'length'
      ? 'max_output_tokens'
      : reply.finishReason === 'content_filter'
        ? 'content_filter'
        : null;
  const output: OutputItem[] = [];
  // A model that only calls tools sends no message item; an empty answer is still a message.
  if (text.length > 0 || calls.length === 0) {
    output.push({
      type: 'message',
      id: itemId('msg'),
      role: 'assistant',
      status: incompleteReason || failed ? 'incomplete' : 'completed',
      content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
    });
  }
  output.push(...calls);
  if (reply.reasoningContent !== undefined) output.unshift(reasoningItem(reply.reasoningContent, output[0], request));

  const inputTokens = request.promptTokens ?? countInputTokens(request);
  // Counted as the reasoning item sent back is counted in a later input (`content-tokens.ts`), as OpenAI bills it twice.
  const reasoningTokens = countTokens(reply.reasoningContent ?? '');
  // Reasoning tokens are part of the output tokens, as OpenAI counts (and bills) them.
  const outputTokens = Math.max(
    1,
    reasoningTokens + estimateTokens(text + calls.map((c) => c.name + c.arguments).join('')),
  );
  return {
    id: `resp_${randomBytes(25).toString('hex')}`,
    createdAt: nowSeconds(),
    request,
    output,
    status: failed ? 'failed' : incompleteReason ? 'incomplete' : 'completed',
    incompleteReason,
    error: reply.responseError ?? null,
    usage: {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: reasoningTokens },
      total_tokens: inputTokens + outputTokens,
    },
  };
}

/**
 * The reasoning item: its summary only when `reasoning.summary` asks for one,
 * its `encrypted_content` only when `include` asks for `reasoning.encrypted_content`
 * (as OpenAI does; with `store: false` the item can then come back).
 */
function reasoningItem(text: string, next: OutputItem, request: ResponsesRequestBody): ReasoningItem {
  const id = itemId('rs');
  const item: ReasoningItem = {
    type: 'reasoning',
    id,
    summary: request.reasoning?.summary ? [{ type: 'summary_text', text }] : [],
  };
  if (request.include?.includes('reasoning.encrypted_content')) {
    const following: SealedReasoning['next'] =
      next.type === 'function_call' ? { type: 'function_call', call_id: next.call_id } : { type: 'message' };
    item.encrypted_content = sealReasoning({ id, text, next: following });
  }
  return item;
}

/** The `response` object: the non-streamed answer, and the snapshot lifecycle events carry. */
export function responseObject(plan: ResponsesPlan, stage: 'in_progress' | 'final' = 'final'): Record<string, unknown> {
  const { request } = plan;
  const final = stage === 'final';
  return {
    id: plan.id,
    object: 'response',
    created_at: plan.createdAt,
    status: final ? plan.status : 'in_progress',
    background: false,
    completed_at: final && plan.status === 'completed' ? nowSeconds() : null,
    error: final ? plan.error : null,
    incomplete_details: final && plan.incompleteReason ? { reason: plan.incompleteReason } : null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    metadata: request.metadata ?? {},
    model: request.model,
    output: final ? plan.output : [],
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: request.reasoning?.effort ?? null, summary: request.reasoning?.summary ?? null },
    store: request.store !== false,
    temperature: request.temperature ?? 1,
    text: request.text ?? { format: { type: 'text' } },
    tool_choice: request.tool_choice ?? 'auto',
    tools: request.tools ?? [],
    top_p: request.top_p ?? 1,
    truncation: 'disabled',
    usage: final ? plan.usage : null,
    user: null,
  };
}

/**
 * The input tokens of a Responses request, counted like the chat prompt:
 * instructions, the text of every item (message text and content parts, call
 * arguments, call outputs) and the tool definitions, plus a few framing tokens
 * per item. A reasoning item sent back counts the reasoning it holds, as
 * OpenAI bills it (`content-tokens.ts`); an image part its fixed share.
 */
export function countInputTokens(body: { input?: unknown; instructions?: unknown; tools?: unknown }): number {
  let tokens = 3;
  if (typeof body.instructions === 'string') tokens += 4 + countTokens(body.instructions);
  const items =
    typeof body.input === 'string' ? [{ content: body.input }] : Array.isArray(body.input) ? body.input : [];
  for (const raw of items as Record<string, unknown>[]) {
    if (raw?.type === 'reasoning') {
      tokens += reasoningInputTokens(raw);
      continue;
    }
    tokens += 4 + contentTokens(raw.content);
    for (const field of ['arguments', 'output', 'name'] as const) {
      const value = raw[field];
      if (typeof value === 'string') tokens += countTokens(value);
      else if (value !== undefined && value !== null) tokens += countTokens(JSON.stringify(value));
    }
  }
  if (body.tools !== undefined) tokens += countTokens(JSON.stringify(body.tools));
  return tokens;
}

/** An item id as OpenAI spells them: a prefix, `_`, then 50 hex digits. */
function itemId(prefix: 'rs' | 'msg' | 'fc'): string {
  return `${prefix}_${randomBytes(25).toString('hex')}`;
}

function estimateTokens(text: string): number {
  return text.length === 0 ? 0 : Math.max(1, Math.ceil(text.length / 4));
}
