/**
 * A fitted Chat Completions request in the Responses API's form. The request
 * is built and fitted to the window once, as Chat Completions messages (the
 * transcript's own shape); only the body sent changes:
 * - system and user messages become message items (a user message's files
 *   `input_image` / `input_file` parts), an assistant message its text as a
 *   message item and each tool call a `function_call` item with its
 *   `call_id`, a tool message a `function_call_output` item;
 * - the reasoning items stored with an answer go just before the item that
 *   followed each of them when the model wrote it; one whose item is gone
 *   (a handoff's filter took the tool calls out, the answer was empty) is
 *   left out with it, and an item sent without its reasoning is sent without
 *   its id, so nothing refers to an item the request does not hold;
 * - tools become function tools (strict as offered), the typed output
 *   `text.format`, `max_tokens` `max_output_tokens`;
 * - always `store: false` and `include: ['reasoning.encrypted_content']`,
 *   never `previous_response_id`: the conversation is whole in the transcript.
 * Pure: no I/O.
 */
import type {
  ChatCompletionContentPart,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import type {
  FunctionTool,
  ResponseCreateParamsNonStreaming,
  ResponseInputContent,
  ResponseInputItem,
  ResponseReasoningItem,
} from 'openai/resources/responses/responses';
import { findPairingProblems, type PairingItem, type PairingProblem } from '../../core/pairing';
import type { ChatMessage } from '../../contract/messages';
import type { ReasoningEntry } from '../../db/reasoning-store';

/** The field an assistant message read for a Responses call carries its stored reasoning in; never sent as such. */
export const REASONING_FIELD = 'reasoning_items';

/** An assistant message with the reasoning entries stored with it. */
type Assistant = Extract<ChatCompletionMessageParam, { role: 'assistant' }> & {
  [REASONING_FIELD]?: ReasoningEntry[];
};

/** The Responses request for a fitted Chat Completions body (files already turned into content parts). */
export function toResponsesRequest(body: ChatCompletionCreateParamsNonStreaming): ResponseCreateParamsNonStreaming {
  const tools = (body.tools ?? []).flatMap((t): FunctionTool[] =>
    t.type === 'function'
      ? [
          {
            type: 'function',
            name: t.function.name,
            ...(t.function.description !== undefined ? { description: t.function.description } : {}),
            parameters: t.function.parameters ?? { type: 'object', properties: {} },
            strict: t.function.strict ?? false,
          },
        ]
      : [],
  );
  const format = body.response_format?.type === 'json_schema' ? body.response_format.json_schema : undefined;
  return {
    model: body.model,
    input: toInputItems(body.messages),
    store: false,
    include: ['reasoning.encrypted_content'],
    ...(body.temperature !== undefined && body.temperature !== null ? { temperature: body.temperature } : {}),
    ...(body.max_tokens !== undefined && body.max_tokens !== null ? { max_output_tokens: body.max_tokens } : {}),
    ...(tools.length > 0 ? { tools, ...toolChoice(body.tool_choice) } : {}),
    ...(format
      ? {
          text: {
            format: {
              type: 'json_schema',
              name: format.name,
              schema: format.schema ?? {},
              ...(format.strict !== undefined && format.strict !== null ? { strict: format.strict } : {}),
            },
          },
        }
      : {}),
  };
}

function toolChoice(
  choice: ChatCompletionToolChoiceOption | undefined,
): Pick<ResponseCreateParamsNonStreaming, 'tool_choice'> {
  if (choice === undefined) return {};
  if (typeof choice === 'string') return { tool_choice: choice };
  if (choice.type === 'function') return { tool_choice: { type: 'function', name: choice.function.name } };
  return {};
}

/** The transcript's messages as Responses input items, in order. */
export function toInputItems(messages: readonly ChatCompletionMessageParam[]): ResponseInputItem[] {
  return messages.flatMap((m): ResponseInputItem[] => {
    switch (m.role) {
      case 'system':
      case 'developer':
        return [{ type: 'message', role: m.role, content: textOf(m.content) }];
      case 'user':
        return [
          {
            type: 'message',
            role: 'user',
            content: typeof m.content === 'string' ? m.content : m.content.map(inputPart),
          },
        ];
      case 'assistant':
        return assistantItems(m as Assistant);
      case 'tool':
        return [{ type: 'function_call_output', call_id: m.tool_call_id, output: textOf(m.content) }];
      default:
        return [];
    }
  });
}

/**
 * An answer's items: its text, then its calls, each after the reasoning
 * items that preceded it. Reasoning whose item is not here is left out.
 */
function assistantItems(m: Assistant): ResponseInputItem[] {
  const reasoning = m[REASONING_FIELD] ?? [];
  const before = (follows: (b: ReasoningEntry['before']) => boolean) =>
    reasoning.filter((r) => follows(r.before)).map((r) => r.item as unknown as ResponseReasoningItem);
  const items: ResponseInputItem[] = [];
  const text = m.content === null || m.content === undefined ? '' : textOf(m.content);
  if (text !== '') {
    const led = before((b) => b.type === 'message');
    const id = reasoning.find((r) => r.before.type === 'message')?.before.id;
    if (led.length > 0 && id !== undefined) {
      items.push(...led, {
        type: 'message',
        role: 'assistant',
        id,
        status: 'completed',
        content: [{ type: 'output_text', text, annotations: [] }],
      });
    } else {
      items.push({ type: 'message', role: 'assistant', content: text });
    }
  }
  for (const call of m.tool_calls ?? []) {
    if (call.type !== 'function') continue;
    const own = reasoning.filter((r) => r.before.type === 'function_call' && r.before.callId === call.id);
    items.push(...own.map((r) => r.item as unknown as ResponseReasoningItem), {
      type: 'function_call',
      call_id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
      ...(own.length > 0 ? { id: own[0].before.id } : {}),
    });
  }
  return items;
}

function inputPart(part: ChatCompletionContentPart): ResponseInputContent {
  switch (part.type) {
    case 'text':
      return { type: 'input_text', text: part.text };
    case 'image_url':
      return { type: 'input_image', image_url: part.image_url.url, detail: part.image_url.detail ?? 'auto' };
    case 'file':
      return {
        type: 'input_file',
        ...(part.file.file_data !== undefined ? { file_data: part.file.file_data } : {}),
        ...(part.file.file_id !== undefined ? { file_id: part.file.file_id } : {}),
        ...(part.file.filename !== undefined ? { filename: part.file.filename } : {}),
      };
    default:
      return { type: 'input_text', text: '' };
  }
}

function textOf(content: string | readonly { type: string; text?: string }[]): string {
  return typeof content === 'string' ? content : content.map((p) => p.text ?? '').join('');
}

/** A broken rule of the Responses form of the guarantee, located by the item's index in the input. */
export type ResponsesItemProblem =
  PairingProblem | { kind: 'reasoning_without_following_item'; index: number; reasoningId: string };

/**
 * The guarantee in its Responses form, checked on the input about to be
 * sent: every `function_call` is answered once, by its `call_id`, before
 * the next message; every reasoning item is followed by the output item it
 * preceded (another reasoning item, or an assistant message or function call
 * sent with its id). An empty list means the input is valid.
 */
export function findResponsesItemProblems(items: readonly ResponseInputItem[]): ResponsesItemProblem[] {
  const problems: ResponsesItemProblem[] = [];
  // One answer's items (reasoning, text, calls) are one assistant message of the pairing rules.
  const grouped: { item: PairingItem; index: number }[] = [];
  let answer: { callIds: string[] } | undefined;
  items.forEach((item, index) => {
    const kind = itemKind(item);
    if (kind === 'answer') {
      if (!answer) {
        answer = { callIds: [] };
        grouped.push({ item: { role: 'assistant', callIds: answer.callIds }, index });
      }
      if (item.type === 'function_call') answer.callIds.push(item.call_id);
      return;
    }
    answer = undefined;
    grouped.push({
      item: item.type === 'function_call_output' ? { role: 'tool', answers: item.call_id ?? '' } : { role: 'user' },
      index,
    });
  });
  for (const p of findPairingProblems(grouped.map((g) => g.item)))
    problems.push({ ...p, index: grouped[p.index].index });
  items.forEach((item, index) => {
    if (item.type !== 'reasoning') return;
    let next = index + 1;
    while (items[next]?.type === 'reasoning') next += 1;
    const following = items[next];
    const identified =
      following !== undefined &&
      (following.type === 'function_call' || (following.type === 'message' && 'id' in following)) &&
      typeof following.id === 'string';
    if (!identified) problems.push({ kind: 'reasoning_without_following_item', index, reasoningId: item.id });
  });
  return problems.sort((a, b) => a.index - b.index);
}

function itemKind(item: ResponseInputItem): 'answer' | 'other' {
  if (item.type === 'reasoning' || item.type === 'function_call') return 'answer';
  if ((item.type === 'message' || item.type === undefined) && 'role' in item && item.role === 'assistant')
    return 'answer';
  return 'other';
}

/** The message with the reasoning entries stored with it, for the Responses API's request (the same one without). */
export function withStoredReasoning(message: ChatMessage, entries: ReasoningEntry[] | undefined): ChatMessage {
  if (message.role !== 'assistant' || !entries || entries.length === 0) return message;
  return { ...message, [REASONING_FIELD]: entries } as ChatMessage;
}
