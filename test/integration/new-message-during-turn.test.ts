import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

type Message = Awaited<ReturnType<Harness['client']['transcript']>>[number]['message'];
const transcript = async (id: string): Promise<Message[]> => (await h.client.transcript(id)).map((m) => m.message);
const kindOf = (m: Message) => (m.role === 'tool' ? (JSON.parse(m.content).kind ?? 'ok') : m.role);
const bigRefund = (id: string) => ({
  id,
  name: 'issue_refund',
  arguments: { order_id: 'ord_2001', amount_cents: 25_000, reason: 'late' },
});
const waitForPending = (id: string) =>
  expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);

describe('a new user message during a turn', () => {
  it('with the interrupt policy (default), while waiting for approval: the call is cancelled and the new message answered', async () => {
    const id = h.newConversationId('interrupt');
    h.model.enqueue({ toolCalls: [bigRefund('call_i1')] }, { content: 'Forget the refund; here is the status.' });
    const first = await h.client.sendMessage(id, 'Refund ord_2001 please');
    await waitForPending(id);
    const second = await h.client.sendMessage(id, 'Actually, just tell me the order status');

    expect((await h.client.waitForTurn(id, first)).outcome).toBe('interrupted');
    const answered = await h.client.waitForTurn(id, second);
    expect(answered.outcome).toBe('answered');
    const messages = await transcript(id);
    expect(messages.map(kindOf)).toEqual(['user', 'assistant', 'cancelled', 'user', 'assistant']);
    expect(messages[3]).toMatchObject({ content: 'Actually, just tell me the order status' });
    h.expectOnlyValidModelRequests();
  });

  it('with the queue policy: the turn finishes first, then the new message is answered, in order', async () => {
    const id = h.newConversationId('queue');
    h.model.enqueue(
      { toolCalls: [bigRefund('call_q1')] },
      { content: 'Refund issued.' },
      { content: 'Your order is on its way.' },
    );
    const first = await h.client.sendMessage(id, 'Refund with queue policy', { input: { onNewMessage: 'queue' } });
    await waitForPending(id);
    const second = await h.client.sendMessage(id, 'And where is my order?');
    await expect.poll(async () => (await h.client.state(id)).queuedMessages).toBe(1);
    expect((await h.client.state(id)).status).toBe('awaiting_approval');
    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_q1' });

    expect((await h.client.waitForTurn(id, first)).outcome).toBe('answered');
    expect((await h.client.waitForTurn(id, second)).outcome).toBe('answered');
    const messages = await transcript(id);
    expect(messages.map(kindOf)).toEqual(['user', 'assistant', 'ok', 'assistant', 'user', 'assistant']);
    expect(
      messages.map((m) => (m.role === 'user' || m.role === 'assistant' ? m.content : null)).filter(Boolean),
    ).toEqual(['Refund with queue policy', 'Refund issued.', 'And where is my order?', 'Your order is on its way.']);
    h.expectOnlyValidModelRequests();
  });

  it('several messages during a model call are all taken, none lost or reordered', async () => {
    const id = h.newConversationId('burst');
    h.model.setResponder((request) =>
      JSON.stringify(request.body).includes('burst three')
        ? { content: 'Answering all three.' }
        : { kind: 'delay', ms: 10_000, then: { content: 'never shown' } },
    );
    try {
      const first = await h.client.sendMessage(id, 'burst one');
      await expect.poll(() => h.requestsFor('burst one').length, { timeout: 20_000 }).toBe(1);
      const second = await h.client.sendMessage(id, 'burst two');
      const third = await h.client.sendMessage(id, 'burst three');
      const last = await h.client.waitForTurn(id, third);
      expect(last.outcome).toBe('answered');
      expect((await h.client.waitForTurn(id, first)).outcome).toBe('interrupted');
      // "burst two" had a turn of its own (interrupted by "burst three") or shared the last one.
      const turns = (await h.client.state(id)).recentTurns;
      for (const messageId of [first, second, third]) {
        expect(turns.filter((t) => t.messageIds.includes(messageId))).toHaveLength(1);
      }
    } finally {
      h.model.setResponder(undefined);
    }
    const messages = await transcript(id);
    expect(messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'burst one',
      'burst two',
      'burst three',
    ]);
    expect(messages[messages.length - 1]).toMatchObject({ role: 'assistant', content: 'Answering all three.' });
    h.expectOnlyValidModelRequests();
  });
});
