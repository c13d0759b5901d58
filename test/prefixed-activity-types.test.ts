import { Worker, type WorkflowBundle } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ACTIVITY_TYPE_PREFIX } from '../src/activities/contracts';
import { PREFIXED_ACTIVITY_TYPES_PATCH } from '../src/workflows/activity-options';
import { exportHistoryFixture } from './support/fixture-export';
import { startHarness, type Harness } from './support/harness';
import { recordedPatches } from './support/history';
import { bundlePreviousWorkflowCode, runWorkerOn } from './support/upgrade';

// The conversation's activity types carry a prefix (`durableAgent.callModel`)
// so they cannot collide with a team's own activities. Renaming an activity
// type would break the replay of every running conversation, so a run begun
// with the bare names keeps them (the workflow asks a patch once per run) and
// the worker registers both. Shown here with a conversation begun by the
// workflow code of the last commit before the prefix and finished by the
// current worker.

/** The last commit whose workflow scheduled bare activity types. */
const PRE_PREFIX_COMMIT = '8e143bad14bd2879294f38a48e39773bcbfbb32f';

let h: Harness;
let previousBundle: WorkflowBundle;

beforeAll(async () => {
  h = await startHarness({ worker: false });
  previousBundle = await bundlePreviousWorkflowCode(PRE_PREFIX_COMMIT);
});
afterAll(() => h?.stop());

/** The activity types a conversation's history scheduled. */
async function scheduledTypes(id: string): Promise<Set<string>> {
  const history = await h.temporal.workflow.getHandle(id).fetchHistory();
  return new Set((history.events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []));
}

const refundsOf = async (id: string) =>
  (await h.pool.query<{ amount_cents: number }>('SELECT amount_cents FROM refunds WHERE idempotency_key LIKE $1 ORDER BY id', [`${id}/%`])).rows;

describe('prefixed activity types', () => {
  it('a conversation begun with bare activity types keeps them under the current worker, runs its approved tool once and replays', async () => {
    const id = h.newConversationId('bare');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_1', name: 'issue_refund', arguments: { order_id: 'ord_2001', amount_cents: 15_000, reason: 'approved after upgrade' } }] },
      { content: 'Refunded 150.00 once approved.' },
      { content: 'Nothing else to do.' },
    );
    const previous = await runWorkerOn(h, { code: previousBundle.code });
    const first = await h.client.sendMessage(id, 'Refund 150 on ord_2001');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    await previous.stop();

    const current = await runWorkerOn(h, { codePath: inject('workflowBundlePath') });
    try {
      await h.client.decide(id, { decision: 'approve', decidedBy: 'ops' });
      expect((await h.client.waitForTurn(id, first, 60_000)).outcome).toBe('answered');
      expect((await h.client.ask(id, 'Anything else?')).turn.outcome).toBe('answered');
    } finally {
      await current.stop();
    }
    expect(await refundsOf(id)).toEqual([{ amount_cents: 15_000 }]);

    // The current worker checks the decision's signature (verifyDecision, from the approval-identity
    // patch on), under the run's bare type like every other activity of the run.
    expect([...(await scheduledTypes(id))].sort()).toEqual(['appendMessages', 'callModel', 'recordDecision', 'runTool', 'verifyDecision']);
    expect(await recordedPatches(h.temporal, id)).not.toContain(PREFIXED_ACTIVITY_TYPES_PATCH);
    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, id);
    await exportHistoryFixture(h.temporal, id, 'upgrade-to-prefixed-activity-types');
    h.expectOnlyValidModelRequests();
  });

  it('a new conversation schedules only prefixed activity types, so a worker registering no bare names runs it to the end', async () => {
    const id = h.newConversationId('prefixed');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_1', name: 'issue_refund', arguments: { order_id: 'ord_3001', amount_cents: 5_900, reason: 'damaged' } }] },
      { content: 'Refunded 59.00.' },
    );
    const worker = await runWorkerOn(h, { codePath: inject('workflowBundlePath') }, 'prefixed only');
    try {
      const { turn } = await h.client.ask(id, 'Refund ord_3001 in full');
      expect(turn.outcome).toBe('answered');
    } finally {
      await worker.stop();
    }
    expect(await refundsOf(id)).toEqual([{ amount_cents: 5_900 }]);
    expect([...(await scheduledTypes(id))].sort()).toEqual(
      ['appendMessages', 'callModel', 'runTool'].map((name) => `${ACTIVITY_TYPE_PREFIX}${name}`),
    );
    expect(await recordedPatches(h.temporal, id)).toContain(PREFIXED_ACTIVITY_TYPES_PATCH);
    await exportHistoryFixture(h.temporal, id, 'prefixed-activity-types');
    h.expectOnlyValidModelRequests();
  });
});
