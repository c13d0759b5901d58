import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentClient } from '../../src/client/client';
import { conversationActivityType } from '../../src/contract/activities';
import { describeInvalidInput } from '../../src/contract';
import { backofficeTools } from '../../src/demo/tools';
import { tool } from '../../src/tools/tool';
import { exportHistoryFixture } from '../support/fixture-export';
import { startHarness, type Harness } from '../support/harness';

// A conversation may run its model calls and its idempotent tools' calls as
// local activities (`localActivities`): fewer round trips per step, with the
// same transcript, the same approvals and the same once-only effects; tools
// that are not idempotent stay ordinary activities.

/** A tool that is not idempotent: it counts its runs, so the test sees it ran once. */
let noteRuns = 0;
const noteTool = tool({
  name: 'add_note',
  description: 'Adds a note to the customer file.',
  parameters: z.object({ text: z.string() }),
  idempotent: false,
  execute: ({ text }) => {
    noteRuns++;
    return { noted: text };
  },
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ tools: [...backofficeTools(), noteTool] });
});
afterAll(() => h?.stop());

const LOCAL = { localActivities: { modelCalls: true, idempotentTools: true } } as const;

/** Activity types the conversation's history scheduled, and how many local activities it recorded. */
async function shape(id: string): Promise<{ scheduled: string[]; localActivities: number }> {
  const history = await h.temporal.workflow.getHandle(id).fetchHistory();
  const scheduled: string[] = [];
  let localActivities = 0;
  for (const event of history.events ?? []) {
    const type = event.activityTaskScheduledEventAttributes?.activityType?.name;
    if (type) scheduled.push(type.replace(/^durableAgent\./, ''));
    if (event.markerRecordedEventAttributes?.markerName === 'core_local_activity') localActivities++;
  }
  return { scheduled, localActivities };
}

const refundedCents = async (orderId: string): Promise<number> =>
  (await h.pool.query('SELECT refunded_cents FROM orders WHERE id = $1', [orderId])).rows[0].refunded_cents;

describe('local activities', () => {
  it('runs model calls and idempotent tools locally, a tool that is not idempotent as an activity; the refund waits for approval and applies once', async () => {
    const id = h.newConversationId('local');
    const before = await refundedCents('ord_1001');
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_find', name: 'find_customer', arguments: { query: 'Ada' } },
          { id: 'call_note', name: 'add_note', arguments: { text: 'asked for a refund' } },
        ],
      },
      {
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 12_000, reason: 'broken' },
          },
        ],
      },
      { content: 'Refunded.' },
    );
    const messageId = await h.client.sendMessage(id, 'Refund Ada her order', { input: LOCAL });
    await expect
      .poll(async () => (await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId), { timeout: 20_000 })
      .toEqual(['call_refund']);
    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_refund', decidedBy: 'ops' });
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn).toMatchObject({ outcome: 'answered', steps: 3 });
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(noteRuns).toBe(1);
    expect(await refundedCents('ord_1001')).toBe(before + 12_000);

    const { scheduled, localActivities } = await shape(id);
    // add_note is not idempotent: an ordinary activity. Three model calls, find_customer and the refund: local.
    expect(scheduled.filter((t) => t === 'callModel' || t === 'runTool')).toEqual(['runTool']);
    expect(localActivities).toBe(5);
    await exportHistoryFixture(h.temporal, id, 'local-activities');
    h.expectOnlyValidModelRequests();
  });

  it('with idempotentTools alone, model calls stay ordinary activities and only the idempotent tool runs locally', async () => {
    const id = h.newConversationId('local-tools');
    const runsBefore = noteRuns;
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_find', name: 'find_customer', arguments: { query: 'Ada' } },
          { id: 'call_note', name: 'add_note', arguments: { text: 'looked her up' } },
        ],
      },
      { content: 'Found Ada.' },
    );
    const messageId = await h.client.sendMessage(id, 'Find Ada', {
      input: { localActivities: { idempotentTools: true } },
    });
    expect(await h.client.waitForTurn(id, messageId)).toMatchObject({ outcome: 'answered', steps: 2 });
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'tool',
      'assistant',
    ]);
    expect(noteRuns).toBe(runsBefore + 1);
    const { scheduled, localActivities } = await shape(id);
    // Both model calls and add_note (not idempotent) are ordinary activities; find_customer is the one local call.
    expect(scheduled.filter((t) => t === 'callModel' || t === 'runTool')).toEqual([
      'callModel',
      'runTool',
      'callModel',
    ]);
    expect(localActivities).toBe(1);
    await exportHistoryFixture(h.temporal, id, 'local-tool-calls');
    h.expectOnlyValidModelRequests();
  });

  it('a cancel sent while a long local model call runs reaches the turn at the workflow task heartbeat and cancels the call; the transcript stays valid', async () => {
    const id = h.newConversationId('local-cancel');
    // Longer than the workflow task heartbeat (80% of the 5 s workflow task timeout), so the call still runs when the
    // cancel gets in.
    h.model.setResponder((request) => {
      const users = (request.body as { messages: { role: string; content: unknown }[] }).messages.filter(
        (m) => m.role === 'user',
      );
      return users[users.length - 1]?.content === 'Take your time'
        ? { kind: 'delay', ms: 30_000, then: { content: 'Too late.' } }
        : { content: 'Next answer.' };
    });
    try {
      const messageId = await h.client.sendMessage(id, 'Take your time', { input: LOCAL });
      await expect.poll(() => h.requestsFor('Take your time').length, { timeout: 20_000 }).toBeGreaterThan(0);
      const cancelledAt = Date.now();
      await h.client.cancelTurn(id);
      const turn = await h.client.waitForTurn(id, messageId);
      console.log(
        `local model call: the cancel took effect after ${Date.now() - cancelledAt} ms (the call would have taken 30000 ms); ` +
          `model requests for the cancelled turn: ${h.requestsFor('Take your time').length}`,
      );
      expect(turn).toMatchObject({ outcome: 'cancelled', steps: 0 });
      // The aborted call is reported as cancelled, so it is not tried again.
      expect(h.requestsFor('Take your time')).toHaveLength(1);
      await exportHistoryFixture(h.temporal, id, 'local-activities-cancel');
      expect((await h.client.ask(id, 'And now?')).answer).toBe('Next answer.');
    } finally {
      h.model.setResponder(undefined);
    }
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual(['user', 'user', 'assistant']);
    h.expectOnlyValidModelRequests();
  });

  it('a client with a 3 s workflow task timeout starts conversations with it: a running local model call renews its task every 2.4 s, and a cancel gets in at a renewal', async () => {
    const client = AgentClient.fromClient(h.temporal, {
      taskQueue: h.taskQueue,
      databaseUrl: h.databaseUrl,
      workflowTaskTimeoutMs: 3_000,
    });
    const id = h.newConversationId('local-short-task');
    h.model.setResponder((request) => {
      const users = (request.body as { messages: { role: string; content: unknown }[] }).messages.filter(
        (m) => m.role === 'user',
      );
      return users[users.length - 1]?.content === 'Think it over'
        ? { kind: 'delay', ms: 30_000, then: { content: 'Too late.' } }
        : { content: 'Next answer.' };
    });
    try {
      const messageId = await client.sendMessage(id, 'Think it over', { input: LOCAL });
      await expect.poll(() => h.requestsFor('Think it over').length, { timeout: 20_000 }).toBeGreaterThan(0);
      // Long enough for a renewal before the cancel (renewals come at 80% of the 3 s timeout).
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const cancelledAt = Date.now();
      await client.cancelTurn(id);
      const turn = await client.waitForTurn(id, messageId);
      console.log(`local model call, 3 s task timeout: the cancel took effect after ${Date.now() - cancelledAt} ms`);
      expect(turn).toMatchObject({ outcome: 'cancelled', steps: 0 });
      expect(h.requestsFor('Think it over')).toHaveLength(1);
    } finally {
      h.model.setResponder(undefined);
    }
    const handle = h.temporal.workflow.getHandle(id);
    const events = (await handle.fetchHistory()).events ?? [];
    expect(events[0].workflowExecutionStartedEventAttributes?.workflowTaskTimeout?.seconds?.toString()).toBe('3');
    // The task that started the call completed while the call still ran (a renewal), and no task timed out.
    const cancelSignal = events.findIndex(
      (e, n) => n > 1 && e.workflowExecutionSignaledEventAttributes?.signalName !== undefined,
    );
    const completedBefore = events.slice(0, cancelSignal).filter((e) => e.workflowTaskCompletedEventAttributes).length;
    expect(completedBefore).toBeGreaterThanOrEqual(1);
    expect(events.filter((e) => e.workflowTaskTimedOutEventAttributes)).toEqual([]);
    // No local call ended before the cancel (the only marker then is a patch's: core_patch).
    const localCallMarkers = events
      .slice(0, cancelSignal)
      .filter((e) => e.markerRecordedEventAttributes && e.markerRecordedEventAttributes.markerName !== 'core_patch');
    expect(localCallMarkers).toEqual([]);
    h.expectOnlyValidModelRequests();
  });

  it('refuses a workflow task timeout outside 1 to 120 s before it connects', async () => {
    for (const bad of [999, 120_001, 1_500.5]) {
      expect(() => AgentClient.fromClient(h.temporal, { workflowTaskTimeoutMs: bad })).toThrow(
        `AgentClient: workflowTaskTimeoutMs must be a whole number of milliseconds from 1000 to 120000, got ${bad}.`,
      );
    }
    await expect(AgentClient.connect({ temporalAddress: '127.0.0.1:1', workflowTaskTimeoutMs: 0 })).rejects.toThrow(
      'got 0.',
    );
  });

  it('refuses a malformed choice before anything starts', () => {
    expect(describeInvalidInput({ localActivities: { modelCalls: 'yes' } })).toEqual([
      'localActivities.modelCalls must be true or false, got "yes"',
    ]);
    expect(describeInvalidInput({ localActivities: { tools: true } })).toEqual([
      'localActivities.tools is not an option (known: modelCalls, idempotentTools)',
    ]);
    expect(describeInvalidInput({ localActivities: true })).toEqual([
      'localActivities must be an object such as {"modelCalls": true, "idempotentTools": true}',
    ]);
    expect(conversationActivityType('callModel')).toBe('durableAgent.callModel');
  });
});
