import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';
import { agent } from '../../src/tools/agents';
import { backofficeTools } from '../../src/demo/tools';
import { conversationActivityType } from '../../src/contract/activities';
import { defaultPayloadConverter } from '@temporalio/common';

// Handoffs on the real stack: the model moves the conversation to another agent with a transfer_to_<agent> call.

const tools = backofficeTools();
const named = (...names: string[]) => tools.filter((t) => names.includes(t.name));
const agents = [
  agent({
    name: 'triage',
    instructions: 'TRIAGE: route requests.',
    tools: named('find_customer', 'issue_refund'),
    handoffs: ['refunds', 'auditor'],
  }),
  agent({
    name: 'refunds',
    instructions: 'REFUNDS: issue refunds.',
    handoffDescription: 'Issues refunds.',
    tools: ['list_orders'],
    handoffs: ['writer'],
  }),
  agent({ name: 'auditor', instructions: 'AUDITOR: check orders.', tools: ['list_orders'] }),
  agent({ name: 'writer', instructions: 'WRITER: answer in prose.', modelSettings: { temperature: 0.2 } }),
];

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ tools, agents, defaultAgent: 'triage' });
});
afterAll(async () => {
  await h?.stop();
});

type WireBody = {
  messages: { role: string; content: unknown; name?: string }[];
  tools?: { function: { name: string } }[];
  tool_choice?: unknown;
  temperature?: number;
};
const body = (request: Record<string, unknown>) => request as unknown as WireBody;
const toolNames = (request: Record<string, unknown>) => body(request).tools?.map((t) => t.function.name);
const refundedCents = async (order: string) =>
  Number(
    (await h.pool.query<{ refunded_cents: number }>('SELECT refunded_cents FROM public.orders WHERE id = $1', [order]))
      .rows[0].refunded_cents,
  );

describe('handoffs', () => {
  it("runs the response's other calls first (a pending approval is kept), takes the first handoff, and the next call is the new agent's", async () => {
    const id = h.newConversationId('handoff');
    const before = await refundedCents('ord_2001');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 15_000, reason: 'late' },
          },
          { id: 'call_to_refunds', name: 'transfer_to_refunds', arguments: {} },
          { id: 'call_to_auditor', name: 'transfer_to_auditor', arguments: {} },
        ],
      },
      { content: 'Refunded; anything else?' },
    );
    const messageId = await h.client.sendMessage(id, 'HANDOFF-1 refund $150 on ord_2001', {
      input: { agent: 'triage', systemPrompt: 'stored, not sent' },
    });
    await expect
      .poll(async () => (await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId), { timeout: 20_000 })
      .toEqual(['call_refund']);
    expect((await h.client.state(id)).agent).toBe('triage'); // the handoff waits for the response's other calls
    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_refund' });
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn).toMatchObject({ outcome: 'answered', steps: 2 });
    expect(await refundedCents('ord_2001')).toBe(before + 15_000);

    const [first, second] = h.requestsFor('HANDOFF-1');
    expect(body(first).messages[0]).toEqual({ role: 'system', content: 'TRIAGE: route requests.' });
    expect(toolNames(first)).toEqual(['find_customer', 'issue_refund', 'transfer_to_refunds', 'transfer_to_auditor']);
    expect(body(second).messages[0]).toEqual({ role: 'system', content: 'REFUNDS: issue refunds.' });
    expect(toolNames(second)).toEqual(['list_orders', 'transfer_to_writer']);
    expect(body(second).messages.some((m) => 'name' in m)).toBe(false); // which agent spoke stays in the transcript

    const transcript = (await h.client.transcript(id)).map((m) => m.message);
    expect(transcript[0]).toEqual({ role: 'system', content: 'stored, not sent' });
    expect(transcript.filter((m) => m.role === 'assistant').map((m) => (m as { name?: string }).name)).toEqual([
      'triage',
      'refunds',
    ]);
    const results = transcript.flatMap((m) => (m.role === 'tool' ? [[m.tool_call_id, JSON.parse(m.content)]] : []));
    expect(results).toEqual([
      ['call_refund', expect.objectContaining({ order_id: 'ord_2001', amount_cents: 15_000 })],
      ['call_to_refunds', { assistant: 'refunds' }],
      [
        'call_to_auditor',
        { kind: 'tool_failed', reason: 'handoff_refused', error: expect.stringContaining('Only the first handoff') },
      ],
    ]);
    const state = await h.client.state(id);
    expect(state.agent).toBe('refunds');
    expect(state.messages.filter((m) => m.role === 'assistant').map((m) => m.agent)).toEqual(['triage', 'refunds']);
    // Operators reading the history see which agent each model call was for.
    const { events } = await h.temporal.workflow.getHandle(id).fetchHistory();
    const summaries = (events ?? [])
      .filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === conversationActivityType('callModel'),
      )
      .map((e) => defaultPayloadConverter.fromPayload<string>(e.userMetadata!.summary!));
    expect(summaries).toEqual(['model call 1 of turn 1 (agent triage)', 'model call 2 of turn 1 (agent refunds)']);
    h.expectOnlyValidModelRequests();
  });

  it('starts a conversation that names no agent with the default agent; an agent without tools sends no tools and no tool_choice, with its own settings', async () => {
    const id = h.newConversationId('default-agent');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_h1', name: 'transfer_to_refunds', arguments: {} }] },
      { toolCalls: [{ id: 'call_h2', name: 'transfer_to_writer', arguments: {} }] },
      { content: 'In prose.' },
    );
    const { turn, answer } = await h.client.ask(id, 'HANDOFF-2 write it up');
    expect(turn).toMatchObject({ outcome: 'answered', steps: 3 });
    expect(answer).toBe('In prose.');
    const requests = h.requestsFor('HANDOFF-2');
    expect(requests.map((r) => body(r).messages[0].content)).toEqual([
      'TRIAGE: route requests.',
      'REFUNDS: issue refunds.',
      'WRITER: answer in prose.',
    ]);
    const last = body(requests[2]);
    expect(last).not.toHaveProperty('tools');
    expect(last).not.toHaveProperty('tool_choice');
    expect(last.temperature).toBe(0.2);
    expect(toolNames(requests[0])).toContain('transfer_to_refunds');
    expect((await h.client.state(id)).agent).toBe('writer');
    h.expectOnlyValidModelRequests();
  });

  it('refuses handoffs past maxHandoffsPerTurn: the agent that has the turn answers', async () => {
    const id = h.newConversationId('handoff-limit');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_h1', name: 'transfer_to_refunds', arguments: {} }] },
      { toolCalls: [{ id: 'call_h2', name: 'transfer_to_writer', arguments: {} }] },
      { content: 'Still refunds.' },
    );
    const { turn } = await h.client.ask(id, 'HANDOFF-3 go', { input: { agent: 'triage', maxHandoffsPerTurn: 1 } });
    expect(turn.outcome).toBe('answered');
    const requests = h.requestsFor('HANDOFF-3');
    expect(requests.map((r) => body(r).messages[0].content)).toEqual([
      'TRIAGE: route requests.',
      'REFUNDS: issue refunds.',
      'REFUNDS: issue refunds.',
    ]);
    const refused = (await h.client.transcript(id))
      .map((m) => m.message)
      .find((m) => m.role === 'tool' && m.tool_call_id === 'call_h2');
    expect(JSON.parse((refused as { content: string }).content)).toMatchObject({
      kind: 'tool_failed',
      reason: 'handoff_refused',
    });
    h.expectOnlyValidModelRequests();
  });

  it('carries the current agent across continue-as-new', async () => {
    const id = h.newConversationId('handoff-can');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_h1', name: 'transfer_to_auditor', arguments: {} }] },
      { content: 'Auditor here.' },
    );
    await h.client.ask(id, 'HANDOFF-4 first', { input: { agent: 'triage', continueAsNewAfterEvents: 10 } });
    h.model.enqueue({ content: 'Still the auditor.' });
    await h.client.ask(id, 'HANDOFF-4 second');
    const state = await h.client.state(id);
    expect(state.runs).toBeGreaterThan(1);
    expect(state.agent).toBe('auditor');
    const secondTurn = h.requestsFor('HANDOFF-4 second');
    expect(body(secondTurn[0]).messages[0]).toEqual({ role: 'system', content: 'AUDITOR: check orders.' });
    h.expectOnlyValidModelRequests();
  });

  it('fails the turn with a clear error when the conversation names an agent the worker does not have', async () => {
    const id = h.newConversationId('no-such-agent');
    const { turn } = await h.client.ask(id, 'HANDOFF-5 hello', { input: { agent: 'nobody' } });
    expect(turn.outcome).toBe('failed');
    expect(turn.error).toMatch(
      /agent "nobody", which this worker does not have \(its agents: triage, refunds, auditor, writer\)/,
    );
    expect(h.requestsFor('HANDOFF-5')).toHaveLength(0);
  });

  it('a cancel while a call of the handoff response waits for a person settles every call; the handoff holds', async () => {
    const id = h.newConversationId('handoff-cancel');
    h.model.enqueue({
      toolCalls: [
        {
          id: 'call_refund',
          name: 'issue_refund',
          arguments: { order_id: 'ord_2001', amount_cents: 14_000, reason: 'late' },
        },
        { id: 'call_to_refunds', name: 'transfer_to_refunds', arguments: {} },
      ],
    });
    const messageId = await h.client.sendMessage(id, 'HANDOFF-6 refund $140 on ord_2001', {
      input: { agent: 'triage' },
    });
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    await h.client.cancelTurn(id, 'not now');
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('cancelled');
    const results = (await h.client.transcript(id))
      .map((m) => m.message)
      .flatMap((m) => (m.role === 'tool' ? [[m.tool_call_id, JSON.parse(m.content)]] : []));
    expect(results).toEqual([
      ['call_refund', expect.objectContaining({ kind: 'cancelled' })],
      ['call_to_refunds', { assistant: 'refunds' }],
    ]);
    h.model.enqueue({ content: 'Refunds here.' });
    await h.client.ask(id, 'HANDOFF-6 again');
    expect(body(h.requestsFor('HANDOFF-6 again')[0]).messages[0]).toEqual({
      role: 'system',
      content: 'REFUNDS: issue refunds.',
    });
    h.expectOnlyValidModelRequests();
  });
});
