import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backofficeTools } from '../../src/demo/tools';
import { agent } from '../../src/tools/agents';
import { handoff } from '../../src/tools/handoff';
import { slowExportTool } from '../support/slow-export';
import type { ScriptedToolCall } from '../../src/testing/types';
import { startHarness, type Harness } from '../support/harness';
import type { ResponsesItem } from '../support/model-requests';

// The suite's end-to-end scenarios on the Responses API: the worker's `model.api` is 'responses', so no
// conversation says which API it speaks. The scripted model reasons before its calls, so each interruption is
// also a test of "no reasoning item without the item that followed it" besides "every call answered once".

const { tool: slowExport, seen: slow } = slowExportTool();
const tools = [...backofficeTools(), slowExport];
const refunder = agent({ name: 'refunder', instructions: 'REFUNDER', tools: ['issue_refund'] });
const agents = [
  agent({
    name: 'triage',
    instructions: 'TRIAGE',
    tools: ['find_customer'],
    handoffs: ['refunds', handoff('auditor', { inputFilter: { dropToolCalls: true } })],
  }),
  agent({ name: 'refunds', instructions: 'REFUNDS', tools: ['issue_refund'] }),
  agent({ name: 'auditor', instructions: 'AUDITOR', tools: ['list_orders'] }),
  agent({
    name: 'desk',
    instructions: 'DESK',
    tools: ['find_customer', refunder.asTool({ toolName: 'ask_refunder' })],
  }),
  refunder,
];

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ tools, agents, modelApi: 'responses' });
});
afterAll(async () => {
  await h?.stop();
});

type Item = ResponsesItem;
type Body = Record<string, unknown>;
type Message = Awaited<ReturnType<Harness['client']['transcript']>>[number]['message'];

const refund = (id: string, cents: number, order = 'ord_2001'): ScriptedToolCall => ({
  id,
  name: 'issue_refund',
  arguments: { order_id: order, amount_cents: cents, reason: 'damaged' },
});
/** A scripted answer that reasons before its calls. */
const reasoned = (thought: string, ...toolCalls: ScriptedToolCall[]) => ({ reasoningContent: thought, toolCalls });
const inputOf = (body: Body) => body.input as Item[];
/** The output sent for a call, as text. */
const outputText = (body: Body, callId: string) =>
  inputOf(body).find((i) => i.type === 'function_call_output' && i.call_id === callId)?.output;
const outputOf = (body: Body, callId: string) => JSON.parse(outputText(body, callId)!);
const toolNames = (body: Body) => (body.tools as { name: string }[] | undefined)?.map((t) => t.name);
/** A request's input below its instructions, one label per item: `user`, `reasoning`, `call <id>`, `output <id>`… */
const labels = (body: Body) =>
  inputOf(body)
    .filter((i) => i.role !== 'system')
    .map((i) =>
      i.type === 'function_call'
        ? `call ${i.call_id}`
        : i.type === 'function_call_output'
          ? `output ${i.call_id}`
          : i.type === 'reasoning'
            ? 'reasoning'
            : `${i.role}`,
    );
/** The agent's instructions a request carries (its system message item). */
const instructionsOf = (body: Body) => inputOf(body).find((i) => i.role === 'system')?.content;

/**
 * The guarantee read off one request as sent: each function_call answered by exactly one function_call_output with
 * its call_id, and each reasoning item right before the item that followed it (sent with its id).
 */
function expectGuarantee(body: Body): void {
  const items = inputOf(body);
  for (const call of items.filter((i) => i.type === 'function_call')) {
    expect(items.filter((i) => i.type === 'function_call_output' && i.call_id === call.call_id)).toHaveLength(1);
  }
  items.forEach((item, index) => {
    if (item.type !== 'reasoning') return;
    const next = items[index + 1];
    expect(['reasoning', 'function_call', 'message']).toContain(next?.type);
    expect(next.id).toEqual(expect.any(String));
  });
}

/** Every request so far went to the Responses API, and the scripted server found none invalid. */
function expectOnlyValidResponsesRequests(): void {
  h.expectOnlyValidModelRequests();
  expect(h.model.requests.filter((r) => r.path !== '/v1/responses').map((r) => r.path)).toEqual([]);
}

/** The calls waiting in a conversation; none before it exists (a child starts a little after its call). */
const pendingIn = async (id: string) => (await h.client.state(id).catch(() => undefined))?.pendingApprovals.length ?? 0;
const waitForPending = (id: string, count: number) => expect.poll(() => pendingIn(id), { timeout: 20_000 }).toBe(count);
const kinds = async (id: string) =>
  (await h.client.transcript(id))
    .map((m) => m.message)
    .map((m: Message) => (m.role === 'tool' ? (JSON.parse(m.content).kind ?? 'ok') : m.role));
/** How many refunds of this amount the ledger holds for the order: the side effect, counted where it lands. */
const refundsOf = async (cents: number, order = 'ord_2001') =>
  (await h.pool.query('SELECT 1 FROM public.refunds WHERE order_id = $1 AND amount_cents = $2', [order, cents]))
    .rowCount;

describe('the end-to-end scenarios on the Responses API (the worker speaks it)', () => {
  it('approve: the approved refund runs once, and its output follows the reasoning and the call', async () => {
    const id = h.newConversationId('rs-approve');
    h.model.enqueue(reasoned('A damaged order; the refund needs approval.', refund('call_a1', 11_000)), {
      reasoningContent: 'It went through.',
      content: 'Refunded 110.00.',
    });
    const messageId = await h.client.sendMessage(id, 'RS-APPROVE refund ord_2001');
    await waitForPending(id, 1);
    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_a1' });
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');

    expect(await refundsOf(11_000)).toBe(1);
    const [, second] = h.requestsFor('RS-APPROVE');
    expect(labels(second)).toEqual(['user', 'reasoning', 'call call_a1', 'output call_a1']);
    expect(outputOf(second, 'call_a1')).toMatchObject({ order_id: 'ord_2001', amount_cents: 11_000 });
    expectGuarantee(second);
    expectOnlyValidResponsesRequests();
  });

  it('reject: the model reads a function_call_output saying so, and the turn answers', async () => {
    const id = h.newConversationId('rs-reject');
    h.model.enqueue(reasoned('Refund it.', refund('call_r1', 30_000)), { content: 'The refund was refused.' });
    const messageId = await h.client.sendMessage(id, 'RS-REJECT refund ord_2001');
    await waitForPending(id, 1);
    await h.client.decide(id, { decision: 'reject', toolCallId: 'call_r1', reason: 'too much' });
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn.outcome).toBe('answered');

    expect(await refundsOf(30_000)).toBe(0);
    const [, second] = h.requestsFor('RS-REJECT');
    expect(labels(second)).toEqual(['user', 'reasoning', 'call call_r1', 'output call_r1']);
    expect(outputOf(second, 'call_r1')).toMatchObject({ kind: 'rejected', reason: 'too much' });
    expectGuarantee(second);
    expectOnlyValidResponsesRequests();
  });

  it('cancel while a tool runs: the finished call keeps its result, the running one is answered as interrupted', async () => {
    slow.started = false;
    const id = h.newConversationId('rs-cancel-tool');
    h.model.enqueue(
      reasoned(
        'Find her, then export.',
        { id: 'call_find', name: 'find_customer', arguments: { query: 'Ada' } },
        { id: 'call_slow', name: 'slow_export', arguments: {} },
      ),
    );
    const messageId = await h.client.sendMessage(id, 'RS-CANCEL-TOOL find Ada and export');
    await expect
      .poll(async () => (await h.client.state(id)).runningToolCalls, { timeout: 20_000 })
      .toEqual(['call_slow']);
    await expect.poll(() => slow.started).toBe(true);
    await h.client.cancelTurn(id, 'too slow');
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('cancelled');
    expect(await kinds(id)).toEqual(['user', 'assistant', 'ok', 'interrupted']);

    h.model.enqueue({ content: 'Export cancelled.' });
    expect((await h.client.ask(id, 'RS-CANCEL-TOOL next')).answer).toBe('Export cancelled.');
    const next = h.requestsFor('RS-CANCEL-TOOL').at(-1)!;
    expect(labels(next)).toEqual([
      'user',
      'reasoning',
      'call call_find',
      'call call_slow',
      'output call_find',
      'output call_slow',
      'user',
    ]);
    expect(outputOf(next, 'call_slow')).toMatchObject({ kind: 'interrupted', started: true });
    expectGuarantee(next);
    expectOnlyValidResponsesRequests();
  });

  it('cancel while a call waits for approval: it is answered as cancelled and never runs; the next message answers', async () => {
    const id = h.newConversationId('rs-cancel-wait');
    h.model.enqueue(reasoned('Refund it.', refund('call_c1', 31_000)));
    const messageId = await h.client.sendMessage(id, 'RS-CANCEL-WAIT refund ord_2001');
    await waitForPending(id, 1);
    await h.client.cancelTurn(id);
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('cancelled');

    h.model.enqueue({ content: 'Nothing was refunded.' });
    expect((await h.client.ask(id, 'RS-CANCEL-WAIT next')).answer).toBe('Nothing was refunded.');
    expect(await refundsOf(31_000)).toBe(0);
    const next = h.requestsFor('RS-CANCEL-WAIT').at(-1)!;
    expect(labels(next)).toEqual(['user', 'reasoning', 'call call_c1', 'output call_c1', 'user']);
    expect(outputOf(next, 'call_c1')).toMatchObject({ kind: 'cancelled', started: false });
    expectGuarantee(next);
    expectOnlyValidResponsesRequests();
  });

  it('interrupt: a new message while a call waits ends the turn as interrupted; the call is answered as cancelled', async () => {
    const id = h.newConversationId('rs-interrupt');
    h.model.enqueue(reasoned('Refund it.', refund('call_i1', 32_000)), { content: 'Here is the status instead.' });
    const first = await h.client.sendMessage(id, 'RS-INTERRUPT refund ord_2001');
    await waitForPending(id, 1);
    const second = await h.client.sendMessage(id, 'RS-INTERRUPT just the status');
    expect((await h.client.waitForTurn(id, first)).outcome).toBe('interrupted');
    expect((await h.client.waitForTurn(id, second)).outcome).toBe('answered');

    expect(await refundsOf(32_000)).toBe(0);
    expect(await kinds(id)).toEqual(['user', 'assistant', 'cancelled', 'user', 'assistant']);
    const next = h.requestsFor('RS-INTERRUPT').at(-1)!;
    expect(labels(next)).toEqual(['user', 'reasoning', 'call call_i1', 'output call_i1', 'user']);
    expect(outputOf(next, 'call_i1')).toMatchObject({ kind: 'cancelled', started: false });
    expectGuarantee(next);
    expectOnlyValidResponsesRequests();
  });

  it('a new message mid-turn, queued: the turn ends first (its reasoning kept), then the message is answered', async () => {
    const id = h.newConversationId('rs-queue');
    h.model.enqueue(
      reasoned('Refund it.', refund('call_q1', 10_300)),
      { reasoningContent: 'Say it is done.', content: 'Refund issued.' },
      { content: 'Your order is on its way.' },
    );
    const first = await h.client.sendMessage(id, 'RS-QUEUE refund ord_2001', { input: { onNewMessage: 'queue' } });
    await waitForPending(id, 1);
    const second = await h.client.sendMessage(id, 'RS-QUEUE where is my order?');
    await expect.poll(async () => (await h.client.state(id)).queuedMessages).toBe(1);
    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_q1' });
    expect((await h.client.waitForTurn(id, first)).outcome).toBe('answered');
    expect((await h.client.waitForTurn(id, second)).outcome).toBe('answered');

    expect(await refundsOf(10_300)).toBe(1);
    const next = h.requestsFor('RS-QUEUE').at(-1)!;
    expect(labels(next)).toEqual([
      'user',
      'reasoning',
      'call call_q1',
      'output call_q1',
      'reasoning',
      'assistant',
      'user',
    ]);
    expectGuarantee(next);
    expectOnlyValidResponsesRequests();
  });

  it('a new message while the model call is in flight: the call is dropped with what it would have said', async () => {
    const id = h.newConversationId('rs-in-flight');
    h.model.setResponder((request) =>
      JSON.stringify(request.body).includes('RS-IN-FLIGHT two')
        ? { content: 'Answering both.' }
        : { kind: 'delay', ms: 10_000, then: reasoned('Never read.', refund('call_never', 33_000)) },
    );
    try {
      const first = await h.client.sendMessage(id, 'RS-IN-FLIGHT one');
      await expect.poll(() => h.requestsFor('RS-IN-FLIGHT one').length, { timeout: 20_000 }).toBe(1);
      const second = await h.client.sendMessage(id, 'RS-IN-FLIGHT two');
      expect((await h.client.waitForTurn(id, first)).outcome).toBe('interrupted');
      expect((await h.client.waitForTurn(id, second)).outcome).toBe('answered');
    } finally {
      h.model.setResponder(undefined);
    }
    expect(await kinds(id)).toEqual(['user', 'user', 'assistant']);
    const last = h.requestsFor('RS-IN-FLIGHT').at(-1)!;
    expect(labels(last)).toEqual(['user', 'user']);
    expectOnlyValidResponsesRequests();
  });

  it('parallel calls, one approved and one rejected: each answered once by its call_id, one refund made', async () => {
    const id = h.newConversationId('rs-parallel');
    h.model.enqueue(
      reasoned('Two refunds; the second looks like a duplicate.', refund('call_p1', 10_100), refund('call_p2', 10_150)),
      { content: 'One refund issued.' },
    );
    const messageId = await h.client.sendMessage(id, 'RS-PARALLEL refund ord_2001 twice');
    await waitForPending(id, 2);
    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_p1' });
    await h.client.decide(id, { decision: 'reject', toolCallId: 'call_p2', reason: 'duplicate' });
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');

    expect([await refundsOf(10_100), await refundsOf(10_150)]).toEqual([1, 0]);
    const [, second] = h.requestsFor('RS-PARALLEL');
    expect(labels(second)).toEqual([
      'user',
      'reasoning',
      'call call_p1',
      'call call_p2',
      'output call_p1',
      'output call_p2',
    ]);
    expect(outputOf(second, 'call_p1')).toMatchObject({ amount_cents: 10_100 });
    expect(outputOf(second, 'call_p2')).toMatchObject({ kind: 'rejected', reason: 'duplicate' });
    expectGuarantee(second);
    expectOnlyValidResponsesRequests();
  });

  it("a handoff: transfer_to_refunds moves the turn to the refunds agent, whose requests carry triage's reasoning and call", async () => {
    const id = h.newConversationId('rs-handoff');
    h.model.enqueue(
      reasoned('Refunds are for the refunds agent.', {
        id: 'call_to_refunds',
        name: 'transfer_to_refunds',
        arguments: {},
      }),
      reasoned('Refund it.', refund('call_h1', 10_500, 'ord_1001')),
      { reasoningContent: 'Done.', content: 'Refunded 105.00.' },
    );
    const messageId = await h.client.sendMessage(id, 'RS-HANDOFF refund ord_1001', { input: { agent: 'triage' } });
    await waitForPending(id, 1);
    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_h1' });
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    expect((await h.client.state(id)).agent).toBe('refunds');
    expect(await refundsOf(10_500, 'ord_1001')).toBe(1);

    const [first, second, third] = h.requestsFor('RS-HANDOFF');
    expect([first, second, third].map(instructionsOf)).toEqual(['TRIAGE', 'REFUNDS', 'REFUNDS']);
    expect(toolNames(first)).toEqual(['find_customer', 'transfer_to_refunds', 'transfer_to_auditor']);
    expect(toolNames(second)).toEqual(['issue_refund']);
    expect(labels(second)).toEqual(['user', 'reasoning', 'call call_to_refunds', 'output call_to_refunds']);
    expect(outputOf(second, 'call_to_refunds')).toEqual({ assistant: 'refunds' });
    expect(labels(third).slice(4)).toEqual(['reasoning', 'call call_h1', 'output call_h1']);
    for (const body of [second, third]) expectGuarantee(body);
    expectOnlyValidResponsesRequests();
  });

  it('a handoff whose input filter drops the tool calls leaves their reasoning out too', async () => {
    const id = h.newConversationId('rs-handoff-filter');
    h.model.enqueue(
      reasoned('The auditor checks orders.', { id: 'call_to_auditor', name: 'transfer_to_auditor', arguments: {} }),
      { content: 'All orders are fine.' },
    );
    const { turn } = await h.client.ask(id, 'RS-HANDOFF-FILTER check my orders', { input: { agent: 'triage' } });
    expect(turn.outcome).toBe('answered');

    const stored = await h.pool.query(
      `SELECT 1 FROM ${h.tables.modelResponses} WHERE conversation_id = $1 AND reasoning IS NOT NULL`,
      [id],
    );
    expect(stored.rowCount).toBe(1); // the reasoning was kept, and is left out with the call it preceded
    const [, second] = h.requestsFor('RS-HANDOFF-FILTER');
    expect(instructionsOf(second)).toBe('AUDITOR');
    expect(labels(second)).toEqual(['user']);
    expectOnlyValidResponsesRequests();
  });

  it('a child agent: a call waiting inside it is approved by its id; both conversations speak the Responses API', async () => {
    const id = h.newConversationId('rs-child');
    h.model.enqueue(
      reasoned('The refunder does refunds.', {
        id: 'call_delegate',
        name: 'ask_refunder',
        arguments: { input: 'RS-CHILD refund 102.00 on ord_2001' },
      }),
      reasoned('Refund it.', refund('call_child', 10_200)),
      { reasoningContent: 'Done.', content: 'RS-CHILD refunded 102.00.' },
      { content: 'The refunder refunded it.' },
    );
    const messageId = await h.client.sendMessage(id, 'RS-CHILD please refund ord_2001', { input: { agent: 'desk' } });
    const child = `${id}~refunder~1-0`;
    await waitForPending(child, 1);
    await h.client.decide(child, { decision: 'approve', toolCallId: 'call_child' });
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    expect(await refundsOf(10_200)).toBe(1);

    const requests = h.requestsFor('RS-CHILD');
    expect(requests.map(instructionsOf)).toEqual(['DESK', 'REFUNDER', 'REFUNDER', 'DESK']);
    expect(labels(requests[2])).toEqual(['user', 'reasoning', 'call call_child', 'output call_child']);
    expect(labels(requests[3])).toEqual(['user', 'reasoning', 'call call_delegate', 'output call_delegate']);
    expect(outputText(requests[3], 'call_delegate')).toBe('RS-CHILD refunded 102.00.');
    for (const body of requests) expectGuarantee(body);
    expectOnlyValidResponsesRequests();
  });

  it("a child agent, its parent's turn cancelled while a call waits inside it: every call of both is answered", async () => {
    const id = h.newConversationId('rs-child-cancel');
    const delegate = { id: 'call_delegate', name: 'ask_refunder', arguments: { input: 'RS-CHILD-CANCEL refund' } };
    h.model.enqueue(
      reasoned('Delegate, and look her up meanwhile.', delegate, {
        id: 'call_find',
        name: 'find_customer',
        arguments: { query: 'Ada' },
      }),
      reasoned('Refund it.', refund('call_child', 34_000)),
    );
    const messageId = await h.client.sendMessage(id, 'RS-CHILD-CANCEL refund ord_2001', { input: { agent: 'desk' } });
    const child = `${id}~refunder~1-0`;
    await waitForPending(child, 1);
    await h.client.cancelTurn(id);
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('cancelled');
    expect(await kinds(child)).toEqual(['user', 'assistant', 'cancelled']);

    h.model.enqueue({ content: 'Nothing was refunded.' });
    expect((await h.client.ask(id, 'RS-CHILD-CANCEL next')).answer).toBe('Nothing was refunded.');
    expect(await refundsOf(34_000)).toBe(0);
    const next = h.requestsFor('RS-CHILD-CANCEL next')[0];
    expect(labels(next)).toEqual([
      'user',
      'reasoning',
      'call call_delegate',
      'call call_find',
      'output call_delegate',
      'output call_find',
      'user',
    ]);
    expect(outputOf(next, 'call_delegate')).toMatchObject({ kind: 'interrupted' });
    expect(outputOf(next, 'call_find')).toHaveProperty('customers');
    expectGuarantee(next);
    expectOnlyValidResponsesRequests();
  });

  it('typed output: asked as text.format; a mismatch is said to the model, the reasoned answer before it kept in order', async () => {
    const id = h.newConversationId('rs-typed');
    const schema = {
      type: 'object',
      properties: { customer: { type: 'string' }, found: { type: 'boolean' } },
      required: ['customer', 'found'],
      additionalProperties: false,
    };
    h.model.enqueue(
      reasoned('Look her up.', { id: 'call_t1', name: 'find_customer', arguments: { query: 'Ada' } }),
      { reasoningContent: 'Answer in prose.', content: 'Ada is cus_ada.' },
      { content: '{"customer":"cus_ada","found":true}' },
    );
    const { turn } = await h.client.ask(id, 'RS-TYPED who is Ada?', {
      input: { output: { schema, name: 'lookup', retries: 1 } },
    });
    expect(turn).toMatchObject({ outcome: 'answered', steps: 3, output: { customer: 'cus_ada', found: true } });

    const requests = h.requestsFor('RS-TYPED');
    expect(requests).toHaveLength(3);
    for (const body of requests) {
      expect(body.text).toEqual({ format: { type: 'json_schema', name: 'lookup', schema, strict: true } });
      expect(body).not.toHaveProperty('response_format');
    }
    expect(labels(requests[2])).toEqual([
      'user',
      'reasoning',
      'call call_t1',
      'output call_t1',
      'reasoning',
      'assistant',
      'user',
    ]);
    expectGuarantee(requests[2]);
    expectOnlyValidResponsesRequests();
  });
});
