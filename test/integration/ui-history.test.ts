import { readUIMessageStream, validateUIMessages, DefaultChatTransport, type UIMessage } from 'ai';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { agent } from '../../src/tools/agents';
import { backofficeTools } from '../../src/demo/tools';
import { apiCaller, TEST_TOKENS, token } from '../support/api';
import { startHarness, type Harness } from '../support/harness';

// A conversation's history as the AI SDK's UIMessage[]
// (GET /v1/conversations/{id}/ui-messages) on the real stack: tool calls,
// approvals (one approved, one rejected), an agent called as a tool, a
// handoff and a typed output, validated by ai 7's validateUIMessages; the
// answers carry the ids their live stream gives them.

const tools = backofficeTools();
const checker = agent({ name: 'checker', instructions: 'CHECKER: check orders.', tools: ['list_orders'] });
const writer = agent({
  name: 'writer',
  instructions: 'WRITER: say what was done.',
  outputType: z.object({ note: z.string() }),
});
const desk = agent({
  name: 'desk',
  instructions: 'DESK: refunds.',
  tools: ['list_orders', 'issue_refund', checker.asTool({ toolName: 'ask_checker' })],
  handoffs: ['writer'],
});

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  h = await startHarness({ textDeltaChars: 2, tools, agents: [desk, checker, writer], defaultAgent: 'desk' });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

const call = apiCaller(() => api.url);
const history = async (id: string, secret = token('a')): Promise<UIMessage[]> => {
  const { status, json } = await call('GET', `/v1/conversations/${id}/ui-messages`, secret);
  expect(status).toBe(200);
  return (json as { messages: UIMessage[] }).messages;
};
type Tool = { type: string; toolName: string; state: string; approval?: unknown; output?: unknown; errorText?: string };
const toolsOf = (m: UIMessage) => m.parts.filter((p) => p.type === 'dynamic-tool') as unknown as Tool[];

describe('the history as UIMessage[]', () => {
  it('tools, an approval and a rejection, a child agent, a handoff and a typed output: ai 7 validates it, and the answer has its stream’s id', async () => {
    const id = h.newConversationId('ui-history');
    h.model.enqueue(
      {
        content: 'Looking at the orders.',
        toolCalls: [
          { id: 'call_list', name: 'list_orders', arguments: { customer_id: 'cus_alan' } },
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 15_000, reason: 'late' },
          },
          {
            id: 'call_refund_2',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 12_000, reason: 'late' },
          },
        ],
      },
      { toolCalls: [{ id: 'call_check', name: 'ask_checker', arguments: { input: 'check ord_2001' } }] },
      { content: 'ord_2001 is refunded.' }, // the checker's answer
      { toolCalls: [{ id: 'call_to_writer', name: 'transfer_to_writer', arguments: {} }] },
      { content: '{"note":"Refunded 150.00 on ord_2001; ord_1001 was not refunded."}' },
    );
    await h.client.sendMessage(id, 'Refund ord_2001 and ord_1001', { messageId: 'm1' });
    await vi.waitFor(async () => expect((await h.client.state(id)).pendingApprovals).toHaveLength(2), {
      timeout: 20_000,
    });

    // While the calls wait: the answer so far, the call that needs no decision run, each other asking for its decision.
    const waiting = await vi.waitFor(
      async () => {
        const now = await history(id);
        expect(now.map((m) => [m.id, m.role])).toEqual([
          ['user-0', 'user'],
          ['turn-0', 'assistant'],
        ]);
        expect(toolsOf(now[1]).map((t) => t.state)).toEqual([
          'output-available',
          'approval-requested',
          'approval-requested',
        ]);
        return now;
      },
      { timeout: 20_000 },
    );
    expect(waiting[1].metadata).toMatchObject({ outcome: 'awaiting_approval' });
    await validateUIMessages({ messages: waiting });

    const [first, second] = (await h.client.state(id)).pendingApprovals;
    await h.client.decide(id, { decision: 'approve', callKey: first.callKey, decidedBy: 'bob' });
    await h.client.decide(id, { decision: 'reject', callKey: second.callKey, reason: 'not ours', decidedBy: 'bob' });
    const turn = await h.client.waitForTurn(id, 'm1');
    expect(turn).toMatchObject({ outcome: 'answered', output: { note: expect.any(String) } });

    const messages = await history(id);
    expect(await validateUIMessages({ messages })).toEqual(messages); // nothing dropped or changed
    expect(messages.map((m) => [m.id, m.role])).toEqual([
      ['user-0', 'user'],
      ['turn-0', 'assistant'],
    ]);
    expect(messages[0].parts).toEqual([{ type: 'text', text: 'Refund ord_2001 and ord_1001', state: 'done' }]);
    const answer = messages[1];
    expect(toolsOf(answer).map((t) => [t.toolName, t.state, t.approval])).toEqual([
      ['list_orders', 'output-available', undefined],
      ['issue_refund', 'output-available', { id: first.callKey, approved: true }],
      ['issue_refund', 'output-denied', { id: second.callKey, approved: false, reason: 'not ours' }],
      ['ask_checker', 'output-available', undefined],
      ['transfer_to_writer', 'output-available', undefined],
    ]);
    expect(toolsOf(answer)[3].output).toContain('ord_2001 is refunded.'); // the child agent's answer
    const texts = answer.parts.flatMap((p) => (p.type === 'text' ? [p.text] : []));
    expect(texts).toEqual([
      'Looking at the orders.',
      '{"note":"Refunded 150.00 on ord_2001; ord_1001 was not refunded."}',
    ]);
    expect(answer.parts.filter((p) => p.type === 'step-start')).toHaveLength(4);
    expect(answer.metadata).toMatchObject({
      outcome: 'answered',
      output: { note: 'Refunded 150.00 on ord_2001; ord_1001 was not refunded.' },
    });

    // A reconnect just after the end replays the turn under the id the history gave it.
    const transport = new DefaultChatTransport<UIMessage>({
      api: `${api.url}/v1/chat`,
      headers: { authorization: `Bearer ${token('a')}` },
    });
    const stream = await transport.reconnectToStream({ chatId: id });
    let replayed: UIMessage | undefined;
    for await (const m of readUIMessageStream<UIMessage>({ stream: stream! })) replayed = m;
    expect(replayed?.id).toBe(answer.id);
    expect(replayed?.parts.filter((p) => p.type === 'text')).toEqual(answer.parts.filter((p) => p.type === 'text'));

    // The same for an operator and an approver; a second turn adds its user message and answer after.
    expect(await history(id, token('c'))).toEqual(messages);
    expect(await history(id, token('b'))).toEqual(messages);
    h.model.enqueue({ content: '{"note":"Nothing else to do."}' });
    await h.client.ask(id, 'Anything else?');
    const seq = (await h.client.transcript(id)).find((m) => m.message.role === 'user' && m.seq > 0)!.seq;
    expect((await history(id)).map((m) => m.id)).toEqual(['user-0', 'turn-0', `user-${seq}`, `turn-${seq}`]);
    h.expectOnlyValidModelRequests();
  });

  it('an unknown conversation has no messages; without a token the answer is 401', async () => {
    expect(await history(h.newConversationId('ui-history-none'))).toEqual([]);
    expect((await call('GET', `/v1/conversations/x/ui-messages`)).status).toBe(401);
    expect((await call('POST', `/v1/conversations/x/ui-messages`, token('a'), {})).status).toBe(405);
  });
});
