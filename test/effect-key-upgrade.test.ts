import { Worker, type WorkflowBundle } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { exportHistoryFixture } from './support/fixture-export';
import { bundlePreviousWorkflowCode, runWorkerOn } from './support/upgrade';
import { startHarness, type Harness } from './support/harness';

// A live upgrade across the change of effect keys: a conversation starts and
// waits for approval under the workflow code of the last commit before effect
// keys per call instance, bundled from that commit's sources; then a worker
// with the current code takes over. The waiting call keeps the key it was
// given (`${conversationId}/${toolCallId}`), runs once when approved, and a
// later call that reuses the provider's id runs its own effect under a key of
// its own.

/** The last commit whose workflow keyed effects by the provider's tool-call id. */
const PRE_UPGRADE_COMMIT = '87580c63ea6ae9eb791aa3c3f1cfafd1d9a2020e';
const REUSED = 'functions.issue_refund:0';

let h: Harness;
let previousBundle: WorkflowBundle;

beforeAll(async () => {
  h = await startHarness({ worker: false });
  previousBundle = await bundlePreviousWorkflowCode(PRE_UPGRADE_COMMIT);
});
afterAll(() => h?.stop());

const refundsOf = async (id: string) =>
  (
    await h.pool.query<{ amount_cents: number; idempotency_key: string }>(
      'SELECT amount_cents, idempotency_key FROM refunds WHERE idempotency_key LIKE $1 ORDER BY id',
      [`${id}/%`],
    )
  ).rows;

describe('upgrading workers while a conversation waits for approval', () => {
  it('the waiting call keeps its old key and runs once when approved; a later call with the reused id runs its own effect', async () => {
    const id = h.newConversationId('upgrade');
    h.model.enqueue(
      { toolCalls: [{ id: REUSED, name: 'issue_refund', arguments: { order_id: 'ord_2001', amount_cents: 15_000, reason: 'approved after upgrade' } }] },
      { content: 'Refunded 150.00 once approved.' },
      { toolCalls: [{ id: REUSED, name: 'issue_refund', arguments: { order_id: 'ord_2001', amount_cents: 200, reason: 'second refund' } }] },
      { content: 'Refunded 2.00 as well.' },
    );

    const previous = await runWorkerOn(h, { code: previousBundle.code });
    const first = await h.client.sendMessage(id, 'Refund 150 on ord_2001');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    await previous.stop();
    const before = await h.temporal.workflow.getHandle(id).fetchHistory();
    expect((before.events ?? []).filter((e) => e.markerRecordedEventAttributes)).toEqual([]);

    const current = await runWorkerOn(h, { codePath: inject('workflowBundlePath') });
    try {
      const decision = await h.client.decide(id, { decision: 'approve', decidedBy: 'ops' });
      expect(decision.toolCallIds).toEqual([REUSED]);
      expect((await h.client.waitForTurn(id, first, 60_000)).outcome).toBe('answered');
      expect(await refundsOf(id)).toEqual([{ amount_cents: 15_000, idempotency_key: `${id}/${REUSED}` }]);
      const record = await h.pool.query('SELECT tool_call_ids, call_keys FROM durable_agent.approval_decisions WHERE conversation_id = $1', [id]);
      expect(record.rows).toEqual([{ tool_call_ids: [REUSED], call_keys: [`${id}/${REUSED}`] }]);

      const { turn } = await h.client.ask(id, 'Also refund 2 on ord_2001');
      expect(turn.outcome).toBe('answered');
      expect(await refundsOf(id)).toEqual([
        { amount_cents: 15_000, idempotency_key: `${id}/${REUSED}` },
        { amount_cents: 200, idempotency_key: `${id}/msg-5/call-0` },
      ]);
      const results = (await h.client.transcript(id)).flatMap(({ message: m }) => (m.role === 'tool' ? [JSON.parse(m.content)] : []));
      expect(results.map((r) => r.amount_cents)).toEqual([15_000, 200]);
      expect(results[0].refund_id).not.toBe(results[1].refund_id);
    } finally {
      await current.stop();
    }

    // The whole history, begun by the previous code and finished by the current one, replays.
    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, id);
    await exportHistoryFixture(h.temporal, id, 'upgrade-to-call-instance-keys');
    h.expectOnlyValidModelRequests();
  });
});
