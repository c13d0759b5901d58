/**
 * A Responses API answer in the transcript's form: its text (the output
 * messages' `output_text`, one assistant message), its function calls as tool
 * calls whose ids are their `call_id`s, and its reasoning items, kept as
 * returned (encrypted) with the output item that followed each. A reasoning
 * item nothing followed (the answer was cut short) is not kept: it could
 * never be sent back. Pure: no I/O.
 */
import type { Response, ResponseOutputItem, ResponseReasoningItem } from 'openai/resources/responses/responses';
import type { TokenUsage } from '../../contract';
import type { ToolCall } from '../../contract/messages';
import type { ReasoningEntry } from '../../db/reasoning-store';

/** The parts of an answer, before the tool calls' ids are made unique (`completion.ts`). */
export interface ResponsesAnswerParts {
  content: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  /** `stop`, `tool_calls`, or why the answer is incomplete (`length` for `max_output_tokens`). */
  finishReason: string | null;
  usage?: TokenUsage;
  /** Each reasoning item and the item after it: the text message, or the tool call at `index`. */
  reasoning: {
    item: ResponseReasoningItem;
    before: { type: 'message'; id: string } | { type: 'function_call'; id: string; index: number };
  }[];
}

/** The answer's parts, from a response (or the last event of a stream, which carries the whole response). */
export function readResponsesOutput(
  response: Pick<Response, 'output' | 'status' | 'incomplete_details' | 'usage'>,
): ResponsesAnswerParts {
  const texts: string[] = [];
  const refusals: string[] = [];
  const toolCalls: ResponsesAnswerParts['toolCalls'] = [];
  const reasoning: ResponsesAnswerParts['reasoning'] = [];
  let pending: ResponseReasoningItem[] = [];
  let messageId: string | undefined;
  for (const item of response.output ?? []) {
    if (item.type === 'reasoning') {
      pending.push(item);
      continue;
    }
    const follower = followerOf(item, toolCalls.length, messageId);
    if (item.type === 'message') {
      messageId ??= item.id;
      for (const part of item.content) {
        if (part.type === 'output_text') texts.push(part.text);
        else if (part.type === 'refusal') refusals.push(part.refusal);
      }
    } else if (item.type === 'function_call') {
      toolCalls.push({ id: item.call_id, name: item.name, arguments: item.arguments });
    }
    // Reasoning before an item the transcript keeps goes with it; before any other item (or a second text message,
    // merged into the first), it could not be sent back with what followed it, so it is dropped.
    if (follower) reasoning.push(...pending.map((r) => ({ item: r, before: follower })));
    pending = [];
  }
  const text = texts.length > 0 ? texts.join('') : refusals.join('');
  return {
    content: text === '' && toolCalls.length > 0 ? null : text,
    toolCalls,
    finishReason: finishReasonOf(response, toolCalls.length > 0),
    usage: response.usage
      ? { promptTokens: response.usage.input_tokens, completionTokens: response.usage.output_tokens }
      : undefined,
    reasoning,
  };
}

function followerOf(
  item: ResponseOutputItem,
  callIndex: number,
  messageId: string | undefined,
): ResponsesAnswerParts['reasoning'][number]['before'] | undefined {
  if (item.type === 'message' && messageId === undefined && typeof item.id === 'string')
    return { type: 'message', id: item.id };
  if (item.type === 'function_call' && typeof item.id === 'string')
    return { type: 'function_call', id: item.id, index: callIndex };
  return undefined;
}

function finishReasonOf(response: Pick<Response, 'status' | 'incomplete_details'>, withCalls: boolean): string | null {
  if (response.status === 'incomplete') {
    const reason = response.incomplete_details?.reason;
    return reason === 'max_output_tokens' ? 'length' : (reason ?? 'incomplete');
  }
  return withCalls ? 'tool_calls' : 'stop';
}

/**
 * The reasoning entries to store with the answer: each names the item that
 * followed it, a tool call by the id the transcript gives it (its `call_id`,
 * or the id it was given when the response repeated one).
 */
export function reasoningEntries(parts: ResponsesAnswerParts, calls: readonly ToolCall[]): ReasoningEntry[] {
  return parts.reasoning.flatMap(({ item, before }): ReasoningEntry[] => {
    const stored = item as unknown as ReasoningEntry['item'];
    if (before.type === 'message') return [{ item: stored, before }];
    const call = calls[before.index];
    return call ? [{ item: stored, before: { type: 'function_call', id: before.id, callId: call.id } }] : [];
  });
}
