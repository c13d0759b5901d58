import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';

import { startModelServer, type ModelServer, type ModelServerOptions } from '../../src/testing';
import type { ScriptedMessageReply, ToolCallIdScheme } from '../../src/testing/types';
import { duplicateToolCallIdMessage, emptyStringMessage } from '../../src/testing/validate';

/** Servers started by the current test; each test closes its own. */
const started: ModelServer[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.close()));
});

async function serve(options: ModelServerOptions = {}): Promise<{ server: ModelServer; client: OpenAI }> {
  const server = await startModelServer(options);
  started.push(server);
  return { server, client: new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 }) };
}

const UNIQUE_ID = /^call_[A-Za-z0-9]{24}$/;

const fn = (name: string) => ({
  type: 'function' as const,
  function: { name, parameters: { type: 'object', properties: { id: { type: 'string' } } } },
});
const tools = [fn('issue_refund'), fn('find_customer'), fn('list_orders')];

type Message = OpenAI.ChatCompletionMessageParam;

const userAsks = (content: string): Message[] => [{ role: 'user', content }];

const refundReply: ScriptedMessageReply = { toolCalls: [{ name: 'issue_refund', arguments: { id: 'ord_1' } }] };
const lookupReply: ScriptedMessageReply = {
  toolCalls: [
    { name: 'find_customer', arguments: { id: 'cus_1' } },
    { name: 'list_orders', arguments: { id: 'cus_1' } },
  ],
};

/** One tool call as the client sees it once the response is complete. */
interface Call {
  id: string;
  name: string;
  arguments: string;
}

/** A non-streaming request; returns the assistant message and its tool calls. */
async function complete(
  client: OpenAI,
  messages: Message[],
): Promise<{ message: OpenAI.ChatCompletionMessage; calls: Call[] }> {
  const completion = await client.chat.completions.create({ model: 'gpt-test', messages, tools });
  const message = completion.choices[0].message;
  const calls = (message.tool_calls ?? []).map((call) => {
    if (call.type !== 'function') throw new Error(`unexpected tool call type ${call.type}`);
    return { id: call.id, name: call.function.name, arguments: call.function.arguments };
  });
  return { message, calls };
}

/** A streamed call as assembled from its fragments, with the id each fragment carried (`undefined` when absent). */
interface StreamedCall extends Call {
  fragmentIds: (string | undefined)[];
}

/**
 * A streaming request through the SDK; assembles the tool calls from the raw
 * chunks by `index`. The id is taken from the call's first fragment.
 */
async function stream(client: OpenAI, messages: Message[]): Promise<StreamedCall[]> {
  const chunks = await client.chat.completions.create({ model: 'gpt-test', messages, tools, stream: true });
  const calls: StreamedCall[] = [];
  let finishReason: string | null = null;
  for await (const chunk of chunks) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    for (const fragment of choice.delta.tool_calls ?? []) {
      const id = 'id' in fragment ? fragment.id : undefined;
      let call = calls[fragment.index];
      if (!call) {
        call = { id: id as string, name: fragment.function?.name ?? '', arguments: '', fragmentIds: [] };
        calls[fragment.index] = call;
      }
      call.fragmentIds.push(id);
      call.arguments += fragment.function?.arguments ?? '';
    }
    finishReason = choice.finish_reason ?? finishReason;
  }
  expect(finishReason).toBe('tool_calls');
  return calls;
}

/** The transcript an agent sends after running `calls`: the assistant message echoed back plus one tool result each. */
function answered(history: Message[], calls: Call[]): Message[] {
  return [
    ...history,
    {
      role: 'assistant',
      content: null,
      tool_calls: calls.map((c) => ({
        id: c.id,
        type: 'function',
        function: { name: c.name, arguments: c.arguments },
      })),
    },
    ...calls.map((c): Message => ({ role: 'tool', tool_call_id: c.id, content: `${c.name} done` })),
  ];
}

/** Runs `request` and returns the 400 it must fail with. */
async function rejected(request: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const err = await request.then(
    () => {
      throw new Error('expected the request to be rejected');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.APIError);
  const apiError = err as InstanceType<typeof OpenAI.APIError>;
  expect(apiError.status).toBe(400);
  return apiError;
}

describe('tool call ids: unique (default)', () => {
  it('makes a fresh call_ id for every call, in one response and across responses', async () => {
    const { server, client } = await serve();
    server.enqueue(lookupReply, refundReply);
    const first = await complete(client, userAsks('Who is cus_1?'));
    const second = await complete(client, answered(userAsks('Who is cus_1?'), first.calls));
    const ids = [...first.calls, ...second.calls].map((c) => c.id);
    expect(ids).toHaveLength(3);
    for (const id of ids) expect(id).toMatch(UNIQUE_ID);
    expect(new Set(ids).size).toBe(3);
  });
});

describe('tool call ids: per-response (Kimi-style)', () => {
  it('restarts ids in every response: functions.<name>:<index>', async () => {
    const { server, client } = await serve({ toolCallIds: 'per-response' });
    server.enqueue(refundReply, refundReply, lookupReply);

    const turn1 = await complete(client, userAsks('Refund ord_1'));
    expect(turn1.calls).toEqual([
      { id: 'functions.issue_refund:0', name: 'issue_refund', arguments: '{"id":"ord_1"}' },
    ]);

    // The agent echoes turn 1 back; the reused id in the next response is accepted by the provider.
    const history = answered(userAsks('Refund ord_1'), turn1.calls);
    history.push({ role: 'assistant', content: 'Refunded.' }, { role: 'user', content: 'Refund ord_1 again' });
    const turn2 = await complete(client, history);
    expect(turn2.calls.map((c) => c.id)).toEqual(['functions.issue_refund:0']);

    const both = await complete(client, answered(history, turn2.calls));
    expect(both.calls.map((c) => [c.name, c.id])).toEqual([
      ['find_customer', 'functions.find_customer:0'],
      ['list_orders', 'functions.list_orders:1'],
    ]);
    expect(server.invalidRequests()).toEqual([]);
    expect(server.requests.map((r) => r.valid)).toEqual([true, true, true]);
  });

  it('streams the same ids in the first fragment of each call', async () => {
    const { server, client } = await serve({ toolCallIds: 'per-response' });
    server.enqueue(refundReply, lookupReply);
    const first = await stream(client, userAsks('Refund ord_1'));
    expect(first.map((c) => c.id)).toEqual(['functions.issue_refund:0']);
    expect(first[0].arguments).toBe('{"id":"ord_1"}');
    const second = await stream(client, answered(userAsks('Refund ord_1'), first));
    expect(second.map((c) => [c.name, c.id])).toEqual([
      ['find_customer', 'functions.find_customer:0'],
      ['list_orders', 'functions.list_orders:1'],
    ]);
    // Only the first fragment of a call carries its id.
    for (const call of second) expect(call.fragmentIds.slice(1).every((id) => id === undefined)).toBe(true);
  });
});

describe('tool call ids: empty', () => {
  it('gives every call the empty string as id (non-streaming)', async () => {
    const { server, client } = await serve({ toolCallIds: 'empty' });
    server.enqueue(lookupReply);
    const { message, calls } = await complete(client, userAsks('Who is cus_1?'));
    expect(calls.map((c) => c.id)).toEqual(['', '']);
    expect(message.tool_calls?.map((c) => 'id' in c && c.id)).toEqual(['', '']);
    expect(calls.map((c) => c.name)).toEqual(['find_customer', 'list_orders']);
  });

  it('streams a first fragment with "id": "" for each call', async () => {
    const { server, client } = await serve({ toolCallIds: 'empty' });
    server.enqueue(lookupReply, { ...lookupReply, stream: { emptyIdAndName: true } });

    const plain = await stream(client, userAsks('Who is cus_1?'));
    expect(plain).toHaveLength(2);
    for (const call of plain) {
      expect(call.fragmentIds[0]).toBe('');
      expect(call.fragmentIds.length).toBeGreaterThan(1);
      expect(call.fragmentIds.slice(1).every((id) => id === undefined)).toBe(true);
    }
    expect(plain.map((c) => c.arguments)).toEqual(['{"id":"cus_1"}', '{"id":"cus_1"}']);

    // With the DeepSeek-style quirk every fragment carries "id": "".
    const quirky = await stream(client, userAsks('Who is cus_1?'));
    expect(quirky).toHaveLength(2);
    for (const call of quirky) expect(call.fragmentIds.every((id) => id === '')).toBe(true);
    expect(quirky.map((c) => c.name)).toEqual(['find_customer', 'list_orders']);
  });

  it('still rejects a transcript that echoes an empty id back', async () => {
    const { server, client } = await serve({ toolCallIds: 'empty' });
    server.enqueue(refundReply);
    const { calls } = await complete(client, userAsks('Refund ord_1'));
    expect(calls[0].id).toBe('');
    const err = await rejected(complete(client, answered(userAsks('Refund ord_1'), calls)));
    expect(err.message).toContain(emptyStringMessage('messages[1].tool_calls[0].id'));
    expect(server.invalidRequests()).toHaveLength(1);
  });
});

describe('tool call ids: duplicated', () => {
  it('gives all calls of one response the same call_ id, and a different one in the next response', async () => {
    const { server, client } = await serve({ toolCallIds: 'duplicated' });
    const three: ScriptedMessageReply = {
      toolCalls: [...lookupReply.toolCalls!, { name: 'issue_refund', arguments: { id: 'ord_9' } }],
    };
    server.enqueue(three, lookupReply);

    const first = await complete(client, userAsks('Who is cus_1?'));
    expect(first.calls.map((c) => c.name)).toEqual(['find_customer', 'list_orders', 'issue_refund']);
    const shared = first.calls[0].id;
    expect(shared).toMatch(UNIQUE_ID);
    expect(first.calls.map((c) => c.id)).toEqual([shared, shared, shared]);

    const second = await complete(client, userAsks('Who is cus_1?'));
    expect(second.calls[0].id).toMatch(UNIQUE_ID);
    expect(second.calls[1].id).toBe(second.calls[0].id);
    expect(second.calls[0].id).not.toBe(shared);
  });

  it('streams one shared id per response', async () => {
    const { server, client } = await serve({ toolCallIds: 'duplicated' });
    server.enqueue(lookupReply, lookupReply);
    const first = await stream(client, userAsks('Who is cus_1?'));
    const second = await stream(client, userAsks('Who is cus_1?'));
    for (const calls of [first, second]) {
      expect(calls).toHaveLength(2);
      expect(calls[0].id).toMatch(UNIQUE_ID);
      expect(calls[1].id).toBe(calls[0].id);
    }
    expect(second[0].id).not.toBe(first[0].id);
  });

  it('still rejects a transcript answering two calls that share one id with the 400 "Duplicate value for \'tool_call_id\'"', async () => {
    const { server, client } = await serve({ toolCallIds: 'duplicated' });
    server.enqueue(lookupReply, { content: 'should not be reached' });
    const { calls } = await complete(client, userAsks('Who is cus_1?'));
    expect(calls[1].id).toBe(calls[0].id);

    // messages: [0] user, [1] assistant with both calls, [2] and [3] the two answers.
    const transcript = answered(userAsks('Who is cus_1?'), calls);
    const err = await rejected(complete(client, transcript));
    expect(err.message).toContain("Duplicate value for 'tool_call_id'");
    expect(err.message).toContain(duplicateToolCallIdMessage(calls[0].id, 2, 3));
    expect(server.invalidRequests()).toHaveLength(1);
    expect(server.requests[1]).toMatchObject({ valid: false, error: { status: 400 } });
    expect(server.requests[1].reply).toBeUndefined();

    // Streaming requests are validated the same way.
    const streamed = await rejected(stream(client, transcript));
    expect(streamed.message).toContain(duplicateToolCallIdMessage(calls[0].id, 2, 3));
  });
});

describe('explicit scripted ids', () => {
  const schemes: ToolCallIdScheme[] = ['unique', 'per-response', 'empty', 'duplicated'];

  it.each(schemes)('keep their id exactly under the %s scheme, streaming and not', async (scheme) => {
    const { server, client } = await serve({ toolCallIds: scheme });
    const reply: ScriptedMessageReply = {
      toolCalls: [
        { id: 'call_explicit', name: 'find_customer', arguments: { id: 'cus_1' } },
        { name: 'list_orders', arguments: { id: 'cus_1' } },
        { id: '', name: 'issue_refund', arguments: { id: 'ord_1' } },
      ],
    };
    server.enqueue(reply, reply);
    const plain = (await complete(client, userAsks('go'))).calls;
    const streamed = await stream(client, userAsks('go'));
    for (const calls of [plain, streamed]) {
      expect(calls[0].id).toBe('call_explicit');
      expect(calls[2].id).toBe('');
      const generated = calls[1].id;
      switch (scheme) {
        case 'per-response':
          expect(generated).toBe('functions.list_orders:1');
          break;
        case 'empty':
          expect(generated).toBe('');
          break;
        default:
          expect(generated).toMatch(UNIQUE_ID);
      }
    }
  });
});

describe('setToolCallIds', () => {
  it('switches the scheme for later responses', async () => {
    const { server, client } = await serve();
    server.setResponder(() => refundReply);

    const ids = async (): Promise<string[]> => [
      ...(await complete(client, userAsks('Refund ord_1'))).calls.map((c) => c.id),
      ...(await stream(client, userAsks('Refund ord_1'))).map((c) => c.id),
    ];

    const before = await ids();
    for (const id of before) expect(id).toMatch(UNIQUE_ID);

    server.setToolCallIds('per-response');
    expect(await ids()).toEqual(['functions.issue_refund:0', 'functions.issue_refund:0']);

    server.setToolCallIds('empty');
    expect(await ids()).toEqual(['', '']);

    server.setToolCallIds('unique');
    const after = await ids();
    for (const id of after) expect(id).toMatch(UNIQUE_ID);
    expect(new Set([...before, ...after]).size).toBe(4);
  });

  it('refuses an unknown scheme and keeps the current one', async () => {
    const { server, client } = await serve({ toolCallIds: 'per-response' });
    expect(() => server.setToolCallIds('sequential' as ToolCallIdScheme)).toThrow(
      /Unknown tool call id scheme 'sequential'/,
    );
    await expect(startModelServer({ toolCallIds: 'nope' as ToolCallIdScheme })).rejects.toThrow(
      /Unknown tool call id scheme/,
    );
    server.enqueue(refundReply);
    expect((await complete(client, userAsks('Refund ord_1'))).calls[0].id).toBe('functions.issue_refund:0');
  });
});
