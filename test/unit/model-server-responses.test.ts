import OpenAI from 'openai';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { startModelServer, type ModelServer } from '../../src/testing';
import { validateResponsesRequest } from '../../src/testing/responses-validate';
import {
  encryptedContentNotVerifiedMessage,
  itemNotPersistedMessage,
  noToolCallMessage,
  noToolOutputMessage,
  previousResponseNotFoundMessage,
  reasoningWithoutFollowingItemMessage,
  RESPONSES_CONTEXT_EXCEEDED_MESSAGE,
} from '../../src/testing/responses-errors';
import { lookupTool } from '../support/responses-tools';

let server: ModelServer;
let client: OpenAI;

beforeAll(async () => {
  server = await startModelServer();
  client = new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 });
});

beforeEach(() => {
  server.setResponder(() => ({ content: 'ok' }));
  server.setContextWindow(undefined);
  server.setToolCallIds('unique');
});

afterAll(async () => {
  await server.close();
});

/** What the SDK throws for a refused request, reduced to what OpenAI sends. */
async function refusal(body: Record<string, unknown>): Promise<{ status: number; error: unknown }> {
  try {
    await client.responses.create(body as never);
  } catch (err) {
    if (err instanceof OpenAI.APIError) return { status: err.status ?? 0, error: err.error };
    throw err;
  }
  throw new Error('the request was accepted');
}

/** A first turn that calls `lookup` with reasoning kept encrypted, as a stateless client asks for it. */
async function firstTurn(reply: Parameters<ModelServer['enqueue']>[0]) {
  server.enqueue(reply);
  return client.responses.create({
    model: 'gpt-test',
    input: [{ role: 'user', content: 'weather in Oslo?' }],
    tools: [lookupTool],
    store: false,
    include: ['reasoning.encrypted_content'],
  });
}

describe('Responses API: replies', () => {
  it('answers text as an assistant message the SDK reads, with usage, and records the request by path', async () => {
    server.enqueue({ content: 'Hello there' });
    const response = await client.responses.create({ model: 'gpt-test', input: 'hi' });
    expect(response.object).toBe('response');
    expect(response.id).toMatch(/^resp_[0-9a-f]{50}$/);
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('Hello there');
    expect(response.output).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' });
    expect(response.usage?.input_tokens).toBeGreaterThan(0);
    expect(response.usage?.total_tokens).toBe(
      (response.usage?.input_tokens ?? 0) + (response.usage?.output_tokens ?? 0),
    );
    const record = server.requests[server.requests.length - 1];
    expect(record).toMatchObject({ method: 'POST', path: '/v1/responses', valid: true });
    expect(record.body).toMatchObject({ model: 'gpt-test', input: 'hi' });
  });

  it('answers tool calls as function_call items with call ids, after the reasoning item', async () => {
    const response = await firstTurn({
      reasoningContent: 'I should look it up.',
      toolCalls: [{ name: 'lookup', arguments: { city: 'Oslo' } }],
    });
    expect(response.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
    const [reasoning, call] = response.output;
    expect(reasoning.type === 'reasoning' && reasoning.id).toMatch(/^rs_/);
    expect(reasoning.type === 'reasoning' && reasoning.encrypted_content).toMatch(/^gAAAAA/);
    expect(call).toMatchObject({ type: 'function_call', name: 'lookup', arguments: '{"city":"Oslo"}' });
    expect(call.type === 'function_call' && call.call_id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(response.usage?.output_tokens_details.reasoning_tokens).toBeGreaterThan(0);
  });

  it('sends encrypted_content only when include asks for it, and a summary only when reasoning.summary does', async () => {
    server.enqueue({ reasoningContent: 'thinking', content: 'done' });
    const plain = await client.responses.create({ model: 'gpt-test', input: 'hi' });
    expect(plain.output[0]).toMatchObject({ type: 'reasoning', summary: [] });
    expect(plain.output[0]).not.toHaveProperty('encrypted_content');
    server.enqueue({ reasoningContent: 'thinking', content: 'done' });
    const summarised = await client.responses.create({
      model: 'gpt-test',
      input: 'hi',
      reasoning: { effort: 'low', summary: 'auto' },
    });
    expect(summarised.output[0]).toMatchObject({ summary: [{ type: 'summary_text', text: 'thinking' }] });
  });

  it('accepts the whole exchange sent back: reasoning intact, then its call, then the output', async () => {
    const first = await firstTurn({
      reasoningContent: 'look it up',
      toolCalls: [{ name: 'lookup', arguments: { city: 'Oslo' } }],
    });
    server.enqueue({ content: 'It is sunny.' });
    const second = await client.responses.create({
      model: 'gpt-test',
      input: [
        { role: 'user', content: 'weather in Oslo?' },
        ...(first.output as ResponseInputItem[]),
        { type: 'function_call_output', call_id: callId(first), output: '{"sky":"sunny"}' },
      ],
      tools: [lookupTool],
      store: false,
      include: ['reasoning.encrypted_content'],
    });
    expect(second.output_text).toBe('It is sunny.');
    expect(server.invalidRequests()).toHaveLength(0);
  });

  it('marks a reply cut by length as incomplete', async () => {
    server.enqueue({ content: 'partial', finishReason: 'length' });
    const response = await client.responses.create({ model: 'gpt-test', input: 'hi' });
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
  });

  it('repeats call ids within a response under the duplicated scheme', async () => {
    server.setToolCallIds('duplicated');
    server.enqueue({
      toolCalls: [
        { name: 'lookup', arguments: {} },
        { name: 'lookup', arguments: {} },
      ],
    });
    const response = await client.responses.create({ model: 'gpt-test', input: 'hi', tools: [lookupTool] });
    const ids = response.output.map((item) => (item.type === 'function_call' ? item.call_id : ''));
    expect(ids[0]).toBe(ids[1]);
  });

  it('answers a scripted 429 with retry-after and a 500 as OpenAI does', async () => {
    server.enqueue({ kind: 'http_error', status: 429, headers: { 'retry-after': '2' } });
    const limited = await client.responses.create({ model: 'gpt-test', input: 'hi' }).catch((err: unknown) => err);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect((limited as InstanceType<typeof OpenAI.RateLimitError>).headers?.get('retry-after')).toBe('2');
    server.enqueue({ kind: 'http_error', status: 500 });
    const failed = await client.responses.create({ model: 'gpt-test', input: 'hi' }).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(OpenAI.InternalServerError);
  });

  it('drops the connection of a non-streamed request on a scripted drop', async () => {
    server.enqueue({ kind: 'drop' });
    const dropped = await client.responses.create({ model: 'gpt-test', input: 'hi' }).catch((err: unknown) => err);
    expect(dropped).toBeInstanceOf(OpenAI.APIConnectionError);
  });
});

function callId(response: OpenAI.Responses.Response): string {
  const call = response.output.find((item) => item.type === 'function_call');
  if (call?.type !== 'function_call') throw new Error('no function call');
  return call.call_id;
}

describe('Responses API: the rules OpenAI enforces', () => {
  it('refuses a function_call without its function_call_output', async () => {
    const { status, error } = await refusal({
      model: 'gpt-test',
      input: [
        { role: 'user', content: 'hi' },
        { type: 'function_call', call_id: 'call_a', name: 'lookup', arguments: '{}' },
        { role: 'user', content: 'again' },
      ],
    });
    expect(status).toBe(400);
    expect(error).toEqual({
      message: noToolOutputMessage('call_a'),
      type: 'invalid_request_error',
      param: 'input',
      code: null,
    });
    expect(server.requests[server.requests.length - 1].valid).toBe(false);
  });

  it('refuses a function_call_output whose call is not before it', async () => {
    const { error } = await refusal({
      model: 'gpt-test',
      input: [
        { role: 'user', content: 'hi' },
        { type: 'function_call_output', call_id: 'call_b', output: 'x' },
      ],
    });
    expect(error).toMatchObject({ message: noToolCallMessage('call_b'), param: 'input' });
  });

  it('refuses a call answered twice', async () => {
    const { error } = await refusal({
      model: 'gpt-test',
      input: [
        { type: 'function_call', call_id: 'call_c', name: 'lookup', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_c', output: 'x' },
        { type: 'function_call_output', call_id: 'call_c', output: 'y' },
      ],
    });
    expect(error).toMatchObject({ code: 'duplicate_call_output', param: 'input' });
  });

  it('refuses a reasoning item sent without the item that followed it', async () => {
    const first = await firstTurn({ reasoningContent: 'r', toolCalls: [{ name: 'lookup', arguments: { city: 'A' } }] });
    const [reasoning] = first.output as ResponseInputItem[];
    const { error } = await refusal({
      model: 'gpt-test',
      store: false,
      input: [{ role: 'user', content: 'weather?' }, reasoning, { role: 'user', content: 'and now?' }],
    });
    expect(error).toEqual({
      message: reasoningWithoutFollowingItemMessage(first.output[0].id ?? ''),
      type: 'invalid_request_error',
      param: 'input',
      code: null,
    });
  });

  it('refuses a reasoning item followed by another call than its own', async () => {
    const first = await firstTurn({ reasoningContent: 'r', toolCalls: [{ name: 'lookup', arguments: { city: 'A' } }] });
    const [reasoning] = first.output as ResponseInputItem[];
    const { error } = await refusal({
      model: 'gpt-test',
      store: false,
      input: [
        reasoning,
        { type: 'function_call', call_id: 'call_other', name: 'lookup', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_other', output: 'x' },
      ],
    });
    expect(error).toMatchObject({ message: reasoningWithoutFollowingItemMessage(first.output[0].id ?? '') });
  });

  it('accepts reasoning items in a row before the item they lead to', async () => {
    const first = await firstTurn({ reasoningContent: 'r', toolCalls: [{ name: 'lookup', arguments: { city: 'A' } }] });
    const [reasoning, call] = first.output as ResponseInputItem[];
    server.enqueue({ content: 'fine' });
    const second = await client.responses.create({
      model: 'gpt-test',
      store: false,
      input: [reasoning, reasoning, call, { type: 'function_call_output', call_id: callId(first), output: 'x' }],
    });
    expect(second.output_text).toBe('fine');
  });

  it('refuses tampered encrypted_content with invalid_encrypted_content', async () => {
    const first = await firstTurn({ reasoningContent: 'r', toolCalls: [{ name: 'lookup', arguments: { city: 'A' } }] });
    const [reasoning, call] = first.output;
    if (reasoning.type !== 'reasoning' || !reasoning.encrypted_content) throw new Error('no encrypted reasoning');
    const original = reasoning.encrypted_content;
    const middle = Math.floor(original.length / 2);
    const tampered = original.slice(0, middle) + (original[middle] === 'A' ? 'B' : 'A') + original.slice(middle + 1);
    const { error } = await refusal({
      model: 'gpt-test',
      store: false,
      input: [
        { ...reasoning, encrypted_content: tampered },
        call,
        { type: 'function_call_output', call_id: callId(first), output: 'x' },
      ],
    });
    expect(error).toEqual({
      message: encryptedContentNotVerifiedMessage(tampered),
      type: 'invalid_request_error',
      param: null,
      code: 'invalid_encrypted_content',
    });
    expect(encryptedContentNotVerifiedMessage(tampered)).toMatch(
      /^The encrypted content gAAA\.\.\..{4} could not be verified\.$/,
    );
  });

  it('refuses a reasoning item without its encrypted_content when store is false', async () => {
    const first = await firstTurn({ reasoningContent: 'r', content: 'hello' });
    const [reasoning, message] = first.output;
    const { error } = await refusal({
      model: 'gpt-test',
      store: false,
      input: [{ type: 'reasoning', id: reasoning.id, summary: [] }, message],
    });
    expect(error).toMatchObject({ message: itemNotPersistedMessage(reasoning.id ?? ''), param: 'input' });
  });

  it('refuses previous_response_id: nothing is stored, as with store false', async () => {
    const { error } = await refusal({ model: 'gpt-test', store: false, previous_response_id: 'resp_x', input: 'hi' });
    expect(error).toEqual({
      message: previousResponseNotFoundMessage('resp_x'),
      type: 'invalid_request_error',
      param: 'previous_response_id',
      code: 'previous_response_not_found',
    });
  });

  it('refuses unknown item types, naming the supported ones', async () => {
    const { error } = await refusal({ model: 'gpt-test', input: [{ type: 'telepathy', content: 'x' }] });
    expect(error).toMatchObject({ param: 'input[0].type', code: 'invalid_value' });
    expect((error as { message: string }).message).toMatch(
      /^Invalid value: 'telepathy'\. Supported values are: 'message'/,
    );
  });

  it('refuses an assistant message with input parts', async () => {
    const { error } = await refusal({
      model: 'gpt-test',
      input: [{ role: 'assistant', content: [{ type: 'input_text', text: 'x' }] }],
    });
    expect(error).toMatchObject({
      message: "Invalid value: 'input_text'. Supported values are: 'output_text' and 'refusal'.",
      param: 'input[0].content[0]',
    });
  });

  it('refuses a strict function whose schema strict mode does not take', async () => {
    const { error } = await refusal({
      model: 'gpt-test',
      input: 'hi',
      tools: [
        { type: 'function', name: 'lookup', strict: true, parameters: { type: 'object', properties: { a: {} } } },
      ],
    });
    expect(error).toMatchObject({ param: 'tools[0].parameters', code: 'invalid_function_parameters' });
    expect((error as { message: string }).message).toMatch(/^Invalid schema for function 'lookup': /);
  });

  it('refuses a strict text.format json_schema that breaks structured outputs', async () => {
    const { error } = await refusal({
      model: 'gpt-test',
      input: 'hi',
      text: {
        format: {
          type: 'json_schema',
          name: 'answer',
          strict: true,
          schema: { type: 'object', properties: { a: { type: 'string' } } },
        },
      },
    });
    expect(error).toMatchObject({ param: 'text.format.schema' });
    expect((error as { message: string }).message).toMatch(/^Invalid schema for response_format 'answer': /);
  });

  it('accepts a strict text.format json_schema and function tools that keep the rules', async () => {
    const response = await client.responses.create({
      model: 'gpt-test',
      input: 'hi',
      tools: [lookupTool],
      tool_choice: { type: 'function', name: 'lookup' },
      text: {
        format: {
          type: 'json_schema',
          name: 'answer',
          strict: true,
          schema: {
            type: 'object',
            properties: { a: { type: 'string' } },
            required: ['a'],
            additionalProperties: false,
          },
        },
      },
    });
    expect(response.status).toBe('completed');
  });

  it('refuses an include value the API does not know', async () => {
    const { error } = await refusal({ model: 'gpt-test', input: 'hi', include: ['reasoning.plaintext'] });
    expect(error).toMatchObject({ param: 'include[0]', code: 'invalid_value' });
  });

  it('refuses input over the context window with OpenAI context_length_exceeded', async () => {
    server.setContextWindow(20);
    const { error } = await refusal({ model: 'gpt-test', input: 'word '.repeat(200) });
    expect(error).toEqual({
      message: RESPONSES_CONTEXT_EXCEEDED_MESSAGE,
      type: 'invalid_request_error',
      param: 'input',
      code: 'context_length_exceeded',
    });
  });

  it('validates without a server too', () => {
    expect(validateResponsesRequest({ model: 'm', input: 'hi' })).toBeNull();
    expect(validateResponsesRequest({ input: 'hi' })?.body.error.message).toBe("Missing required parameter: 'model'.");
  });
});
