import { Worker, type WorkflowBundle } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { APPROVAL_IDENTITY_PATCH } from '../src/core/edge';
import { AwaitingApprovalSinceAttribute, PendingApprovalTagsAttribute } from '../src/workflows/api';
import { exportHistoryFixture } from './support/fixture-export';
import { startHarness, type Harness } from './support/harness';
import { recordedPatches } from './support/history';
import { bundlePreviousWorkflowCode, runWorkerOn } from './support/upgrade';

// A conversation begun by the workflow code before signed decisions and the
// approval index (the commit below), waiting for approval when the workers
// are upgraded: the current code takes the new rule from its next workflow
// task on (a `patched` marker mid-run), checks the decision with
// verifyDecision, records it, and the whole history replays.

/** The last commit before `approval-identity`. */
const PRE_IDENTITY_COMMIT = '5a2db17b031453e0d25799bfb689836170bff629';

let h: Harness;
let previousBundle: WorkflowBundle;

beforeAll(async () => {
  h = await startHarness({ worker: false });
  previousBundle = await bundlePreviousWorkflowCode(PRE_IDENTITY_COMMIT);
});
afterAll(async () => {
  await h?.stop();
});

describe('upgrading a conversation that waits for approval to signed decisions', () => {
  it('the current code verifies and records the decision, publishes the approval index from then on, and the history replays', async () => {
    const id = h.newConversationId('identity-upgrade');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_up', name: 'issue_refund', arguments: { order_id: 'ord_1001', amount_cents: 12_000, reason: 'upgrade' } }] },
      { content: 'Refunded after the upgrade.' },
    );
    const previous = await runWorkerOn(h, { code: previousBundle.code });
    const messageId = await h.client.sendMessage(id, 'Refund 120 on ord_1001');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    await previous.stop();
    // The old code published no approval index.
    const before = await h.temporal.workflow.getHandle(id).describe();
    expect(before.typedSearchAttributes.get(PendingApprovalTagsAttribute)).toBeUndefined();

    const current = await runWorkerOn(h, { codePath: inject('workflowBundlePath') });
    try {
      await h.client.decide(id, { decisionId: 'after-upgrade', decision: 'approve', decidedBy: 'ops' });
      expect((await h.client.waitForTurn(id, messageId, 60_000)).outcome).toBe('answered');
    } finally {
      await current.stop();
    }
    expect(await recordedPatches(h.temporal, id)).toContain(APPROVAL_IDENTITY_PATCH);
    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    const types = (history.events ?? []).flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : []));
    expect(types).toContain('durableAgent.verifyDecision');
    // No keys on this worker: applied, and recorded as unauthenticated.
    const records = await h.pool.query('SELECT decided_by, authenticated FROM durable_agent.approval_decisions WHERE conversation_id = $1', [id]);
    expect(records.rows).toEqual([{ decided_by: 'ops', authenticated: false }]);
    // Published once the call was decided (nothing waits, so both end unset).
    const events = history.events ?? [];
    const indexed = events.findIndex((e) => Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}).includes(PendingApprovalTagsAttribute.name));
    expect(indexed).toBeGreaterThan(-1);
    expect(events.findIndex((e) => Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}).includes(AwaitingApprovalSinceAttribute.name))).toBe(indexed);
    const after = await h.temporal.workflow.getHandle(id).describe();
    expect(after.typedSearchAttributes.get(PendingApprovalTagsAttribute)).toBeUndefined();
    expect(after.typedSearchAttributes.get(AwaitingApprovalSinceAttribute)).toBeUndefined();
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, id);
    await exportHistoryFixture(h.temporal, id, 'upgrade-to-approval-identity');
    h.expectOnlyValidModelRequests();
  });
});
