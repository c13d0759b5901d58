import OpenAI from 'openai';
import type { ResponseInputItem, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { startModelServer, type ModelServer } from '../../src/testing';
import { lookupTool } from '../support/responses-tools';

let server: ModelServer;
let client: OpenAI;

beforeAll(async () => {
  server = await startModelServer();
  client = new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 });
});

beforeEach(() => {
  server.setResponder(undefined);
  server.setToolCallIds('unique');
});

afterAll(async () => {
  await server.close();
});

const ARGS = '{"city":"Oslo","unit":"celsius"}';

const streamed = {
  model: 'gpt-test',
  input: [{ role: 'user' as const, content: 'weather in Oslo?' }],
  tools: [lookupTool],
  store: false,
  include: ['reasoning.encrypted_content' as const],
  stream: true as const,
};

/** Every event of a streamed `client.responses.create`, as the SDK parsed them. */
async function collect(): Promise<ResponseStreamEvent[]> {
  const stream = await client.responses.create(streamed);
  const events: ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

describe('Responses API streaming', () => {
  it("streams OpenAI's event sequence for reasoning, text and a call, numbered in order", async () => {
    server.enqueue({
      reasoningContent: 'Check the weather.',
      content: 'Let me look.',
      toolCalls: [{ name: 'lookup', arguments: ARGS }],
    });
    const events = await collect();
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const text = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    expect(text).toBe('Let me look.');
    const args = events.flatMap((e) => (e.type === 'response.function_call_arguments.delta' ? [e.delta] : [])).join('');
    expect(args).toBe(ARGS);
    const completed = events[events.length - 1];
    if (completed.type !== 'response.completed') throw new Error('no completion');
    expect(completed.response.usage?.output_tokens).toBeGreaterThan(0);
    expect(completed.response.output.map((item) => item.type)).toEqual(['reasoning', 'message', 'function_call']);
    const reasoningDone = events[3];
    expect(reasoningDone.type === 'response.output_item.done' && reasoningDone.item).toMatchObject({
      type: 'reasoning',
      encrypted_content: expect.stringMatching(/^gAAAAA/) as unknown,
    });
  });

  it('assembles in the SDK stream helper to the same response, which can be sent back', async () => {
    server.enqueue({ reasoningContent: 'Think.', toolCalls: [{ name: 'lookup', arguments: ARGS }] });
    const { stream: _stream, ...body } = streamed;
    const final = await client.responses.stream(body).finalResponse();
    expect(final.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
    const call = final.output[1];
    if (call.type !== 'function_call') throw new Error('no call');
    server.enqueue({ content: 'Sunny.' });
    const second = await client.responses.create({
      ...body,
      input: [
        ...body.input,
        ...(final.output as ResponseInputItem[]),
        { type: 'function_call_output', call_id: call.call_id, output: 'sunny' },
      ],
    });
    expect(second.output_text).toBe('Sunny.');
    expect(server.invalidRequests()).toHaveLength(0);
  });

  it('streams reasoning summary events when reasoning.summary asks for them', async () => {
    server.enqueue({ reasoningContent: 'Short thought.', content: 'ok' });
    const stream = await client.responses.create({ ...streamed, reasoning: { summary: 'auto' } });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types).toContain('response.reasoning_summary_part.added');
    expect(types).toContain('response.reasoning_summary_text.delta');
    expect(types).toContain('response.reasoning_summary_text.done');
    expect(types).toContain('response.reasoning_summary_part.done');
  });

  it('ends a reply cut by length with response.incomplete', async () => {
    server.enqueue({ content: 'cut', finishReason: 'length' });
    const events = await collect();
    expect(events[events.length - 1].type).toBe('response.incomplete');
  });

  it('breaks the stream after the first text delta on a scripted drop', async () => {
    server.enqueue({ kind: 'drop', content: 'This will be cut off.' });
    const seen: string[] = [];
    const outcome = await (async () => {
      const stream = await client.responses.create(streamed);
      for await (const event of stream) seen.push(event.type);
    })().catch((err: unknown) => err);
    expect(outcome).toBeInstanceOf(Error);
    expect(seen[seen.length - 1]).toBe('response.output_text.delta');
    expect(seen).not.toContain('response.completed');
  });

  it('cuts the first call mid-arguments under cutAfterArgumentChars', async () => {
    server.enqueue({ toolCalls: [{ name: 'lookup', arguments: ARGS }], stream: { cutAfterArgumentChars: 5 } });
    const deltas: string[] = [];
    const outcome = await (async () => {
      const stream = await client.responses.create(streamed);
      for await (const event of stream)
        if (event.type === 'response.function_call_arguments.delta') deltas.push(event.delta);
    })().catch((err: unknown) => err);
    expect(outcome).toBeInstanceOf(Error);
    expect(deltas.join('')).toBe(ARGS.slice(0, 5));
  });

  it('ends without response.completed under omitDone', async () => {
    server.enqueue({ content: 'no end', stream: { omitDone: true } });
    const events = await collect();
    expect(events.map((e) => e.type)).not.toContain('response.completed');
    expect(events[events.length - 1].type).toBe('response.output_item.done');
  });

  it('stalls after the given number of events until the client gives up', async () => {
    server.enqueue({ content: 'slow', stream: { stallAfterChunks: 2 } });
    const controller = new AbortController();
    const seen: string[] = [];
    const stream = await client.responses.create(streamed, { signal: controller.signal });
    // The SDK ends the iteration quietly when its own signal aborts it.
    await (async () => {
      for await (const event of stream) {
        seen.push(event.type);
        if (seen.length === 2) setTimeout(() => controller.abort(), 50);
      }
    })().catch((err: unknown) => err);
    expect(seen).toEqual(['response.created', 'response.in_progress']);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(server.requests[server.requests.length - 1].aborted).toBe(true);
  });

  it('repeats a call id across the calls of one streamed response under the duplicated scheme', async () => {
    server.setToolCallIds('duplicated');
    server.enqueue({
      toolCalls: [
        { name: 'lookup', arguments: ARGS },
        { name: 'lookup', arguments: ARGS },
      ],
    });
    const events = await collect();
    const ids = events.flatMap((e) =>
      e.type === 'response.output_item.added' && e.item.type === 'function_call' ? [e.item.call_id] : [],
    );
    expect(ids).toHaveLength(2);
    expect(ids[0]).toBe(ids[1]);
  });

  it('frames each event as event: and data: lines naming the same type, after keep-alive lines, with no [DONE]', async () => {
    server.enqueue({ content: 'Hi', stream: { keepAlive: 2 } });
    const response = await fetch(`${server.url}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', input: 'hi', stream: true }),
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const blocks = (await response.text()).split('\n\n').filter((b) => b.length > 0);
    expect(blocks.slice(0, 2)).toEqual([': keep-alive', ': keep-alive']);
    for (const block of blocks.slice(2)) {
      const [eventLine, dataLine, ...rest] = block.split('\n');
      expect(rest).toEqual([]);
      const data = JSON.parse(dataLine.replace(/^data: /, '')) as { type: string };
      expect(eventLine).toBe(`event: ${data.type}`);
    }
    expect(blocks.join('')).not.toContain('[DONE]');
  });

  it('answers a streamed request with a scripted 429 before any event', async () => {
    server.enqueue({ kind: 'http_error', status: 429, headers: { 'retry-after': '1' } });
    await expect(client.responses.create(streamed)).rejects.toBeInstanceOf(OpenAI.RateLimitError);
  });
});
