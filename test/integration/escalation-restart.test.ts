import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

// An escalation step whose time comes while no worker runs: the worker holding the waiting call is SIGKILLed before
// the step is due, a new one starts after; the durable timer fires there, the step is taken and recorded once, and a
// decision then runs the call once. The policy comes from AGENT_APPROVAL_POLICY, as `npm start` reads it.

const POLICY = JSON.stringify([
  {
    name: 'refunds-remind',
    outcome: 'ask',
    tools: ['issue_refund'],
    escalation: [
      { afterMs: 4_000, remind: true },
      { afterMs: 60_000, remind: true },
    ],
  },
]);

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
  const worker = await startWorkerProcess(h.workerEnv({ AGENT_APPROVAL_POLICY: POLICY }));
  workers.push(worker);
  return worker;
};
const listedEscalation = async (id: string): Promise<number | undefined> =>
  (
    await h.pool.query(
      `SELECT (policy ->> 'escalated')::int AS escalated FROM durable_agent.pending_approvals WHERE conversation_id = $1`,
      [id],
    )
  ).rows[0]?.escalated;

describe('escalation across a worker crash', () => {
  it('a step due while no worker ran is taken by the next worker, once; the call then runs once', async () => {
    const first = await start();
    const id = h.newConversationId('escalate-crash');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_r',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 5_500, reason: 'late' },
          },
        ],
      },
      { content: 'Refunded 55.00.' },
    );
    const before = (await h.pool.query(`SELECT refunded_cents FROM orders WHERE id = 'ord_1001'`)).rows[0]
      .refunded_cents;
    const messageId = await h.client.sendMessage(id, 'Refund 55 on the Lovelace order', {
      input: { approvalTimeoutMs: 120_000 },
    });
    await expect.poll(() => listedEscalation(id)).toBe(0);
    const askedAt = Date.now();
    await first.stop('SIGKILL');
    // Past the first step's time with no worker running.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 5_000 - (Date.now() - askedAt))));
    expect(await listedEscalation(id)).toBe(0);

    await start();
    await expect.poll(() => listedEscalation(id), { timeout: 30_000 }).toBe(1);
    expect((await h.client.state(id)).pendingApprovals[0].policy).toMatchObject({
      rule: 'refunds-remind',
      escalated: 1,
      escalationSteps: 2,
    });
    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_r', decidedBy: 'ops@example.com' });
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    expect((await h.pool.query(`SELECT refunded_cents FROM orders WHERE id = 'ord_1001'`)).rows[0].refunded_cents).toBe(
      before + 5_500,
    );
    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    const recorded = (history.events ?? []).filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'durableAgent.recordEscalation',
    );
    expect(recorded).toHaveLength(1);
  });
});
