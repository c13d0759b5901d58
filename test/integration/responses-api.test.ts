import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';
import { requestsWithUserText, type ResponsesItem } from '../support/model-requests';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

type Item = ResponsesItem;

/** The Responses requests of one conversation (its first user message carries `marker`), in order. */
const responsesRequestsFor = (marker: string) =>
  requestsWithUserText(
    h.model.requests.filter((r) => r.path === '/v1/responses'),
    marker,
  );

const refund = (id: string, order: string, cents: number) => ({
  id,
  name: 'issue_refund',
  arguments: { order_id: order, amount_cents: cents, reason: 'damaged' },
});

describe('a conversation on the Responses API', () => {
  it('asks with store false, waits for an approval, and sends the reasoning items back intact before their call', async () => {
    const id = h.newConversationId('responses-approval');
    h.model.enqueue(
      {
        reasoningContent: 'The order is damaged; a refund needs approval.',
        toolCalls: [refund('call_x1', 'ord_1001', 10_500)],
      },
      { reasoningContent: 'The refund went through.', content: 'Refunded ord_1001.' },
      { content: 'You are welcome.' },
    );
    const marker = 'Refund ord_1001 on the Responses API';
    const messageId = await h.client.sendMessage(id, marker, { input: { model: { api: 'responses' } } });
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_x1', decidedBy: 'ops' });
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn.outcome).toBe('answered');
    // Usage is counted from the Responses API's input_tokens and output_tokens, as from Chat Completions'.
    expect(turn.usage?.promptTokens).toBeGreaterThan(0);
    expect(turn.usage?.completionTokens).toBeGreaterThan(0);

    const [first, second] = responsesRequestsFor(marker);
    expect(first).toMatchObject({ store: false, include: ['reasoning.encrypted_content'] });
    expect(first).not.toHaveProperty('previous_response_id');
    expect(h.model.requests.some((r) => r.path === '/v1/chat/completions')).toBe(false);

    // The first answer's reasoning item, as the server issued it, goes back just before the call it preceded.
    const input = second.input as Item[];
    const asked = input.findIndex((i) => i.role === 'user');
    expect(input.slice(asked).map((i) => i.type ?? 'message')).toEqual([
      'message',
      'reasoning',
      'function_call',
      'function_call_output',
    ]);
    expect(input[asked + 2]).toMatchObject({ call_id: 'call_x1' });
    expect(input[asked + 1].encrypted_content).toMatch(/^gAAAAA/);
    const stored = await h.pool.query<{ reasoning: { item: Item }[] }>(
      `SELECT r.reasoning FROM durable_agent.model_responses r
         JOIN durable_agent.conversation_messages m ON m.ref_key = r.response_key
        WHERE m.conversation_id = $1 AND r.reasoning IS NOT NULL ORDER BY m.seq`,
      [id],
    );
    expect(stored.rows.map((r) => r.reasoning.length)).toEqual([1, 1]);
    expect(stored.rows[0].reasoning[0].item).toEqual(input[asked + 1]);

    // The next turn sends both answers' reasoning, each before its own item; every request was valid.
    const { turn: next, answer } = await h.client.ask(id, 'thanks');
    expect(next.outcome).toBe('answered');
    expect(answer).toBe('You are welcome.');
    const third = responsesRequestsFor(marker)[2].input as Item[];
    expect(third.slice(asked).map((i) => i.type ?? 'message')).toEqual([
      'message',
      'reasoning',
      'function_call',
      'function_call_output',
      'reasoning',
      'message',
      'message',
    ]);
    expect(third[asked + 1]).toEqual(stored.rows[0].reasoning[0].item);
    expect(third[asked + 4]).toEqual(stored.rows[1].reasoning[0].item);
    expect(third[asked + 5]).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'output_text', text: 'Refunded ord_1001.' }],
    });
    h.expectOnlyValidModelRequests();

    // The transcript people read holds no reasoning items.
    const transcript = await h.client.transcript(id);
    expect(JSON.stringify(transcript)).not.toContain('encrypted_content');
  });
  it('unstreamed, rejects parallel calls with a reasoning item and asks a typed output as text.format', async () => {
    const id = h.newConversationId('responses-reject');
    h.model.enqueue(
      {
        reasoningContent: 'Two refunds on one order look like a duplicate.',
        toolCalls: [refund('call_y1', 'ord_2001', 20_000), refund('call_y2', 'ord_2001', 15_000)],
      },
      { content: '{"refunded":false,"reason":"over budget"}' },
    );
    const marker = 'Refund ord_2001 twice, typed';
    const schema = {
      type: 'object',
      properties: { refunded: { type: 'boolean' }, reason: { type: 'string' } },
      required: ['refunded', 'reason'],
      additionalProperties: false,
    };
    const messageId = await h.client.sendMessage(id, marker, {
      input: { model: { api: 'responses', stream: false }, output: { schema, name: 'refund_result' } },
    });
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(2);
    await h.client.decide(id, { decision: 'reject', reason: 'over budget', decidedBy: 'ops' });
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn).toMatchObject({ outcome: 'answered', output: { refunded: false, reason: 'over budget' } });

    const [first, second] = responsesRequestsFor(marker);
    expect(first.stream).not.toBe(true);
    expect(first).toMatchObject({
      store: false,
      text: { format: { type: 'json_schema', name: 'refund_result', schema, strict: true } },
    });
    const input = second.input as (Item & { output?: string })[];
    const asked = input.findIndex((i) => i.role === 'user');
    expect(input.slice(asked).map((i) => [i.type ?? 'message', i.call_id])).toEqual([
      ['message', undefined],
      ['reasoning', undefined],
      ['function_call', 'call_y1'],
      ['function_call', 'call_y2'],
      ['function_call_output', 'call_y1'],
      ['function_call_output', 'call_y2'],
    ]);
    for (const out of input.slice(asked + 4)) expect(JSON.parse(out.output!)).toMatchObject({ kind: 'rejected' });
    h.expectOnlyValidModelRequests();
  });
  it('keeps the reasoning items across a continue-as-new: the next run sends them back intact', async () => {
    const id = h.newConversationId('responses-can');
    h.model.enqueue(
      {
        reasoningContent: 'Look the customer up first.',
        toolCalls: [{ id: 'call_z1', name: 'find_customer', arguments: { query: 'Ada' } }],
      },
      { reasoningContent: 'Found her.', content: 'Ada is cus_1001.' },
    );
    const marker = 'Who is Ada, across runs?';
    const { turn } = await h.client.ask(id, marker, {
      input: { model: { api: 'responses' }, continueAsNewAfterEvents: 10 },
    });
    expect(turn.outcome).toBe('answered');
    await expect.poll(async () => (await h.client.state(id)).runs, { timeout: 20_000 }).toBeGreaterThan(1);

    h.model.enqueue({ content: 'Still Ada.' });
    const next = await h.client.ask(id, 'and now?');
    expect(next.answer).toBe('Still Ada.');
    const [first, second, third] = responsesRequestsFor(marker);
    const issued = (body: Record<string, unknown>) =>
      h.model.requests.find((r) => r.body === body)?.reply as { reasoningContent?: string } | undefined;
    expect(issued(first)?.reasoningContent).toBe('Look the customer up first.');
    expect(issued(second)?.reasoningContent).toBe('Found her.');
    const sentBack = (third.input as Item[]).filter((i) => i.type === 'reasoning');
    const before = (second.input as Item[]).filter((i) => i.type === 'reasoning');
    expect(sentBack).toHaveLength(2);
    expect(sentBack[0]).toEqual(before[0]);
    h.expectOnlyValidModelRequests();
  });
});
