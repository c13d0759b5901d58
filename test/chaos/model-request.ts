/**
 * The chaos run's reading of the requests the scripted model server received,
 * on either API: a Chat Completions body (`messages`, `tools[].function`) or a
 * Responses API body (`input` items, `tools[].name`) seen the same way, as the
 * conversation's messages and the tools offered, so the scripted model plays
 * both alike; and the Responses form of the guarantee checked again on every
 * Responses request the server accepted.
 */
import type { ModelApi } from '../../src/contract/model-api';
import type { RecordedRequest } from '../../src/testing';
import { contextLengthExceededBody, countPromptTokens } from '../../src/testing/context-window';
import { errorBody } from '../../src/testing/provider-errors';
import { openReasoning } from '../../src/testing/responses-encrypted';
import { RESPONSES_CONTEXT_EXCEEDED_MESSAGE } from '../../src/testing/responses-errors';
import { RESPONSES_PATH } from '../../src/testing/responses-handle';
import { countInputTokens } from '../../src/testing/responses-plan';

/** A message of the conversation as a request carries it: its role, and its text for system and user messages. */
export interface RequestMessage {
  role: string;
  content?: unknown;
}

/** A request as the scripted model reads it, whichever API it came on. */
export interface RequestView {
  api: ModelApi;
  /** One per message: each Responses answer (its reasoning, text and calls) is one assistant message. */
  messages: RequestMessage[];
  /** Names of the function tools offered. */
  toolNames: string[];
}

/** The API a recorded request was sent to. */
export function apiOf(request: Pick<RecordedRequest, 'path'>): ModelApi {
  return request.path.replace(/\/+$/, '') === RESPONSES_PATH ? 'responses' : 'chat';
}

type Item = Record<string, unknown>;

/** The items of a Responses request's `input` (a bare string is one user message). */
function inputItems(body: unknown): Item[] {
  const input = (body as { input?: unknown } | undefined)?.input;
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  return Array.isArray(input) ? (input as Item[]) : [];
}

/** A message item's type, as the API resolves a bare `{ role, content }`. */
function typeOf(item: Item): string | undefined {
  return typeof item.type === 'string' ? item.type : typeof item.role === 'string' ? 'message' : undefined;
}

/** The text of a message item's content: a string, or the text of its parts. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as { text?: unknown }[]).map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
}

/** Reads a recorded request of either API. */
export function viewRequest(request: RecordedRequest): RequestView {
  const api = apiOf(request);
  const body = request.body as { messages?: RequestMessage[]; tools?: Item[] } | undefined;
  if (api === 'chat') {
    return {
      api,
      messages: Array.isArray(body?.messages) ? body.messages : [],
      toolNames: (body?.tools ?? []).flatMap((t) => {
        const name = (t.function as { name?: unknown } | undefined)?.name;
        return typeof name === 'string' ? [name] : [];
      }),
    };
  }
  const messages: RequestMessage[] = [];
  // The answer being read: an assistant message item comes before its calls, so one after a call starts the next.
  let answer: { hasTextOrCall: boolean } | undefined;
  for (const item of inputItems(body)) {
    const type = typeOf(item);
    if (type === 'message' && item.role !== 'assistant') {
      messages.push({ role: String(item.role), content: textOf(item.content) });
      answer = undefined;
    } else if (type === 'function_call_output') {
      messages.push({ role: 'tool', content: item.output });
      answer = undefined;
    } else if (type === 'message' || type === 'function_call' || type === 'reasoning') {
      const startsAnother = type === 'message' && answer?.hasTextOrCall;
      if (!answer || startsAnother) {
        answer = { hasTextOrCall: false };
        messages.push({ role: 'assistant' });
      }
      if (type !== 'reasoning') answer.hasTextOrCall = true;
    }
  }
  return {
    api,
    messages,
    toolNames: (body?.tools ?? []).flatMap((t) =>
      t.type === 'function' && typeof t.name === 'string' ? [t.name] : [],
    ),
  };
}

/**
 * The provider's refusal of a request over its context window, in the form of the request's API: Chat Completions
 * states the window (`windowTokens`), the Responses API does not.
 */
export function contextExceededBody(request: RecordedRequest, windowTokens: number): unknown {
  if (apiOf(request) === 'responses')
    return errorBody(RESPONSES_CONTEXT_EXCEEDED_MESSAGE, 'invalid_request_error', 'input', 'context_length_exceeded');
  const tokens = countPromptTokens(request.body as { messages?: unknown; tools?: unknown });
  return contextLengthExceededBody(windowTokens, Math.max(tokens, windowTokens + 1));
}

/** The input tokens of a request of either API, as the scripted server counts them. */
export function promptTokensOf(request: RecordedRequest): number {
  return apiOf(request) === 'responses'
    ? countInputTokens(request.body as { input?: unknown })
    : countPromptTokens(request.body as { messages?: unknown; tools?: unknown });
}

/** What the run's Responses requests carried back. */
export interface ResponsesRequestStats {
  /** Reasoning items sent back, over every accepted Responses request. */
  reasoningItemsSentBack: number;
  /** Calls of `reasoningLed` sent back, over every accepted Responses request (each checked for its reasoning). */
  reasoningLedCallsSent: number;
  /** One line per accepted Responses request that breaks a rule of its form of the guarantee. */
  ruleBreaks: string[];
  /**
   * One line per call sent back without the reasoning the model wrote just before it (valid for the API, but the
   * reasoning the worker promises to carry is lost).
   */
  reasoningLost: string[];
}

/**
 * Checks again, on every Responses request the server accepted, what the
 * worker promises (docs/model-apis.md): `store: false` with the encrypted
 * reasoning asked for and no `previous_response_id` or item reference; every
 * `function_call` answered by exactly one `function_call_output` of its
 * `call_id`, after it; every reasoning item sent back with its encrypted
 * content and followed, past other reasoning items, by the item that followed
 * it in the model's output, sent with its id. And that each call of
 * `reasoningLed` (the model wrote reasoning right before it) is sent back
 * with that reasoning just before it.
 */
export function checkResponsesRequests(
  requests: readonly RecordedRequest[],
  reasoningLed: ReadonlySet<string> = new Set(),
): ResponsesRequestStats {
  const stats: ResponsesRequestStats = {
    reasoningItemsSentBack: 0,
    reasoningLedCallsSent: 0,
    ruleBreaks: [],
    reasoningLost: [],
  };
  for (const request of requests) {
    if (!request.valid || request.method !== 'POST' || apiOf(request) !== 'responses') continue;
    const breaks: string[] = [];
    const body = request.body as Item;
    if (body.store !== false) breaks.push('store is not false');
    if (!Array.isArray(body.include) || !body.include.includes('reasoning.encrypted_content'))
      breaks.push('reasoning.encrypted_content not included');
    if (body.previous_response_id !== undefined && body.previous_response_id !== null)
      breaks.push('previous_response_id sent');
    const items = inputItems(body);
    const calls = new Map<string, number>();
    const outputs = new Map<string, number>();
    items.forEach((item, i) => {
      const type = typeOf(item);
      if (type === 'function_call') {
        calls.set(String(item.call_id), (calls.get(String(item.call_id)) ?? 0) + 1);
        if (reasoningLed.has(String(item.call_id))) stats.reasoningLedCallsSent++;
        if (reasoningLed.has(String(item.call_id)) && (i === 0 || typeOf(items[i - 1]) !== 'reasoning'))
          stats.reasoningLost.push(
            `Responses request #${request.index}: input[${i}]: call ${String(item.call_id)} without its reasoning`,
          );
      } else if (type === 'function_call_output') {
        const id = String(item.call_id);
        outputs.set(id, (outputs.get(id) ?? 0) + 1);
        if ((outputs.get(id) ?? 0) > (calls.get(id) ?? 0))
          breaks.push(`input[${i}]: function_call_output ${id} without a function_call of its call_id before it`);
      } else if (type === 'item_reference') breaks.push(`input[${i}]: an item reference (${String(item.id)})`);
      else if (type === 'reasoning') {
        stats.reasoningItemsSentBack++;
        const problem = reasoningProblem(items, i);
        if (problem) breaks.push(`input[${i}]: reasoning ${String(item.id)} ${problem}`);
      }
    });
    for (const [id, n] of calls) {
      if ((outputs.get(id) ?? 0) !== n)
        breaks.push(`function_call ${id} sent ${n} time(s), answered ${outputs.get(id) ?? 0}`);
    }
    if (breaks.length > 0) stats.ruleBreaks.push(`Responses request #${request.index}: ${breaks.join('; ')}`);
  }
  return stats;
}

/** Why the reasoning item at `at` may not be sent as it is; undefined when it may. */
function reasoningProblem(items: readonly Item[], at: number): string | undefined {
  const sealed = openReasoning(items[at].encrypted_content);
  if (!sealed) return 'without the encrypted content the model gave';
  let after = at + 1;
  while (after < items.length && typeOf(items[after]) === 'reasoning') after++;
  const next = items[after];
  if (next === undefined) return 'last in the input';
  if (typeof next.id !== 'string') return `followed by an item without its id (${String(typeOf(next))})`;
  const follows =
    sealed.next.type === 'message'
      ? typeOf(next) === 'message' && next.role === 'assistant'
      : typeOf(next) === 'function_call' && next.call_id === sealed.next.call_id;
  return follows ? undefined : `not followed by the ${sealed.next.type} it preceded`;
}
