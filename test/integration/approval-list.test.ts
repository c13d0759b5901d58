import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';

// The list of calls waiting for a person lives in PostgreSQL
// (`pending_approvals`): a row is written with the message that asked for
// the call, and leaves when the call's decision is recorded or a tool message
// answers it, whichever way the call settles. Readers keep the conversations
// Temporal says are running.

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const refund = (id: string, cents: number) => ({
  id,
  name: 'issue_refund',
  arguments: { order_id: 'ord_2001', amount_cents: cents, reason: 'listed' },
});

/** The rows of the list a conversation has in PostgreSQL, whatever became of the conversation. */
const rowsOf = async (conversationId: string): Promise<string[]> =>
  (
    await h.pool.query<{ call_key: string }>(
      'SELECT call_key FROM durable_agent.pending_approvals WHERE conversation_id = $1',
      [conversationId],
    )
  ).rows.map((r) => r.call_key);

/**
 * Starts a conversation whose model asks for one refund that waits; resolves
 * once the call is listed. The scripted model answers conversations in the
 * order they call it, so each test enqueues a turn's next answer just before
 * what makes the turn call the model again.
 */
async function waitingConversation(
  prefix: string,
  options: { sentBy?: string; approvalTimeoutMs?: number } = {},
): Promise<{ id: string; messageId: string }> {
  const id = h.newConversationId(prefix);
  h.model.enqueue({ toolCalls: [refund(`call_${prefix}`, 11_000)] });
  const messageId = await h.client.sendMessage(id, `Refund for ${prefix}`, {
    ...(options.sentBy ? { sentBy: options.sentBy } : {}),
    ...(options.approvalTimeoutMs ? { input: { approvalTimeoutMs: options.approvalTimeoutMs } } : {}),
  });
  await expect
    .poll(async () => (await h.client.waitingCalls({ conversationId: id })).calls.length, { timeout: 30_000 })
    .toBe(1);
  return { id, messageId };
}

describe('the list of calls waiting for a person', () => {
  it('a call leaves it however it settles: rejected, timed out, its turn cancelled, interrupted by a new message, or the conversation cancelled', async () => {
    const rejected = await waitingConversation('rejected');
    h.model.enqueue({ content: 'Not refunded.' });
    await h.client.decide(rejected.id, { decision: 'reject', reason: 'no', decidedBy: 'ops' });
    expect((await h.client.waitForTurn(rejected.id, rejected.messageId)).outcome).toBe('answered');

    const timedOut = await waitingConversation('timed-out', { approvalTimeoutMs: 3_000 });
    h.model.enqueue({ content: 'Nobody decided.' });
    expect((await h.client.waitForTurn(timedOut.id, timedOut.messageId)).outcome).toBe('answered');

    const cancelled = await waitingConversation('cancelled');
    await h.client.cancelTurn(cancelled.id, 'changed my mind');
    expect((await h.client.waitForTurn(cancelled.id, cancelled.messageId)).outcome).toBe('cancelled');

    const interrupted = await waitingConversation('interrupted');
    h.model.enqueue({ content: 'Answering the new message instead.' });
    const next = await h.client.sendMessage(interrupted.id, 'Forget it, tell me the time');
    expect((await h.client.waitForTurn(interrupted.id, next)).outcome).toBe('answered');

    const conversationCancelled = await waitingConversation('wf-cancelled');
    await h.temporal.workflow.getHandle(conversationCancelled.id).cancel();
    await expect
      .poll(async () => (await h.temporal.workflow.getHandle(conversationCancelled.id).describe()).status.name, {
        timeout: 30_000,
      })
      .toBe('CANCELLED');

    for (const { id } of [rejected, timedOut, cancelled, interrupted, conversationCancelled]) {
      expect(await rowsOf(id), id).toEqual([]);
      expect((await h.client.waitingCalls({ conversationId: id })).calls).toEqual([]);
    }
  });

  it('a call decided leaves at once, while another call of the same message still waits', async () => {
    const id = h.newConversationId('two-calls');
    h.model.enqueue({ toolCalls: [refund('call_one', 11_000), refund('call_two', 12_000)] });
    const messageId = await h.client.sendMessage(id, 'Two refunds please');
    await expect
      .poll(async () => (await h.client.waitingCalls({ conversationId: id })).calls.length, { timeout: 30_000 })
      .toBe(2);
    await h.client.decide(id, { decision: 'reject', toolCallId: 'call_one', decidedBy: 'ops' });
    // No tool message is stored before the batch ends: the decision's record took the row away.
    expect((await h.client.waitingCalls({ conversationId: id })).calls.map((p) => p.toolCallId)).toEqual(['call_two']);
    expect(await rowsOf(id)).toEqual([`${id}/msg-1/call-1`]);
    expect((await h.client.transcript(id)).filter((m) => m.message.role === 'tool')).toEqual([]);
    h.model.enqueue({ content: 'Neither refunded.' });
    await h.client.decide(id, { decision: 'reject', toolCallId: 'call_two', decidedBy: 'ops' });
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    expect(await rowsOf(id)).toEqual([]);
  });

  it('a conversation terminated while a call waits is not listed, though its row stays', async () => {
    const { id } = await waitingConversation('terminated');
    await h.temporal.workflow.getHandle(id).terminate('operator ended it');
    expect(await rowsOf(id)).toHaveLength(1);
    expect((await h.client.waitingCalls({ conversationId: id })).calls).toEqual([]);
    expect((await h.client.waitingCalls()).calls.map((c) => c.rootConversationId)).not.toContain(id);
  });

  it('narrows by tool, requester, age and conversation, oldest first', async () => {
    const older = await waitingConversation('older', { sentBy: 'ann@example.com' });
    const newer = await waitingConversation('newer', { sentBy: 'bea@example.com' });
    const ids = (list: { conversationId: string }[]) =>
      list.map((c) => c.conversationId).filter((id) => id === older.id || id === newer.id);

    expect(ids((await h.client.waitingCalls()).calls)).toEqual([older.id, newer.id]);
    expect(ids((await h.client.waitingCalls({ requester: 'bea@example.com' })).calls)).toEqual([newer.id]);
    expect(ids((await h.client.waitingCalls({ tool: 'issue_refund' })).calls)).toEqual([older.id, newer.id]);
    expect(ids((await h.client.waitingCalls({ tool: 'find_customer' })).calls)).toEqual([]);
    expect(ids((await h.client.waitingCalls({ minAgeMs: 60 * 60_000 })).calls)).toEqual([]);
    expect(ids((await h.client.waitingCalls({ conversationId: newer.id })).calls)).toEqual([newer.id]);
    const [listed] = (await h.client.waitingCalls({ conversationId: older.id })).calls;
    expect(listed).toMatchObject({
      toolName: 'issue_refund',
      arguments: { order_id: 'ord_2001', amount_cents: 11_000 },
      requestedBy: ['ann@example.com'],
    });
    expect(listed.callKey).toBe(`${older.id}/msg-1/call-0`);

    for (const { id, messageId } of [older, newer]) {
      h.model.enqueue({ content: 'Not refunded.' });
      await h.client.decide(id, { decision: 'reject', decidedBy: 'ops' });
      expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    }
    h.expectOnlyValidModelRequests();
  });
});
