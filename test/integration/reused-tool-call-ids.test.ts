import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecisionRefusedError } from '../../src/common/errors';
import type { ChatMessage } from '../../src/contract/messages';
import { exportHistoryFixture } from '../support/fixture-export';
import { startHarness, type Harness } from '../support/harness';
import { anEffectKeyOf } from '../support/effect-key-match';

// Providers do not promise unique tool-call ids: some restart them in every
// response (`functions.issue_refund:0` in turn 1 and again in turn 2), some
// send empty or repeated ids within one response. Effects are keyed by call
// instance, so every call runs its own effect and gets its own result.

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const REUSED = 'functions.issue_refund:0';
const toolMessages = async (id: string) =>
  (await h.client.transcript(id)).flatMap(({ seq, message: m }) => (m.role === 'tool' ? [{ seq, ...m }] : []));

describe('tool-call ids that providers reuse', () => {
  it('three turns whose refunds all carry the id functions.issue_refund:0 apply three refunds with three distinct results', async () => {
    const id = h.newConversationId('reused');
    const before = (await h.pool.query("SELECT refunded_cents FROM orders WHERE id = 'ord_1002'")).rows[0]
      .refunded_cents as number;
    // The model server restarts ids in every response, as Kimi-style models behind vLLM do.
    h.model.setToolCallIds('per-response');
    try {
      for (const cents of [101, 102, 103]) {
        h.model.enqueue(
          {
            toolCalls: [
              {
                name: 'issue_refund',
                arguments: { order_id: 'ord_1002', amount_cents: cents, reason: `turn ${cents}` },
              },
            ],
          },
          { content: `Refunded ${cents} cents.` },
        );
        const { turn } = await h.client.ask(id, `Refund ${cents} cents on ord_1002`);
        expect(turn.outcome).toBe('answered');
      }
    } finally {
      h.model.setToolCallIds('unique');
    }
    const refunds = await h.pool.query<{ id: string; amount_cents: number; idempotency_key: string }>(
      "SELECT id::text, amount_cents, idempotency_key FROM refunds WHERE order_id = 'ord_1002' AND idempotency_key LIKE $1 ORDER BY id",
      [`${id}/%`],
    );
    expect(refunds.rows.map((r) => [r.amount_cents, r.idempotency_key])).toEqual([
      [101, anEffectKeyOf(`${id}/msg-1/call-0`)],
      [102, anEffectKeyOf(`${id}/msg-5/call-0`)],
      [103, anEffectKeyOf(`${id}/msg-9/call-0`)],
    ]);
    const after = (await h.pool.query("SELECT refunded_cents FROM orders WHERE id = 'ord_1002'")).rows[0]
      .refunded_cents as number;
    expect(after - before).toBe(306);
    const results = (await toolMessages(id)).map((m) => ({ callId: m.tool_call_id, ...JSON.parse(m.content) }));
    expect(results).toEqual(
      refunds.rows.map((r) =>
        expect.objectContaining({ callId: REUSED, refund_id: r.id, amount_cents: r.amount_cents }),
      ),
    );
    expect(new Set(results.map((r) => r.refund_id)).size).toBe(3);
    await exportHistoryFixture(h.temporal, id, 'reused-tool-call-ids');
    h.expectOnlyValidModelRequests();
  });

  it('a read-only lookup repeated with a reused id returns fresh results', async () => {
    const id = h.newConversationId('reused-read');
    const lookup = {
      toolCalls: [{ id: 'functions.find_customer:0', name: 'find_customer', arguments: { query: 'Zuse' } }],
    };
    h.model.enqueue(lookup, { content: 'No Zuse yet.' });
    await h.client.ask(id, 'Find Zuse');
    await h.pool.query(
      "INSERT INTO customers (id, name, email) VALUES ('cus_zuse', 'Konrad Zuse', 'konrad@example.com')",
    );
    h.model.enqueue(lookup, { content: 'Found Zuse.' });
    await h.client.ask(id, 'Find Zuse again');
    const [first, second] = (await toolMessages(id)).map((m) => JSON.parse(m.content));
    expect(first).toEqual({ customers: [] });
    expect(second).toEqual({ customers: [{ id: 'cus_zuse', name: 'Konrad Zuse', email: 'konrad@example.com' }] });
    h.expectOnlyValidModelRequests();
  });

  it('a decision naming the callKey of an earlier call is refused when a later call with the same id waits; the right key applies', async () => {
    const id = h.newConversationId('reused-decision');
    const bigRefund = (reason: string) => ({
      toolCalls: [
        { id: REUSED, name: 'issue_refund', arguments: { order_id: 'ord_1001', amount_cents: 10_500, reason } },
      ],
    });
    const waitingCall = async () => {
      await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
      return (await h.client.state(id)).pendingApprovals[0];
    };
    h.model.enqueue(bigRefund('first'), { content: 'First refund done.' }, bigRefund('second'), {
      content: 'Second refund done.',
    });
    const first = await h.client.sendMessage(id, 'First big refund on ord_1001');
    const earlier = await waitingCall();
    expect(earlier).toMatchObject({ toolCallId: REUSED, callKey: `${id}/msg-1/call-0` });
    await h.client.decide(id, { decision: 'approve', toolCallId: REUSED, callKey: earlier.callKey });
    expect((await h.client.waitForTurn(id, first)).outcome).toBe('answered');

    const second = await h.client.sendMessage(id, 'Second big refund on ord_1001');
    const later = await waitingCall();
    expect(later).toMatchObject({ toolCallId: REUSED, callKey: `${id}/msg-5/call-0` });
    // A stale decision, made for the first call: same provider id, different call instance.
    const stale = await h.client
      .decide(id, { decision: 'approve', toolCallId: REUSED, callKey: earlier.callKey })
      .catch((err: Error) => err);
    expect(stale).toBeInstanceOf(DecisionRefusedError);
    expect((stale as Error).message).toContain(
      `waiting now is a different call (key ${later.callKey}) from the one decided (key ${earlier.callKey})`,
    );
    expect((await h.client.state(id)).pendingApprovals).toHaveLength(1);
    // The key alone names the call.
    const applied = await h.client.decide(id, { decision: 'reject', callKey: later.callKey, reason: 'one is enough' });
    expect(applied).toMatchObject({ applied: true, toolCallIds: [REUSED] });
    expect((await h.client.waitForTurn(id, second)).outcome).toBe('answered');
    const records = await h.pool.query(
      'SELECT decision, call_keys FROM durable_agent.approval_decisions WHERE conversation_id = $1 ORDER BY decided_at',
      [id],
    );
    expect(records.rows).toEqual([
      { decision: 'approve', call_keys: [earlier.callKey] },
      { decision: 'reject', call_keys: [later.callKey] },
    ]);
    h.expectOnlyValidModelRequests();
  });

  for (const stream of [true, false]) {
    it(`a response with two calls sharing one id and one with an empty id runs all three and answers (${stream ? 'streamed' : 'not streamed'})`, async () => {
      const id = h.newConversationId(stream ? 'dup-stream' : 'dup-plain');
      h.model.enqueue(
        {
          toolCalls: [
            { id: 'call_same', name: 'find_customer', arguments: { query: 'Ada' } },
            { id: 'call_same', name: 'list_orders', arguments: { customer_id: 'cus_ada' } },
            { id: '', name: 'find_customer', arguments: { query: 'Grace' } },
          ],
        },
        { content: 'Ada has two orders; Grace is a customer too.' },
      );
      const { turn, answer } = await h.client.ask(id, 'Ada and Grace', { input: { model: { stream } } });
      expect(turn.outcome).toBe('answered');
      expect(answer).toBe('Ada has two orders; Grace is a customer too.');
      const stored = (await h.client.transcript(id)).map((m) => m.message);
      const assistant = stored[1] as Extract<ChatMessage, { role: 'assistant' }>;
      const ids = assistant.tool_calls!.map((c) => c.id);
      expect(ids[0]).toBe('call_same');
      expect(new Set(ids).size).toBe(3);
      expect(ids.every((callId) => callId.length > 0 && callId.length <= 40)).toBe(true);
      const tools = stored.slice(2, 5) as Extract<ChatMessage, { role: 'tool' }>[];
      expect(tools.map((t) => t.tool_call_id)).toEqual(ids);
      expect(JSON.parse(tools[0].content).customers[0].name).toBe('Ada Lovelace');
      expect(JSON.parse(tools[1].content).orders).toHaveLength(2);
      expect(JSON.parse(tools[2].content).customers[0].name).toBe('Grace Hopper');
      // The model saw the ids the worker assigned, paired with their results.
      const followUp = h.requestsFor('Ada and Grace').at(-1)!.messages as { role: string; tool_call_id?: string }[];
      expect(followUp.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(ids);
      if (stream) await exportHistoryFixture(h.temporal, id, 'duplicated-and-empty-ids');
      h.expectOnlyValidModelRequests();
    });
  }
});
