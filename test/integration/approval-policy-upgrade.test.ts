import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecisionRefusedError } from '../../src/common/errors';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

// A policy deployed while a call waits: the waiting call keeps the rules it was planned under (none: any approver may
// decide it), and calls planned after the deploy follow the policy. The policy comes from AGENT_APPROVAL_POLICY, as
// `npm start` reads it.

const POLICY = JSON.stringify([
  { name: 'refunds-to-finance', outcome: 'ask', tools: ['issue_refund'], groups: ['finance'] },
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

const refund = (id: string, cents: number) => ({
  toolCalls: [{ id, name: 'issue_refund', arguments: { order_id: 'ord_2001', amount_cents: cents, reason: 'late' } }],
});

describe('deploying an approval policy', () => {
  it('a call waiting from before keeps its rules; a call planned after follows the policy', async () => {
    const before = await startWorkerProcess(h.workerEnv());
    workers.push(before);
    const id = h.newConversationId('policy-deploy');
    h.model.enqueue(refund('call_old', 12_000), { content: 'Refunded 120.00.' });
    const first = await h.client.sendMessage(id, 'Refund 120 on the Hopper order');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length).toBe(1);
    expect((await h.client.state(id)).pendingApprovals[0].policy).toBeUndefined();
    await before.stop('SIGTERM');

    const after = await startWorkerProcess(h.workerEnv({ AGENT_APPROVAL_POLICY: POLICY }));
    workers.push(after);
    // Planned before the policy: an unsigned decision of anyone decides it, as it did when it was asked for.
    expect(
      await h.client.decide(id, { decision: 'approve', toolCallId: 'call_old', decidedBy: 'ops@example.com' }),
    ).toMatchObject({
      applied: true,
    });
    expect((await h.client.waitForTurn(id, first)).outcome).toBe('answered');

    h.model.enqueue(refund('call_new', 13_000), { content: 'Refunded 130.00.' });
    await h.client.sendMessage(id, 'And 130 more');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length).toBe(1);
    expect((await h.client.state(id)).pendingApprovals[0].policy).toMatchObject({
      rule: 'refunds-to-finance',
      groups: ['finance'],
    });
    const refused = await h.client
      .decide(id, {
        decision: 'approve',
        toolCallId: 'call_new',
        decidedBy: 'ops@example.com',
        deciderGroups: ['finance'],
      })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DecisionRefusedError);
    expect((refused as Error).message).toContain('refunds-to-finance');
    expect((await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_new']);
  });
});
