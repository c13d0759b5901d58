import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { Worker, type WorkflowBundle } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';
import { bundlePreviousWorkflowCode, runWorkerOn } from '../support/upgrade';

// A live upgrade from 1.0 to this code: a conversation begun by the workflow
// code of the 1.0 release waits for a person when the workers are replaced;
// the current code takes it over, runs the approved call once, answers, and
// the whole history replays. Every later change to the workflow keeps this
// green (a patch where commands change: src/contract/patches.ts).

const ROOT = path.join(__dirname, '..', '..');

/** The commit that made the package 1.0.0 (the release every later workflow must keep running). */
function releaseCommit(): string {
  // Along the first parents, merges diffed against theirs: the release may have landed in a merge.
  const found = execFileSync(
    'git',
    [
      '-C',
      ROOT,
      'log',
      '--reverse',
      '--first-parent',
      '-m',
      '--format=%H',
      '-S',
      '"version": "1.0.0"',
      '--',
      'package.json',
    ],
    {
      encoding: 'utf8',
    },
  )
    .trim()
    .split('\n')[0];
  if (!found)
    throw new Error(
      'No commit in this checkout made package.json 1.0.0 (a shallow clone? Run "git fetch --unshallow").',
    );
  return found;
}

let h: Harness;
let release: WorkflowBundle;
beforeAll(async () => {
  h = await startHarness({ worker: false });
  release = await bundlePreviousWorkflowCode(releaseCommit());
});
afterAll(async () => {
  await h?.stop();
});

describe('upgrading from 1.0', () => {
  it('a conversation begun by 1.0 and waiting for a person is finished by the current code: the call runs once, the turn answers, the history replays', async () => {
    const id = h.newConversationId('from-1.0');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_up',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 12_000, reason: 'upgrade' },
          },
        ],
      },
      { content: 'Refunded after the upgrade.' },
    );
    const previous = await runWorkerOn(h, { code: release.code });
    const messageId = await h.client.sendMessage(id, 'Refund 120 on ord_1001');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    await previous.stop();

    const current = await runWorkerOn(h, { codePath: inject('workflowBundlePath') });
    try {
      await h.client.decide(id, { decision: 'approve', decidedBy: 'ops' });
      expect((await h.client.waitForTurn(id, messageId, 60_000)).outcome).toBe('answered');
      const refunds = await h.pool.query("SELECT count(*)::int AS n FROM refunds WHERE reason = 'upgrade'");
      expect(refunds.rows).toEqual([{ n: 1 }]);
      await h.client.end(id);
      await h.temporal.workflow.getHandle(id).result();
    } finally {
      await current.stop();
    }
    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, id);
    h.expectOnlyValidModelRequests();
  });
});
