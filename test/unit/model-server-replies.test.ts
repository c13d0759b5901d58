import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { startModelServer, type ModelServer, type RecordedRequest } from '../../src/testing';
import {
  DEFAULT_SERVER_ERROR_MESSAGE,
  NO_SCRIPTED_REPLY_MESSAGE,
  RESPONDER_FAILED_PREFIX,
} from '../../src/testing/server';
import type { ScriptedMessageReply } from '../../src/testing/types';

let server: ModelServer;
let client: OpenAI;

beforeAll(async () => {
  server = await startModelServer();
  client = new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 });
});

afterEach(() => {
  server.setResponder(undefined);
});

afterAll(async () => {
  await server.close();
});

const ask = (content = 'hi') => ({ model: 'gpt-test', messages: [{ role: 'user' as const, content }] });

const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

async function waitFor(condition: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function lastRequest(): RecordedRequest {
  return server.requests[server.requests.length - 1];
}

describe('scripted message replies', () => {
  it('answers with the scripted content as an OpenAI chat.completion', async () => {
    server.enqueue({ content: 'Hello from the script.' });
    const completion = await client.chat.completions.create(ask());
    expect(completion.object).toBe('chat.completion');
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.model).toBe('gpt-test');
    expect(typeof completion.created).toBe('number');
    expect(completion.choices).toHaveLength(1);
    expect(completion.choices[0].message.role).toBe('assistant');
    expect(completion.choices[0].message.content).toBe('Hello from the script.');
    expect(completion.choices[0].message.tool_calls).toBeUndefined();
    expect(completion.choices[0].finish_reason).toBe('stop');
    expect(completion.usage?.total_tokens).toBeGreaterThan(0);
    expect(lastRequest()).toMatchObject({ valid: true, aborted: false, path: '/v1/chat/completions', method: 'POST' });
  });

  it('defaults content to an empty string when nothing is scripted', async () => {
    server.enqueue({});
    const completion = await client.chat.completions.create(ask());
    expect(completion.choices[0].message.content).toBe('');
    expect(completion.choices[0].finish_reason).toBe('stop');
  });

  it('makes tool calls with object arguments JSON-encoded and fresh call ids', async () => {
    server.enqueue({
      toolCalls: [
        { name: 'get_weather', arguments: { city: 'Oslo' } },
        { id: 'call_fixed_rome', name: 'get_weather', arguments: { city: 'Rome' } },
      ],
    });
    const completion = await client.chat.completions.create({ ...ask('Weather?'), tools: [weatherTool] });
    const choice = completion.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const calls = choice.message.tool_calls ?? [];
    expect(calls).toHaveLength(2);
    expect(calls[0].id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(calls[0]).toMatchObject({
      type: 'function',
      function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
    });
    expect(calls[1]).toMatchObject({ id: 'call_fixed_rome', function: { arguments: '{"city":"Rome"}' } });
  });

  it('sends malformed string arguments verbatim', async () => {
    server.enqueue({ toolCalls: [{ id: 'call_bad', name: 'get_weather', arguments: '{"city": "Os' }] });
    const completion = await client.chat.completions.create({ ...ask(), tools: [weatherTool] });
    const call = completion.choices[0].message.tool_calls?.[0];
    expect(call?.type === 'function' && call.function.arguments).toBe('{"city": "Os');
  });

  it('keeps a scripted finish_reason, content next to tool calls and reasoning content', async () => {
    server.enqueue({
      content: 'Let me check.',
      reasoningContent: 'The user wants weather.',
      toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":' }],
      finishReason: 'length',
    });
    const completion = await client.chat.completions.create({ ...ask(), tools: [weatherTool] });
    const choice = completion.choices[0];
    expect(choice.finish_reason).toBe('length');
    expect(choice.message.content).toBe('Let me check.');
    expect((choice.message as unknown as { reasoning_content: string }).reasoning_content).toBe(
      'The user wants weather.',
    );
    expect(choice.message.tool_calls).toHaveLength(1);
  });
});

describe('choosing the reply', () => {
  it('uses queued replies first, in order, then the responder', async () => {
    const seen: unknown[] = [];
    server.setResponder((request) => {
      seen.push(request.body);
      return { content: `responder saw request #${request.index}` };
    });
    server.enqueue({ content: 'first queued' }, { content: 'second queued' });

    const answers: (string | null)[] = [];
    for (const question of ['one', 'two', 'three']) {
      const completion = await client.chat.completions.create(ask(question));
      answers.push(completion.choices[0].message.content);
    }
    const third = lastRequest();
    expect(answers).toEqual(['first queued', 'second queued', `responder saw request #${third.index}`]);
    expect(seen).toEqual([{ model: 'gpt-test', messages: [{ role: 'user', content: 'three' }] }]);
    expect(third.reply).toEqual({ content: `responder saw request #${third.index}` });
  });

  it('lets an async responder decide from the request', async () => {
    server.setResponder(async (request) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      const body = request.body as { messages: { content: string }[] };
      return { content: body.messages[0].content.toUpperCase() };
    });
    const completion = await client.chat.completions.create(ask('shout this'));
    expect(completion.choices[0].message.content).toBe('SHOUT THIS');
  });

  it('answers a 500 saying no scripted reply is left when the queue is empty and no responder is set', async () => {
    const outcome = await client.chat.completions.create(ask()).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(outcome).toBeInstanceOf(OpenAI.InternalServerError);
    const err = outcome as InstanceType<typeof OpenAI.InternalServerError>;
    expect(err.status).toBe(500);
    expect(err.message).toBe(`500 ${NO_SCRIPTED_REPLY_MESSAGE}`);
    expect(err.message).toContain('no scripted reply left');
    expect(lastRequest().valid).toBe(true);
  });

  it('answers a 500 naming the error when the responder throws', async () => {
    server.setResponder(() => {
      throw new Error('script bug');
    });
    await expect(client.chat.completions.create(ask())).rejects.toThrow(`500 ${RESPONDER_FAILED_PREFIX}script bug`);
  });
});

describe('faults', () => {
  it('surfaces a scripted 500 as an InternalServerError with an OpenAI-style body', async () => {
    server.enqueue({ kind: 'http_error', status: 500 });
    const outcome = await client.chat.completions.create(ask()).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(outcome).toBeInstanceOf(OpenAI.InternalServerError);
    const err = outcome as InstanceType<typeof OpenAI.InternalServerError>;
    expect(err.status).toBe(500);
    expect(err.message).toBe(`500 ${DEFAULT_SERVER_ERROR_MESSAGE}`);
    expect(err.type).toBe('server_error');
  });

  it('sends a scripted error body as given', async () => {
    server.enqueue({
      kind: 'http_error',
      status: 429,
      body: { error: { message: 'Slow down.', type: 'requests', param: null, code: 'rate_limit_exceeded' } },
    });
    const outcome = await client.chat.completions.create(ask()).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(outcome).toBeInstanceOf(OpenAI.RateLimitError);
    expect((outcome as Error).message).toBe('429 Slow down.');
    expect((outcome as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('rate_limit_exceeded');
  });

  it('delays a reply by the scripted time', async () => {
    server.enqueue({ kind: 'delay', ms: 150, then: { content: 'late but here' } });
    const started = Date.now();
    const completion = await client.chat.completions.create(ask());
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(completion.choices[0].message.content).toBe('late but here');
    expect(lastRequest().reply).toEqual({ kind: 'delay', ms: 150, then: { content: 'late but here' } });
  });

  it('hangs until the client aborts, and records the request as aborted', async () => {
    server.enqueue({ kind: 'hang' });
    const before = server.requests.length;
    const controller = new AbortController();
    const pending = client.chat.completions.create(ask(), { signal: controller.signal }).then(
      () => undefined,
      (err: unknown) => err,
    );
    await waitFor(() => server.requests[before]?.reply !== undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(server.requests[before].aborted).toBe(false);

    controller.abort();
    expect(await pending).toBeInstanceOf(OpenAI.APIUserAbortError);
    await waitFor(() => server.requests[before].aborted);
    expect(server.requests[before]).toMatchObject({ valid: true, aborted: true, reply: { kind: 'hang' } });
  });

  it('drops the connection of a non-streaming request without an answer', async () => {
    server.enqueue({ kind: 'drop' });
    const outcome = await client.chat.completions.create(ask()).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(outcome).toBeInstanceOf(OpenAI.APIConnectionError);
    expect(lastRequest()).toMatchObject({ valid: true, aborted: false, reply: { kind: 'drop' } });
  });
});

describe('streaming', () => {
  const scripted: ScriptedMessageReply = {
    content: 'Checking the weather in two cities for you.',
    toolCalls: [
      { id: 'call_stream_oslo', name: 'get_weather', arguments: { city: 'Oslo', unit: 'celsius' } },
      { id: 'call_stream_rome', name: 'get_weather', arguments: '{"city":"Rome"' },
    ],
  };

  it('streams the same reply the non-streaming answer gives, with a usage chunk at the end', async () => {
    server.enqueue(scripted, scripted);
    const plain = await client.chat.completions.create({ ...ask(), tools: [weatherTool] });

    const stream = await client.chat.completions.create({
      ...ask(),
      tools: [weatherTool],
      stream: true,
      stream_options: { include_usage: true },
    });
    let role: string | undefined;
    let content = '';
    let finishReason: string | null = null;
    let contentChunks = 0;
    let usage: OpenAI.CompletionUsage | null | undefined;
    let chunksAfterUsage = 0;
    const calls: { id: string; type: string; name: string; arguments: string; fragments: number }[] = [];
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      if (usage) chunksAfterUsage++;
      if (chunk.choices.length === 0) {
        usage = chunk.usage;
        continue;
      }
      const choice = chunk.choices[0];
      role ??= choice.delta.role;
      if (choice.delta.content) {
        content += choice.delta.content;
        contentChunks++;
      }
      for (const fragment of choice.delta.tool_calls ?? []) {
        const call = (calls[fragment.index] ??= { id: '', type: '', name: '', arguments: '', fragments: 0 });
        if (fragment.id) call.id = fragment.id;
        if (fragment.type) call.type = fragment.type;
        if (fragment.function?.name) call.name = fragment.function.name;
        call.arguments += fragment.function?.arguments ?? '';
        call.fragments++;
      }
      if (choice.finish_reason) finishReason = choice.finish_reason;
    }

    expect(role).toBe('assistant');
    expect(contentChunks).toBeGreaterThan(1);
    expect(content).toBe(plain.choices[0].message.content);
    expect(finishReason).toBe(plain.choices[0].finish_reason);
    expect(finishReason).toBe('tool_calls');
    const plainCalls = (plain.choices[0].message.tool_calls ?? []).map((c) =>
      c.type === 'function' ? { id: c.id, type: c.type, name: c.function.name, arguments: c.function.arguments } : c,
    );
    expect(calls.map(({ fragments: _fragments, ...call }) => call)).toEqual(plainCalls);
    for (const call of calls) expect(call.fragments).toBeGreaterThanOrEqual(3);
    expect(usage?.total_tokens).toBeGreaterThan(0);
    expect(chunksAfterUsage).toBe(0);
  });

  it('builds a complete chat completion through the SDK stream helper', async () => {
    server.enqueue(scripted);
    const stream = client.chat.completions.stream({ ...ask(), tools: [weatherTool] });
    const final = await stream.finalChatCompletion();
    const message = final.choices[0].message;
    expect(message.content).toBe(scripted.content);
    expect(
      message.tool_calls?.map((c) => (c.type === 'function' ? [c.id, c.function.name, c.function.arguments] : [])),
    ).toEqual([
      ['call_stream_oslo', 'get_weather', '{"city":"Oslo","unit":"celsius"}'],
      ['call_stream_rome', 'get_weather', '{"city":"Rome"'],
    ]);
    expect(final.choices[0].finish_reason).toBe('tool_calls');
  });

  it('omits the usage chunk when include_usage is not asked for', async () => {
    server.enqueue({ content: 'short' });
    const stream = await client.chat.completions.create({ ...ask(), stream: true });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.every((c) => c.choices.length === 1)).toBe(true);
    expect(chunks[chunks.length - 1].choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
  });

  it('sends a streamed reply with text/event-stream and ends it with [DONE]', async () => {
    server.enqueue({ content: 'raw' });
    const response = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...ask(), stream: true }),
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const text = await response.text();
    const events = text.split('\n\n').filter((e) => e.length > 0);
    expect(events.every((e) => e.startsWith('data: '))).toBe(true);
    expect(events[events.length - 1]).toBe('data: [DONE]');
    expect(JSON.parse(events[0].slice(6)).choices[0].delta.role).toBe('assistant');
  });

  it('makes the SDK stream iteration throw when the connection drops mid-stream', async () => {
    server.enqueue({ kind: 'drop', content: 'This sentence never gets to its end.' });
    const stream = await client.chat.completions.create({ ...ask(), stream: true });
    let received = '';
    let finishReason: string | null = null;
    const iterate = async () => {
      for await (const chunk of stream) {
        received += chunk.choices[0]?.delta.content ?? '';
        finishReason ??= chunk.choices[0]?.finish_reason ?? null;
      }
    };
    await expect(iterate()).rejects.toThrow();
    expect(received.length).toBeGreaterThan(0);
    expect('This sentence never gets to its end.'.startsWith(received)).toBe(true);
    expect(received).not.toBe('This sentence never gets to its end.');
    expect(finishReason).toBeNull();
    expect(lastRequest()).toMatchObject({ valid: true, aborted: false });
  });

  it('delays a streamed reply before the first byte', async () => {
    server.enqueue({ kind: 'delay', ms: 100, then: { content: 'slow stream' } });
    const started = Date.now();
    const stream = await client.chat.completions.create({ ...ask(), stream: true });
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    let content = '';
    for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
    expect(content).toBe('slow stream');
  });
});

describe('other endpoints', () => {
  it('lists a model', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toContain('scripted-model');
    expect(lastRequest()).toMatchObject({ method: 'GET', path: '/v1/models', valid: true });
  });

  it('answers an unknown URL with a 404 error body and records it as invalid', async () => {
    const outcome = await client.embeddings.create({ model: 'embed', input: 'x' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(outcome).toBeInstanceOf(OpenAI.NotFoundError);
    expect((outcome as Error).message).toContain('Unknown request URL: POST /v1/embeddings');
    expect(lastRequest()).toMatchObject({ path: '/v1/embeddings', valid: false, error: { status: 404 } });
  });
});
