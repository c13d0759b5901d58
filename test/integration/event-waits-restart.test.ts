import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventSignal } from '../../src/contract/workflow';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

// A call waiting for an event across a SIGKILL of its worker, in a run that began by continuing as new: the event
// sent while no worker runs is delivered to the next worker, and the call gets it once. The worker processes load the
// event tools through AGENT_TOOLS_MODULE, as `npm start` would.

const TOOLS = path.join(__dirname, '..', 'support', 'event-tools.ts');

let h: Harness;
const workers: WorkerProcess[] = [];
beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(async () => {
  for (const w of workers) await w.stop('SIGKILL');
  await h?.stop();
});

const start = async (): Promise<WorkerProcess> => {
  const worker = await startWorkerProcess(h.workerEnv({ AGENT_TOOLS_MODULE: TOOLS }));
  workers.push(worker);
  return worker;
};

describe('an event wait across a worker crash and a continue-as-new', () => {
  it('gets the event sent while no worker ran, once, in a run that began by continuing as new', async () => {
    const first = await start();
    const id = h.newConversationId('event-crash');
    // A first turn, then the conversation continues as new (a tiny history limit) before the turn that waits.
    h.model.enqueue({ content: 'Noted.' });
    const m1 = await h.client.sendMessage(id, 'Hello', { input: { continueAsNewAfterEvents: 10 } });
    expect((await h.client.waitForTurn(id, m1)).outcome).toBe('answered');
    await expect.poll(async () => (await h.client.state(id)).runs, { timeout: 30_000 }).toBe(2);

    h.model.enqueue(
      { toolCalls: [{ id: 'call_p', name: 'await_payment_settled', arguments: { order_id: 'ord_crash' } }] },
      { content: 'Settled after the crash.' },
    );
    const m2 = await h.client.sendMessage(id, 'Wait for the payment of ord_crash');
    await expect
      .poll(
        async () =>
          (await h.pool.query('SELECT 1 FROM durable_agent.event_waits WHERE conversation_id = $1', [id])).rowCount,
        { timeout: 30_000 },
      )
      .toBe(1);
    const { runId } = await h.temporal.workflow.getHandle(id).describe();
    expect((await h.client.state(id)).runs).toBe(2);
    await first.stop('SIGKILL');

    // Sent while no worker runs: Temporal keeps the signal for the next one.
    const eventId = randomUUID();
    await h.temporal.workflow.getHandle(id).signal(eventSignal, {
      eventId,
      name: 'payment.settled',
      key: 'ord_crash',
      payload: { settled: true },
      sentAt: new Date().toISOString(),
    });
    await start();
    expect((await h.client.waitForTurn(id, m2)).outcome).toBe('answered');
    const results = (await h.client.transcript(id)).flatMap((m) =>
      m.message.role === 'tool' ? [JSON.parse(m.message.content)] : [],
    );
    expect(results).toEqual([
      expect.objectContaining({ kind: 'event', eventId, key: 'ord_crash', payload: { settled: true } }),
    ]);
    // The run that waited: one registration of the wait, the event's signal, one result.
    const history = await h.temporal.workflow.getHandle(id, runId).fetchHistory();
    expect(
      (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'event'),
    ).toHaveLength(1);
    const registered = (history.events ?? []).filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'durableAgent.registerEventWait',
    );
    expect(registered).toHaveLength(1);
    h.expectOnlyValidModelRequests();
  });
});
