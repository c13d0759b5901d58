import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { conversationActivityType, type ConversationActivityName } from '../../src/contract/activities';
import { exportHistoryFixture } from '../support/fixture-export';
import { startHarness, type Harness } from '../support/harness';
import { runWorkerOn } from '../support/upgrade';

// A step is one model call and its tool calls: the workflow defers its
// transcript writes to the next model call, which writes them before it reads
// the transcript, and writes what is left before anyone may read it (a turn's
// end, a wait for a person).

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(() => h?.stop());

/** How many activities of each kind the conversation's history scheduled, and how many workflow tasks it completed. */
async function scheduled(
  id: string,
): Promise<{ activities: Partial<Record<ConversationActivityName, number>>; workflowTasks: number }> {
  const history = await h.temporal.workflow.getHandle(id).fetchHistory();
  const activities: Partial<Record<ConversationActivityName, number>> = {};
  let workflowTasks = 0;
  for (const event of history.events ?? []) {
    if (event.workflowTaskCompletedEventAttributes) workflowTasks++;
    const type = event.activityTaskScheduledEventAttributes?.activityType?.name;
    const name = (['appendMessages', 'callModel', 'runTool', 'recordDecision'] as const).find(
      (n) => type === conversationActivityType(n),
    );
    if (name) activities[name] = (activities[name] ?? 0) + 1;
  }
  return { activities, workflowTasks };
}

const roles = async (id: string) => (await h.client.transcript(id)).map((m) => m.message.role);

describe('deferred transcript writes', () => {
  it('a turn of two tool steps takes three model calls, two tool calls and no transcript write of its own, and stores every message', async () => {
    const worker = await runWorkerOn(h, { codePath: inject('workflowBundlePath') });
    try {
      const id = h.newConversationId('steps');
      h.model.enqueue(
        { toolCalls: [{ id: 'call_1', name: 'find_customer', arguments: { query: 'Ada' } }] },
        { toolCalls: [{ id: 'call_2', name: 'list_orders', arguments: { customer_id: 'cus_ada' } }] },
        { content: 'Ada has two orders.' },
      );
      const { turn, answer } = await h.client.ask(id, 'What did Ada order?');
      expect(turn.outcome).toBe('answered');
      expect(answer).toBe('Ada has two orders.');
      expect(await roles(id)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
      const { activities } = await scheduled(id);
      // The last model call wrote its final answer itself: the turn's end had nothing left to write.
      expect(activities).toEqual({ callModel: 3, runTool: 2 });
      // Each model call read a transcript holding everything before it.
      expect((h.requestsFor('What did Ada order?').at(-1)?.messages as { role: string }[]).map((m) => m.role)).toEqual([
        'user',
        'assistant',
        'tool',
        'assistant',
        'tool',
      ]);
      await exportHistoryFixture(h.temporal, id, 'deferred-transcript-writes');
    } finally {
      await worker.stop();
    }
    h.expectOnlyValidModelRequests();
  });

  it('while a call waits for a person, the transcript already holds the message that asked for it', async () => {
    const worker = await runWorkerOn(h, { codePath: inject('workflowBundlePath') });
    try {
      const id = h.newConversationId('waiting');
      h.model.enqueue(
        {
          toolCalls: [
            {
              id: 'call_big',
              name: 'issue_refund',
              arguments: { order_id: 'ord_2001', amount_cents: 20_000, reason: 'broken' },
            },
          ],
        },
        { content: 'Refunded 200.00.' },
      );
      const messageId = await h.client.sendMessage(id, 'Refund 200 on ord_2001');
      await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
      const waiting = await h.client.transcript(id);
      expect(waiting.map((m) => m.message.role)).toEqual(['user', 'assistant']);
      expect(waiting[1].message).toMatchObject({ tool_calls: [{ id: 'call_big' }] });
      await h.client.decide(id, { decision: 'approve', decidedBy: 'ops' });
      expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
      expect(await roles(id)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    } finally {
      await worker.stop();
    }
    h.expectOnlyValidModelRequests();
  });

  it('messages deferred to a model call the provider refuses are written when the turn fails', async () => {
    const worker = await runWorkerOn(h, { codePath: inject('workflowBundlePath') });
    try {
      const id = h.newConversationId('refused');
      h.model.enqueue(
        { toolCalls: [{ id: 'call_1', name: 'find_customer', arguments: { query: 'Grace' } }] },
        { kind: 'http_error', status: 400 },
      );
      const { turn } = await h.client.ask(id, 'Who is Grace?');
      expect(turn.outcome).toBe('failed');
      // The second call carried the first step's messages; it was refused before it wrote them, or
      // after: either way the turn's end wrote them.
      expect(await roles(id)).toEqual(['user', 'assistant', 'tool']);
      const { activities } = await scheduled(id);
      expect(activities).toMatchObject({ callModel: 2, runTool: 1, appendMessages: 1 });
    } finally {
      await worker.stop();
    }
  });
});
