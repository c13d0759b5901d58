import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startModelServer, type ModelServer, type RecordedRequest } from '../../src/testing';
import { KEEP_ALIVE_LINE } from '../../src/testing/server';
import { REASONING_CONTENT_REQUIRED_MESSAGE } from '../../src/testing/validate';

let server: ModelServer;
let client: OpenAI;

beforeAll(async () => {
  server = await startModelServer();
  client = new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 });
});

afterAll(async () => {
  await server.close();
});

const ask = (content = 'hi') => ({ model: 'gpt-test', messages: [{ role: 'user' as const, content }] });

const lookupTool = {
  type: 'function' as const,
  function: { name: 'lookup', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

const streamingAsk = (extra: Record<string, unknown> = {}) => ({
  ...ask(),
  tools: [lookupTool],
  stream: true as const,
  ...extra,
});

const ARGS = '{"city":"Oslo","unit":"celsius"}';

async function waitFor(condition: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function lastRequest(): RecordedRequest {
  return server.requests[server.requests.length - 1];
}

/** A tool-call fragment as it appears on the wire. */
interface WireFragment {
  index: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

/** One chat.completion.chunk as it appears on the wire. */
interface WireChunk {
  object: string;
  choices: {
    delta: { role?: string; content?: string; reasoning_content?: string; tool_calls?: WireFragment[] };
    finish_reason: string | null;
  }[];
  usage?: unknown;
}

/** The raw SSE events of a streamed answer: each event's text without the blank line that ends it. */
async function rawEvents(body: Record<string, unknown>): Promise<{ text: string; events: string[] }> {
  const response = await fetch(`${server.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/event-stream');
  const text = await response.text();
  expect(text.endsWith('\n\n')).toBe(true);
  return { text, events: text.split('\n\n').slice(0, -1) };
}

/** The JSON chunks among raw SSE events (comments and `[DONE]` left out). */
function dataChunks(events: string[]): WireChunk[] {
  return events
    .filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]')
    .map((e) => JSON.parse(e.slice('data: '.length)) as WireChunk);
}

/** Everything the SDK's chunk iteration delivered, accumulated the way a careful client does. */
interface Collected {
  chunks: OpenAI.ChatCompletionChunk[];
  content: string;
  reasoning: string[];
  finishReason: string | null;
  calls: { id: string; name: string; arguments: string; argumentFragments: number }[];
  error?: unknown;
}

function emptyCollected(): Collected {
  return { chunks: [], content: '', reasoning: [], finishReason: null, calls: [] };
}

function accumulate(into: Collected, chunk: OpenAI.ChatCompletionChunk): void {
  into.chunks.push(chunk);
  const choice = chunk.choices[0];
  if (!choice) return;
  into.content += choice.delta.content ?? '';
  const reasoning = (choice.delta as { reasoning_content?: string }).reasoning_content;
  if (reasoning) into.reasoning.push(reasoning);
  for (const fragment of choice.delta.tool_calls ?? []) {
    let call = into.calls[fragment.index];
    if (!call) {
      call = { id: '', name: '', arguments: '', argumentFragments: 0 };
      into.calls[fragment.index] = call;
    } else {
      call.argumentFragments++;
    }
    if (fragment.id) call.id = fragment.id;
    if (fragment.function?.name) call.name = fragment.function.name;
    call.arguments += fragment.function?.arguments ?? '';
  }
  if (choice.finish_reason) into.finishReason = choice.finish_reason;
}

/** Iterates an SDK stream to its end, keeping a thrown error instead of rethrowing it. */
async function collect(stream: AsyncIterable<OpenAI.ChatCompletionChunk>, into = emptyCollected()): Promise<Collected> {
  try {
    for await (const chunk of stream) accumulate(into, chunk);
  } catch (err) {
    into.error = err;
  }
  return into;
}

describe('stream scripts: pacing', () => {
  it('sends keep-alive comment lines before the first data chunk, and the SDK ignores them', async () => {
    const reply = { content: 'Queued, then answered.', stream: { keepAlive: 3 } };
    server.enqueue(reply);
    const { text, events } = await rawEvents({ ...ask(), stream: true });
    expect(text.startsWith(KEEP_ALIVE_LINE.repeat(3) + 'data: ')).toBe(true);
    expect(events.slice(0, 3)).toEqual([': keep-alive', ': keep-alive', ': keep-alive']);
    expect(events.slice(3).every((e) => e.startsWith('data: '))).toBe(true);
    expect(events[events.length - 1]).toBe('data: [DONE]');

    server.enqueue(reply);
    const got = await collect(await client.chat.completions.create({ ...ask(), stream: true }));
    expect(got.error).toBeUndefined();
    expect(got.content).toBe('Queued, then answered.');
    expect(got.finishReason).toBe('stop');
    expect(got.chunks[0].choices[0].delta.role).toBe('assistant');
  });

  it('pauses chunkDelayMs between chunks, keep-alive lines included, and records first byte and close times', async () => {
    // 2 keep-alives + role + 3 content pieces + finish + [DONE] = 8 writes, 7 pauses.
    server.enqueue({ content: 'one two three', stream: { keepAlive: 2, chunkDelayMs: 60 } });
    let chunks = 0;
    const stream = await client.chat.completions.create({ ...ask(), stream: true });
    let content = '';
    for await (const chunk of stream) {
      chunks++;
      content += chunk.choices[0]?.delta.content ?? '';
    }
    expect(content).toBe('one two three');
    expect(chunks).toBe(5);
    // The pauses are measured where they are made, at the server: the client's arrival times are not (a busy client
    // reads a late chunk and the next one together; a loaded CI run saw a 40 ms gap there).

    const record = lastRequest();
    await waitFor(() => record.closedAt !== undefined);
    expect(record.firstByteAt).toBeGreaterThanOrEqual(record.receivedAt);
    expect(record.closedAt! - record.firstByteAt!).toBeGreaterThanOrEqual(7 * 60 - 20);
    expect(record.aborted).toBe(false);
  });
});

describe('stream scripts: tool-call fragments', () => {
  it('repeats an empty id, type and empty name on every later fragment with emptyIdAndName', async () => {
    server.enqueue({
      toolCalls: [
        { id: 'call_first', name: 'lookup', arguments: ARGS },
        { id: 'call_second', name: 'lookup', arguments: '{"city":"Rome"}' },
      ],
      stream: { emptyIdAndName: true },
    });
    const { events } = await rawEvents(streamingAsk());
    const fragments = dataChunks(events).flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    for (const [index, id, args] of [
      [0, 'call_first', ARGS],
      [1, 'call_second', '{"city":"Rome"}'],
    ] as const) {
      const own = fragments.filter((f) => f.index === index);
      expect(own[0]).toEqual({ index, id, type: 'function', function: { name: 'lookup', arguments: '' } });
      expect(own.length).toBeGreaterThan(2);
      for (const later of own.slice(1)) {
        expect(later).toEqual({
          index,
          id: '',
          type: 'function',
          function: { name: '', arguments: expect.any(String) },
        });
        expect(later.function?.arguments).not.toBe('');
      }
      expect(own.map((f) => f.function?.arguments).join('')).toBe(args);
    }
    // The raw text really carries the empty strings, not missing fields.
    expect(events.some((e) => e.includes('"id":"","type":"function","function":{"name":"","arguments":'))).toBe(true);
  });

  it('sends later fragments with only index and arguments by default', async () => {
    server.enqueue({ toolCalls: [{ id: 'call_plain', name: 'lookup', arguments: ARGS }] });
    const { events } = await rawEvents(streamingAsk());
    const fragments = dataChunks(events).flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(fragments[0]).toEqual({
      index: 0,
      id: 'call_plain',
      type: 'function',
      function: { name: 'lookup', arguments: '' },
    });
    for (const later of fragments.slice(1)) expect(Object.keys(later).sort()).toEqual(['function', 'index']);
  });

  it("splits each tool call's arguments into argumentChunks fragments", async () => {
    server.enqueue({
      toolCalls: [
        { id: 'call_split', name: 'lookup', arguments: ARGS },
        { id: 'call_tiny', name: 'lookup', arguments: '{}' },
      ],
      stream: { argumentChunks: 7 },
    });
    const got = await collect(await client.chat.completions.create(streamingAsk()));
    expect(got.error).toBeUndefined();
    expect(got.calls[0]).toEqual({ id: 'call_split', name: 'lookup', arguments: ARGS, argumentFragments: 7 });
    // At most one fragment per character.
    expect(got.calls[1]).toEqual({ id: 'call_tiny', name: 'lookup', arguments: '{}', argumentFragments: 2 });
    expect(got.finishReason).toBe('tool_calls');

    server.enqueue({
      toolCalls: [{ id: 'call_whole', name: 'lookup', arguments: ARGS }],
      stream: { argumentChunks: 1 },
    });
    const whole = await collect(await client.chat.completions.create(streamingAsk()));
    expect(whole.calls[0]).toEqual({ id: 'call_whole', name: 'lookup', arguments: ARGS, argumentFragments: 1 });
  });
});

describe('stream scripts: faults', () => {
  it('destroys the socket after cutAfterArgumentChars characters of the first call: the iteration throws', async () => {
    server.enqueue({
      content: 'Looking it up.',
      toolCalls: [
        { id: 'call_cut', name: 'lookup', arguments: ARGS },
        { id: 'call_never', name: 'lookup', arguments: '{"city":"Rome"}' },
      ],
      stream: { cutAfterArgumentChars: 10 },
    });
    const got = await collect(await client.chat.completions.create(streamingAsk()));
    expect(got.error).toBeInstanceOf(Error);
    expect(got.error).not.toBeInstanceOf(OpenAI.APIUserAbortError);
    expect(got.content).toBe('Looking it up.');
    expect(got.calls).toHaveLength(1);
    expect(got.calls[0].id).toBe('call_cut');
    expect(got.calls[0].arguments).toBe(ARGS.slice(0, 10));
    expect(got.finishReason).toBeNull();

    const record = lastRequest();
    await waitFor(() => record.closedAt !== undefined);
    expect(record).toMatchObject({ valid: true, aborted: false });
  });

  it('cuts right after the first fragment with cutAfterArgumentChars 0, with no [DONE] on the wire', async () => {
    server.enqueue({
      toolCalls: [{ id: 'call_zero', name: 'lookup', arguments: ARGS }],
      stream: { cutAfterArgumentChars: 0 },
    });
    const response = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(streamingAsk()),
    });
    const reader = response.body!.getReader();
    let text = '';
    const decoder = new TextDecoder();
    const failure = await (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return undefined;
        text += decoder.decode(value, { stream: true });
      }
    })().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(Error);
    const events = text.split('\n\n').slice(0, -1);
    expect(text).not.toContain('[DONE]');
    expect(text).not.toContain('"finish_reason":"');
    const last = dataChunks(events).at(-1)!;
    expect(last.choices[0].delta.tool_calls).toEqual([
      { index: 0, id: 'call_zero', type: 'function', function: { name: 'lookup', arguments: '' } },
    ]);
  });

  it('stalls after stallAfterChunks data chunks until the client aborts, recording aborted and closedAt', async () => {
    server.enqueue({ content: 'This answer stops after its first words.', stream: { stallAfterChunks: 2 } });
    const controller = new AbortController();
    const stream = await client.chat.completions.create({ ...ask(), stream: true }, { signal: controller.signal });
    const got = emptyCollected();
    const iteration = collect(stream, got);
    await waitFor(() => got.chunks.length === 2);
    const record = lastRequest();

    await sleep(300);
    expect(got.chunks).toHaveLength(2);
    expect(got.content.length).toBeGreaterThan(0);
    expect(got.finishReason).toBeNull();
    expect(record.closedAt).toBeUndefined();
    expect(record.aborted).toBe(false);

    const abortedAt = Date.now();
    controller.abort();
    await iteration;
    await waitFor(() => record.closedAt !== undefined, 1000);
    expect(record.aborted).toBe(true);
    expect(record.closedAt! - abortedAt).toBeLessThan(1000);
    expect(record.closedAt!).toBeGreaterThanOrEqual(abortedAt);
    expect(got.chunks).toHaveLength(2);
  });

  it('stalls right after the headers with stallAfterChunks 0, and a server close does not count as an abort', async () => {
    const own = await startModelServer();
    const ownClient = new OpenAI({ baseURL: own.url, apiKey: 'test', maxRetries: 0 });
    own.enqueue({ content: 'never sent', stream: { keepAlive: 1, stallAfterChunks: 0 } });
    const stream = await ownClient.chat.completions.create({ ...ask(), stream: true });
    const record = own.requests[0];
    expect(record.firstByteAt).toBeDefined();
    const got = emptyCollected();
    const iteration = collect(stream, got);
    await sleep(200);
    expect(got.chunks).toHaveLength(0);
    expect(record.closedAt).toBeUndefined();

    await own.close();
    await iteration;
    expect(got.error).toBeInstanceOf(Error);
    expect(record.aborted).toBe(false);
    expect(record.closedAt).toBeDefined();
  });

  it('ends after the finish chunk without [DONE] with omitDone', async () => {
    const reply = { content: 'No done marker.', stream: { omitDone: true } };
    server.enqueue(reply);
    const { events } = await rawEvents({ ...ask(), stream: true });
    expect(events.every((e) => e.startsWith('data: '))).toBe(true);
    expect(events).not.toContain('data: [DONE]');
    const last = JSON.parse(events[events.length - 1].slice(6)) as WireChunk;
    expect(last.choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });

    server.enqueue(reply);
    const withUsage = await rawEvents({ ...ask(), stream: true, stream_options: { include_usage: true } });
    expect(withUsage.events).not.toContain('data: [DONE]');
    const chunks = dataChunks(withUsage.events);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: expect.any(Object) });
    expect(chunks.at(-2)?.choices[0].finish_reason).toBe('stop');

    server.enqueue(reply);
    const got = await collect(await client.chat.completions.create({ ...ask(), stream: true }));
    expect(got.error).toBeUndefined();
    expect(got.content).toBe('No done marker.');
    expect(got.finishReason).toBe('stop');
  });

  it('sends no chunk with a finish_reason but still [DONE] with omitFinish', async () => {
    const reply = {
      toolCalls: [{ id: 'call_nofinish', name: 'lookup', arguments: ARGS }],
      stream: { omitFinish: true },
    };
    server.enqueue(reply);
    const { events } = await rawEvents(streamingAsk());
    expect(events[events.length - 1]).toBe('data: [DONE]');
    const chunks = dataChunks(events);
    expect(chunks.every((c) => c.choices[0].finish_reason === null)).toBe(true);
    const joined = chunks
      .flatMap((c) => c.choices[0].delta.tool_calls ?? [])
      .map((f) => f.function?.arguments ?? '')
      .join('');
    expect(joined).toBe(ARGS);
    expect(ARGS.endsWith(chunks.at(-1)!.choices[0].delta.tool_calls![0].function!.arguments!)).toBe(true);

    server.enqueue(reply);
    const got = await collect(await client.chat.completions.create(streamingAsk()));
    expect(got.error).toBeUndefined();
    expect(got.calls[0].arguments).toBe(ARGS);
    expect(got.finishReason).toBeNull();
  });

  it('ignores the stream script for a non-streaming request', async () => {
    server.enqueue({
      toolCalls: [{ id: 'call_plain_json', name: 'lookup', arguments: ARGS }],
      stream: { cutAfterArgumentChars: 0, stallAfterChunks: 0, omitFinish: true, keepAlive: 2 },
    });
    const completion = await client.chat.completions.create({ ...ask(), tools: [lookupTool] });
    const call = completion.choices[0].message.tool_calls?.[0];
    expect(call?.type === 'function' && call.function.arguments).toBe(ARGS);
    expect(completion.choices[0].finish_reason).toBe('tool_calls');
    const record = lastRequest();
    await waitFor(() => record.closedAt !== undefined);
    expect(record.firstByteAt).toBeGreaterThanOrEqual(record.receivedAt);
    expect(record.closedAt).toBeGreaterThanOrEqual(record.firstByteAt!);
  });
});

describe('finish reasons and reasoning content in streams', () => {
  it('sends finish_reason stop next to tool calls as scripted', async () => {
    server.enqueue({ toolCalls: [{ id: 'call_forced', name: 'lookup', arguments: ARGS }], finishReason: 'stop' });
    const got = await collect(
      await client.chat.completions.create(
        streamingAsk({ tool_choice: { type: 'function', function: { name: 'lookup' } } }),
      ),
    );
    expect(got.error).toBeUndefined();
    expect(got.finishReason).toBe('stop');
    expect(got.calls).toEqual([{ id: 'call_forced', name: 'lookup', arguments: ARGS, argumentFragments: 3 }]);
  });

  it('sends truncated arguments with finish_reason length as scripted', async () => {
    server.enqueue({
      toolCalls: [{ id: 'call_long', name: 'lookup', arguments: '{"city":"Os' }],
      finishReason: 'length',
    });
    const got = await collect(await client.chat.completions.create(streamingAsk()));
    expect(got.error).toBeUndefined();
    expect(got.finishReason).toBe('length');
    expect(got.calls[0].arguments).toBe('{"city":"Os');
  });

  it('streams reasoning_content deltas before the content, like DeepSeek', async () => {
    server.enqueue({ reasoningContent: 'The user greets; greet back briefly.', content: 'Hello there!' });
    const got = await collect(await client.chat.completions.create({ ...ask(), stream: true }));
    expect(got.error).toBeUndefined();
    expect(got.reasoning.length).toBeGreaterThan(1);
    expect(got.reasoning.join('')).toBe('The user greets; greet back briefly.');
    expect(got.content).toBe('Hello there!');
    let lastReasoning = -1;
    got.chunks.forEach((c, k) => {
      if ((c.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content) lastReasoning = k;
    });
    const firstContent = got.chunks.findIndex((c) => c.choices[0]?.delta.content);
    expect(lastReasoning).toBeGreaterThan(0);
    expect(lastReasoning).toBeLessThan(firstContent);
  });

  it('lets a DeepSeek thinking-mode client pass streamed reasoning back within the turn', async () => {
    const thinking = await startModelServer({ dialect: 'deepseek-thinking' });
    const deepseek = new OpenAI({ baseURL: thinking.url, apiKey: 'test', maxRetries: 0 });
    try {
      thinking.enqueue({
        reasoningContent: 'I need the city data first.',
        toolCalls: [{ id: 'call_ds', name: 'lookup', arguments: '{"city":"Oslo"}' }],
        stream: { emptyIdAndName: true, keepAlive: 1 },
      });
      const first = await collect(
        await deepseek.chat.completions.create({ ...streamingAsk(), model: 'deepseek-reasoner' }),
      );
      expect(first.error).toBeUndefined();
      expect(first.calls[0]).toMatchObject({ id: 'call_ds', name: 'lookup', arguments: '{"city":"Oslo"}' });

      const toolCallMessage = {
        role: 'assistant' as const,
        content: null,
        tool_calls: [
          {
            id: first.calls[0].id,
            type: 'function' as const,
            function: { name: 'lookup', arguments: first.calls[0].arguments },
          },
        ],
      };
      const rest = [{ role: 'tool' as const, tool_call_id: 'call_ds', content: 'Oslo: 4 °C' }];
      const followUp = (assistant: Record<string, unknown>) => ({
        model: 'deepseek-reasoner',
        tools: [lookupTool],
        messages: [...ask().messages, assistant, ...rest],
      });

      const refused = await deepseek.chat.completions.create(followUp(toolCallMessage) as never).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
      expect((refused as Error).message).toBe(`400 ${REASONING_CONTENT_REQUIRED_MESSAGE}`);

      thinking.enqueue({ content: 'It is 4 °C in Oslo.' });
      const answer = await deepseek.chat.completions.create(
        followUp({ ...toolCallMessage, reasoning_content: first.reasoning.join('') }) as never,
      );
      expect((answer as OpenAI.ChatCompletion).choices[0].message.content).toBe('It is 4 °C in Oslo.');
    } finally {
      await thinking.close();
    }
  });
});

describe('stream scripts: text deltas', () => {
  const sentence = 'Refunded 110.00 on ord_1001.';

  it('textDeltaChars sends the text and the reasoning in deltas of at most that many characters', async () => {
    server.enqueue({ content: sentence, reasoningContent: 'Look it up first.', stream: { textDeltaChars: 2 } });
    const got = await collect(await client.chat.completions.create({ ...ask(), stream: true }));
    const pieces = got.chunks.flatMap((c) => (c.choices[0]?.delta.content ? [c.choices[0].delta.content] : []));
    expect(pieces).toHaveLength(Math.ceil(sentence.length / 2));
    expect(pieces.every((p) => p.length <= 2)).toBe(true);
    expect(got.content).toBe(sentence);
    expect(got.reasoning.every((p) => p.length <= 2)).toBe(true);
    expect(got.reasoning.join('')).toBe('Look it up first.');
  });

  it("the server's textDeltaChars applies to the replies that set neither it nor chunkDelayMs, on both APIs", async () => {
    const small = await startModelServer({ textDeltaChars: 1 });
    try {
      const openai = new OpenAI({ baseURL: small.url, apiKey: 'test', maxRetries: 0 });
      const contentPieces = async () =>
        (await collect(await openai.chat.completions.create({ ...ask(), stream: true }))).chunks.flatMap((c) =>
          c.choices[0]?.delta.content ? [c.choices[0].delta.content] : [],
        );
      small.enqueue({ content: sentence, stream: { keepAlive: 1 } });
      expect(await contentPieces()).toEqual([...sentence]);
      expect(small.requests.at(-1)!.reply).toEqual({ content: sentence, stream: { keepAlive: 1, textDeltaChars: 1 } });
      small.enqueue({ content: sentence, stream: { chunkDelayMs: 1 } }); // paced: the three pieces its timing expects
      expect(await contentPieces()).toHaveLength(3);
      small.enqueue({ content: sentence, stream: { textDeltaChars: 10 } });
      expect(await contentPieces()).toEqual(['Refunded 1', '10.00 on o', 'rd_1001.']);

      small.enqueue({ kind: 'delay', ms: 1, then: { content: sentence } });
      const events = await openai.responses.create({ model: 'gpt-test', input: 'hi', store: false, stream: true });
      const deltas: string[] = [];
      for await (const event of events) if (event.type === 'response.output_text.delta') deltas.push(event.delta);
      expect(deltas).toEqual([...sentence]);
    } finally {
      await small.close();
    }
  });
});
