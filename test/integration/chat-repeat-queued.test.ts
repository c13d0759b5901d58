import { DefaultChatTransport, type UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { decisionSignal } from '../../src/contract/workflow';
import { TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { startHarness, type Harness } from '../support/harness';
import { readUiStreamBody } from '../support/stream-bodies';
import { streamedMessage } from '../support/ui-messages';

// An approval the chat sent as a queued decision (the worker did not answer
// in time: here every decision is queued, workerWaitMs 1) and that comes
// back in a later request, as the AI SDK's automatic send does while the
// call shows no outcome, before the decision is recorded (the worker's
// database is cut): it is not signalled again, nothing is refused, the
// stream has no error and ends with the answer once the call ran.

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  h = await startHarness({ textDeltaChars: 2, databaseProxy: true, decisionTrust: { keys: [TEST_DECISION_KEY] } });
  api = await startApiServer({
    client: h.client,
    tokens: TEST_TOKENS,
    decisions: { signingKey: TEST_DECISION_KEY, workerWaitMs: 1 },
    chat: { holdForDecisionMs: 0 },
  });
});
afterAll(async () => {
  await h?.databaseProxy?.restore().catch(() => undefined);
  await api?.stop();
  await h?.stop();
});

/** A POST of the chat route as DefaultChatTransport sends it; the response's text once it ends. */
const post = async (who: string, chatId: string, messages: UIMessage[], signal?: AbortSignal) => {
  const response = await fetch(`${api.url}/v1/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${who}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id: chatId, messages: messages.slice(-1), trigger: 'submit-message' }),
    signal,
  });
  expect(response.status).toBe(200);
  return response.text();
};
const decisionSignals = async (id: string) =>
  ((await h.temporal.workflow.getHandle(id).fetchHistory()).events ?? []).filter(
    (e) => e.workflowExecutionSignaledEventAttributes?.signalName === decisionSignal.name,
  ).length;

describe('a queued approval sent again', () => {
  it('is not signalled again: one decision, none refused, no error in the stream', async () => {
    const id = h.newConversationId('chat-queued-again');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 11_000, reason: 'late' },
          },
        ],
      },
      { content: 'Refunded 110.00 on ord_1001.' },
    );
    const user: UIMessage = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Refund 110.00 on ord_1001' }] };
    const transport = new DefaultChatTransport<UIMessage>({
      api: `${api.url}/v1/chat`,
      headers: { authorization: `Bearer ${token('a')}` },
      prepareSendMessagesRequest: ({ id: chatId, messages }) => ({
        body: { id: chatId, messages: messages.slice(-1) },
      }),
    });
    const first = await streamedMessage(
      await transport.sendMessages({
        chatId: id,
        messages: [user],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      }),
      [user],
    );
    const approved = structuredClone(first);
    for (const p of approved.parts as { state?: string; approval?: object }[])
      if (p.state === 'approval-requested')
        Object.assign(p, { state: 'approval-responded', approval: { ...p.approval, approved: true } });

    await h.databaseProxy!.cut(); // the decision is applied, but its record (and the refund) wait for the database
    try {
      const stop = new AbortController();
      const once = post(token('b'), id, [user, approved], stop.signal).catch(() => '');
      await vi.waitFor(async () => expect((await h.client.state(id)).decisionsApplied).toBe(1), { timeout: 20_000 });
      stop.abort(); // the page went away; its automatic send comes back with the same answer
      await once;
      expect(await decisionSignals(id)).toBe(1);
      const again = post(token('b'), id, [user, approved]);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(await decisionSignals(id)).toBe(1);
      await h.databaseProxy!.restore();
      // Read as the AI SDK reads it: how the stream splits the answer into text deltas depends on timing.
      const read = await readUiStreamBody(await again);
      expect(read.errors).toEqual([]);
      expect(read.texts.join('\n')).not.toMatch(/Nothing was decided/);
      expect(read.texts).toContain('Refunded 110.00 on ord_1001.');
    } finally {
      await h.databaseProxy!.restore().catch(() => undefined);
    }
    const state = await h.client.state(id);
    expect(state.refusedDecisions).toEqual([]);
    expect(state.decisionsApplied).toBe(1);
    expect(await decisionSignals(id)).toBe(1);
    const records = await h.pool.query(
      'SELECT decided_by FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [id],
    );
    expect(records.rows).toEqual([{ decided_by: 'bob@example.com' }]);
  });
});
