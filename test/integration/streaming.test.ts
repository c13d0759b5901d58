import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../src/db/stream-channel';
import { StreamView } from '../../src/client/stream';
import { startHarness, type Harness } from '../support/harness';

// Streamed model calls on the real dev server, the scripted server streaming
// with the quirks and faults real providers show.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ textDeltaChars: 2 });
});
afterAll(async () => {
  await h?.stop();
});

type Wire = { role: string; tool_call_id?: string; content?: string | null; tool_calls?: { id: string }[] };
const input = { model: { streamIdleMs: 1_500 } };
const roles = async (id: string) => (await h.client.transcript(id)).map((m) => m.message.role);
const toolContents = async (id: string) =>
  (await h.client.transcript(id)).flatMap((m) =>
    m.message.role === 'tool' ? [[m.message.tool_call_id, m.message.content]] : [],
  );
const refundRows = async (orderId: string) =>
  (await h.pool.query('SELECT count(*)::int AS n FROM refunds WHERE order_id = $1', [orderId])).rows[0].n as number;

describe('streamed model calls', () => {
  it('assembles parallel tool calls from fragments with repeated empty ids and names, runs both tools and finishes', async () => {
    const id = h.newConversationId('fragments');
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_frag_1', name: 'find_customer', arguments: { query: 'Grace' } },
          { id: 'call_frag_2', name: 'list_orders', arguments: { customer_id: 'cus_grace' } },
        ],
        stream: { emptyIdAndName: true, argumentChunks: 4, keepAlive: 2 },
      },
      { content: 'Grace ordered a compiler manual.', stream: { keepAlive: 1 } },
    );
    const { turn, answer } = await h.client.ask(id, 'Fragments for Grace', { input });
    expect(turn.outcome).toBe('answered');
    expect(answer).toBe('Grace ordered a compiler manual.');
    const tools = await toolContents(id);
    expect(tools.map(([callId]) => callId)).toEqual(['call_frag_1', 'call_frag_2']);
    expect(JSON.parse(tools[0][1] as string).customers[0].id).toBe('cus_grace');
    expect(JSON.parse(tools[1][1] as string).orders[0].id).toBe('ord_3001');
    const requests = h.requestsFor('Fragments for Grace');
    expect(requests.every((r) => r.stream === true)).toBe(true);
    h.expectOnlyValidModelRequests();
  });

  it('a stream cut mid-arguments is retried; its broken call never reaches a tool or the transcript', async () => {
    const id = h.newConversationId('cut');
    const refund = {
      id: 'call_cut',
      name: 'issue_refund',
      arguments: { order_id: 'ord_3001', amount_cents: 100, reason: 'cut' },
    };
    const before = await refundRows('ord_3001');
    h.model.enqueue(
      { toolCalls: [refund], stream: { cutAfterArgumentChars: 12 } },
      { toolCalls: [{ ...refund, id: 'call_whole' }] },
      { content: 'Refunded 1.00.' },
    );
    const { turn } = await h.client.ask(id, 'Refund through a cut stream', { input });
    expect(turn.outcome).toBe('answered');
    expect(await roles(id)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect((await toolContents(id)).map(([callId]) => callId)).toEqual(['call_whole']);
    expect(await refundRows('ord_3001')).toBe(before + 1);
    expect(h.requestsFor('Refund through a cut stream')).toHaveLength(3);
    h.expectOnlyValidModelRequests();
  });

  it('a "length" finish with truncated arguments is retried, and the truncated call never runs', async () => {
    const id = h.newConversationId('length');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_trunc', name: 'find_customer', arguments: '{"query": "Ad' }], finishReason: 'length' },
      { toolCalls: [{ id: 'call_full', name: 'find_customer', arguments: { query: 'Ada' } }] },
      { content: 'Found Ada.' },
    );
    const { turn } = await h.client.ask(id, 'Find Ada despite a length finish', { input });
    expect(turn.outcome).toBe('answered');
    expect((await toolContents(id)).map(([callId]) => callId)).toEqual(['call_full']);
    const second = h.requestsFor('Find Ada despite a length finish')[2].messages as Wire[];
    expect(second.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    h.expectOnlyValidModelRequests();
  });

  it('a stream that stalls past the idle timeout is abandoned and retried, and the conversation finishes', async () => {
    const id = h.newConversationId('stall');
    h.model.enqueue(
      { content: 'This answer never finishes', stream: { stallAfterChunks: 2 } },
      { content: 'Answer after the stall.' },
    );
    const started = Date.now();
    const { turn, answer } = await h.client.ask(id, 'Answer despite a stall', { input });
    expect(turn.outcome).toBe('answered');
    expect(answer).toBe('Answer after the stall.');
    const [stalled] = h
      .requestsFor('Answer despite a stall')
      .map((_, i, all) => h.model.requests.find((r) => r.body === all[i]));
    expect(stalled?.aborted).toBe(true);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(await roles(id)).toEqual(['user', 'assistant']);
    h.expectOnlyValidModelRequests();
  });

  it('empty arguments ("") count as {}: the schema, not the JSON parser, judges them', async () => {
    const id = h.newConversationId('empty-args');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_empty', name: 'list_orders', arguments: '' }] },
      { content: 'I need a customer id.' },
    );
    await h.client.ask(id, 'List orders with empty arguments', { input });
    const [[, content]] = await toolContents(id);
    const result = JSON.parse(content as string) as { reason: string; error: string };
    expect(result.reason).toBe('invalid_arguments');
    expect(result.error).toContain('customer_id');
    expect(result.error).not.toContain('not valid JSON');
    h.expectOnlyValidModelRequests();
  });

  it('a stream that ends with finish_reason "stop" after a tool call continues the chain to a final answer', async () => {
    const id = h.newConversationId('stop-with-tools');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_stop', name: 'find_customer', arguments: { query: 'Alan' } }], finishReason: 'stop' },
      { content: 'Alan is a customer.' },
    );
    const { turn, answer } = await h.client.ask(id, 'Tool call then stop', { input });
    expect(turn).toMatchObject({ outcome: 'answered', steps: 2 });
    expect(answer).toBe('Alan is a customer.');
    expect(await roles(id)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    h.expectOnlyValidModelRequests();
  });

  it('cancel during a stream stops the HTTP request within a second, and the transcript is valid', async () => {
    const id = h.newConversationId('cancel-stream');
    h.model.enqueue({ content: 'A very long answer that goes on and on', stream: { stallAfterChunks: 2 } });
    const messageId = await h.client.sendMessage(id, 'Stream then cancel', {
      input: { model: { streamIdleMs: 60_000 } },
    });
    await expect.poll(() => h.requestsFor('Stream then cancel').length, { timeout: 20_000 }).toBe(1);
    const request = h.model.requests[h.model.requests.length - 1];
    await expect.poll(() => request.firstByteAt !== undefined, { timeout: 10_000 }).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const cancelledAt = Date.now();
    await h.client.cancelTurn(id);
    await expect.poll(() => request.closedAt, { timeout: 5_000 }).toBeDefined();
    const stoppedAfter = request.closedAt! - cancelledAt;
    console.log(
      `cancel during a stream: the server saw the request closed ${stoppedAfter} ms after the cancel was sent`,
    );
    expect(stoppedAfter).toBeLessThan(1_000);
    expect(request.aborted).toBe(true);
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('cancelled');
    expect(await roles(id)).toEqual(['user']);
    h.expectOnlyValidModelRequests();
  });

  it('a client subscribed to the conversation receives the deltas of a retried attempt once, not twice', async () => {
    const id = h.newConversationId('subscribe');
    const events: StreamEvent[] = [];
    const unsubscribe = await h.client.subscribe(id, (event) => events.push(event));
    try {
      h.model.enqueue(
        { kind: 'drop', content: 'The first attempt says something and then' },
        { content: 'The second attempt, complete.' },
      );
      const { answer } = await h.client.ask(id, 'Stream, break, retry', { input });
      expect(answer).toBe('The second attempt, complete.');
      await expect.poll(() => events.filter((e) => e.type === 'end').length, { timeout: 5_000 }).toBe(2);
    } finally {
      await unsubscribe();
    }
    const view = new StreamView();
    for (const event of events) view.apply(event);
    const [response] = view.all();
    expect(view.all()).toHaveLength(1);
    expect(response).toMatchObject({ attempt: 2, text: 'The second attempt, complete.', done: true, ok: true });
    // The first attempt did reach the client before it broke, and was replaced, not appended to.
    expect(events.some((e) => e.type === 'delta' && e.attempt === 1)).toBe(true);
    expect(events.find((e) => e.type === 'end' && e.attempt === 1)).toMatchObject({ ok: false });
  });
});

describe('DeepSeek thinking mode', () => {
  let deepseek: Harness;
  beforeAll(async () => {
    deepseek = await startHarness({ dialect: 'deepseek-thinking', textDeltaChars: 2 });
  });
  afterAll(async () => {
    await deepseek?.stop();
  });

  it('keeps reasoning_content on tool-calling messages and sends it back; the server enforcing the rule accepts every request', async () => {
    const id = deepseek.newConversationId('thinking');
    deepseek.model.enqueue(
      {
        reasoningContent: 'The user wants Ada; look her up first.',
        toolCalls: [{ id: 'call_think_1', name: 'find_customer', arguments: { query: 'Ada' } }],
      },
      {
        reasoningContent: 'Now her orders.',
        toolCalls: [{ id: 'call_think_2', name: 'list_orders', arguments: { customer_id: 'cus_ada' } }],
      },
      { reasoningContent: 'Summarize.', content: 'Ada has two orders.' },
    );
    const { turn, answer } = await deepseek.client.ask(id, 'Think about Ada', { input });
    expect(turn.outcome).toBe('answered');
    expect(answer).toBe('Ada has two orders.');
    const stored = (await deepseek.client.transcript(id)).map((m) => m.message);
    expect(stored[1]).toMatchObject({ role: 'assistant', reasoning_content: 'The user wants Ada; look her up first.' });
    const third = deepseek.requestsFor('Think about Ada')[2].messages as (Wire & { reasoning_content?: string })[];
    expect(third.filter((m) => m.role === 'assistant').map((m) => m.reasoning_content)).toEqual([
      'The user wants Ada; look her up first.',
      'Now her orders.',
    ]);
    expect(deepseek.model.requests.filter((r) => JSON.stringify(r.body).includes('Think about Ada'))).toHaveLength(3);
    deepseek.expectOnlyValidModelRequests();
  });
});
