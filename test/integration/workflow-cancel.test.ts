import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentStatusAttribute } from '../../src/contract';
import { startHarness, type Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

describe('cancelling the whole workflow (UI, temporal workflow cancel)', () => {
  it('settles every pending call, stores the final transcript, and ends as cancelled with status closed', async () => {
    const id = h.newConversationId('wf-cancel');
    h.model.enqueue({
      toolCalls: [
        { id: 'call_w1', name: 'issue_refund', arguments: { order_id: 'ord_2001', amount_cents: 40_000, reason: 'x' } },
        { id: 'call_w2', name: 'find_customer', arguments: { query: 'Alan' } },
      ],
    });
    await h.client.sendMessage(id, 'Refund and find, then get cancelled');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    // find_customer has finished once its result is stored and the workflow no longer lists it as running.
    const stored = async () =>
      (
        await h.pool.query(
          'SELECT 1 FROM durable_agent.tool_results WHERE conversation_id = $1 AND tool_call_id = $2',
          [id, 'call_w2'],
        )
      ).rowCount;
    await expect.poll(stored, { timeout: 20_000 }).toBe(1);
    await expect.poll(async () => (await h.client.state(id)).runningToolCalls, { timeout: 20_000 }).toEqual([]);

    const handle = h.temporal.workflow.getHandle(id);
    await handle.cancel();
    const failure = await handle.result().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const description = await handle.describe();
    expect(description.status.name).toBe('CANCELLED');
    expect(description.typedSearchAttributes.get(AgentStatusAttribute)).toBe('closed');

    const messages = (await h.client.transcript(id)).map((m) => m.message);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
    expect(JSON.parse((messages[2] as { content: string }).content)).toMatchObject({
      kind: 'cancelled',
      started: false,
    });
    expect(JSON.parse((messages[3] as { content: string }).content).customers[0].id).toBe('cus_alan');
    h.expectOnlyValidModelRequests();
  });

  it('while idle, ends as cancelled with nothing left open', async () => {
    const id = h.newConversationId('wf-cancel-idle');
    h.model.enqueue({ content: 'Hello.' });
    await h.client.ask(id, 'Hi then cancel');
    const handle = h.temporal.workflow.getHandle(id);
    await handle.cancel();
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual(['user', 'assistant']);
  });
});
