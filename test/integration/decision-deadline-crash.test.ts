import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { STALE_QUERY_TASK_MESSAGE } from '../../src/contract';
import { exportHistoryFixture } from '../support/fixture-export';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';
import { effectKeyOf } from '../support/effect-keys';
import type { ScriptedReply } from '../../src/testing';

// Approval deadlines that pass while the conversation's worker is dead (killed
// with SIGKILL). A decision counts by when it was sent, not by when a worker
// gets to it; and however the new worker receives the deadline's timer and the
// decision, the history it writes replays without nondeterminism.

// Long enough to kill the worker holding the conversation before the first query, sent 2.9 s before the deadline.
const APPROVAL_TIMEOUT_MS = 6_000;
const input = { timeouts: { heartbeatMs: 3_000 }, approvalTimeoutMs: APPROVAL_TIMEOUT_MS };
/**
 * The deadline of the tests without queries: long enough to kill the worker as soon as the call waits and still send a
 * decision 2 s before the deadline; each second of it is a second of waiting.
 */
const SHORT_APPROVAL_TIMEOUT_MS = 4_000;

let h: Harness;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  h = await startHarness({ worker: false });
});
// The worker a test leaves running serves as the next test's first worker when it needs one alone (a worker start is
// seconds); the tests with two start from none.
afterAll(async () => {
  while (workers.length > 0) await workers.pop()!.stop('SIGKILL');
  await h?.stop();
});

const startWorker = async (): Promise<WorkerProcess> => {
  const worker = await startWorkerProcess(
    h.workerEnv({ AGENT_TOOLS_MODULE: path.join(__dirname, '..', 'support', 'crash-tools.ts') }),
  );
  workers.push(worker);
  return worker;
};
/** The one worker running: the one the test before left, or a new one. */
const aWorker = async (): Promise<WorkerProcess> => {
  while (workers.length > 1) await workers.pop()!.stop('SIGKILL'); // none but one left from a failed test
  return workers[0] ?? (await startWorker());
};
const sleepUntil = (at: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));

/**
 * Starts a conversation whose refund waits for approval; returns its message id and the call's deadline. `after`: the
 * reply to the call after the refund's (`null`: the responder's).
 */
async function awaitingApproval(
  id: string,
  after: ScriptedReply | null = { content: 'Done.' },
  approvalTimeoutMs = APPROVAL_TIMEOUT_MS,
): Promise<{ messageId: string; deadline: number }> {
  h.model.enqueue(
    {
      toolCalls: [
        {
          id: 'call_big',
          name: 'issue_refund',
          arguments: { order_id: 'ord_2001', amount_cents: 11_000, reason: 'deadline test' },
        },
      ],
    },
    ...(after ? [after] : []),
  );
  const messageId = await h.client.sendMessage(id, 'Refund 110.00 on ord_2001', {
    input: { ...input, approvalTimeoutMs },
  });
  await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 30_000 }).toBe(1);
  const [pending] = (await h.client.state(id)).pendingApprovals;
  return { messageId, deadline: Date.parse(pending.requestedAt) + approvalTimeoutMs };
}

/** The worker that completed the conversation's last workflow task: it holds the conversation in its cache. */
async function holder(id: string, candidates: WorkerProcess[]): Promise<WorkerProcess> {
  const history = await h.temporal.workflow.getHandle(id).fetchHistory();
  const identities = (history.events ?? []).flatMap((e) => e.workflowTaskCompletedEventAttributes?.identity ?? []);
  const last = identities[identities.length - 1];
  const found = candidates.find((w) => last?.startsWith(`${w.child.pid}@`));
  if (!found) throw new Error(`no candidate worker completed the last workflow task (identity ${last})`);
  return found;
}

async function expectReplaysCleanly(id: string): Promise<void> {
  const history = await h.temporal.workflow.getHandle(id).fetchHistory();
  await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, id);
}

/**
 * Kills the worker holding a conversation that waits for approval, then sends
 * queries staggered around the deadline so that the other worker receives some
 * as legacy query tasks whose history already has the fired timer, and finally
 * calls `signal` before the workflow task for the timer can leave the dead
 * worker's sticky queue (its schedule-to-start timeout is 3 s).
 */
async function splitByQueries(
  id: string,
  signal: (deadline: number) => Promise<unknown>,
  after?: ScriptedReply | null,
): Promise<{ messageId: string; queryOutcomes: Promise<string[]> }> {
  while (workers.length > 1) await workers.pop()!.stop('SIGKILL'); // none but one left from a failed attempt
  // The worker the test before left, and one more; or two new ones.
  const [a, b] = await Promise.all([workers[0] ?? startWorker(), startWorker()]);
  const { messageId, deadline } = await awaitingApproval(id, after);
  const victim = await holder(id, [a, b]);
  await workers.splice(workers.indexOf(victim), 1)[0].stop('SIGKILL');
  const queries: Promise<string>[] = [];
  for (let offset = -2_900; offset <= -800; offset += 300) {
    await sleepUntil(deadline + offset);
    queries.push(
      h.temporal.workflow
        .getHandle(id)
        .query<unknown>('state')
        .then(
          () => `answered at ${Date.now() - deadline} ms`,
          (err: Error) => `${err.message} (at ${Date.now() - deadline} ms)`,
        ),
    );
  }
  await sleepUntil(deadline + 2_400);
  await signal(deadline);
  return { messageId, queryOutcomes: Promise.all(queries) };
}

/** The history replays, and no workflow task failed on the way. */
async function expectNoSplit(id: string): Promise<void> {
  await expectReplaysCleanly(id);
  const history = await h.temporal.workflow.getHandle(id).fetchHistory();
  expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
}

/**
 * True when the decision signal was in the history before the workflow task that handled the fired approval timer
 * started.
 */
async function signalReachedTimerTask(id: string): Promise<boolean> {
  const events = (await h.temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
  const fired = events.findIndex((e) => e.timerFiredEventAttributes);
  const taskStarted = events.findIndex((e, i) => i > fired && e.workflowTaskStartedEventAttributes);
  const signaled = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'decision');
  return fired >= 0 && signaled >= 0 && signaled < taskStarted;
}

const refunds = async (id: string) =>
  (
    await h.pool.query('SELECT amount_cents FROM refunds WHERE idempotency_key = $1', [
      await effectKeyOf(h.pool, id, 'call_big'),
    ])
  ).rows;
const toolContent = async (id: string) => {
  const tool = (await h.client.transcript(id)).map((m) => m.message).find((m) => m.role === 'tool');
  return (tool as { content: string } | undefined)?.content ?? '';
};

describe('approval deadline passing while the worker is dead', () => {
  it('a decision sent before the deadline is applied when the new worker starts after it', async () => {
    const id = h.newConversationId('deadline-sent-in-time');
    const first = await aWorker();
    const { messageId, deadline } = await awaitingApproval(id, undefined, SHORT_APPROVAL_TIMEOUT_MS);
    await workers.splice(workers.indexOf(first), 1)[0].stop('SIGKILL');
    await sleepUntil(deadline - 2_000);
    await h.client.signalDecision(id, { decisionId: 'approved-in-time', decision: 'approve', decidedBy: 'ops' });
    await sleepUntil(deadline + 1_000);
    await startWorker();

    const turn = await h.client.waitForTurn(id, messageId, 60_000);
    expect(turn.outcome).toBe('answered');
    expect(await refunds(id)).toEqual([{ amount_cents: 11_000 }]);
    const records = await h.pool.query(
      'SELECT decision_id FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [id],
    );
    expect(records.rows).toEqual([{ decision_id: 'approved-in-time' }]);
    await expectReplaysCleanly(id);
    // Its decision was verified (verifyDecision) after the deadline's timer fired: the deadline waited for the verdict.
    await exportHistoryFixture(h.temporal, id, 'decision-verified-after-deadline');
    h.expectOnlyValidModelRequests();
  });

  it('a decision sent after the deadline is refused, though no worker had handled the deadline yet', async () => {
    const id = h.newConversationId('deadline-sent-late');
    const first = await aWorker();
    const { messageId, deadline } = await awaitingApproval(id, undefined, SHORT_APPROVAL_TIMEOUT_MS);
    await workers.splice(workers.indexOf(first), 1)[0].stop('SIGKILL');
    await sleepUntil(deadline + 800);
    await h.client.signalDecision(id, { decisionId: 'approved-late', decision: 'approve', decidedBy: 'ops' });
    await startWorker();

    const turn = await h.client.waitForTurn(id, messageId, 60_000);
    expect(turn.outcome).toBe('answered');
    expect(await refunds(id)).toEqual([]);
    expect(JSON.parse(await toolContent(id))).toMatchObject({ kind: 'approval_timeout' });
    const { refusedDecisions } = await h.client.state(id);
    expect(refusedDecisions).toEqual([
      {
        decisionId: 'approved-late',
        toolCallId: undefined,
        problem: expect.stringMatching(/was sent \(.+\) after the approval deadline/),
      },
    ]);
    await expectReplaysCleanly(id);
  });

  // Whether a query reaches the surviving worker while the fired timer is still unhandled depends
  // on how long the server keeps routing through the dead worker's sticky queue, which the test
  // cannot fix. What the test asserts holds either way: the timer and the decision are never split
  // (the history replays, no workflow task failed), and the decision counts exactly when it reached
  // the timer's workflow task. How many queries the guard declined is printed, not asserted.
  it('a query taken by another worker after the deadline fired does not split the timer from a later decision', async () => {
    // The surviving worker may first see the conversation through a query whose history already has
    // the fired timer but no workflow task for it; the decision (stamped before the deadline)
    // arrives after that. Without the guard in src/workflows/interceptors.ts the worker handles
    // the timer alone and refuses the decision, while replay handles the decision first: a
    // nondeterminism error.
    const id = h.newConversationId('deadline-query-split');
    const { messageId, queryOutcomes } = await splitByQueries(id, (deadline) =>
      h.client.signalDecision(id, {
        decisionId: 'stamped-before-deadline',
        decision: 'approve',
        decidedBy: 'ops',
        sentAt: new Date(deadline - 1_000).toISOString(),
      }),
    );

    const turn = await h.client.waitForTurn(id, messageId, 60_000);
    expect(turn.outcome).toBe('answered');
    await expectNoSplit(id);
    if (await signalReachedTimerTask(id)) {
      // The decision reached the workflow task of the fired timer: it counts (stamped in time).
      expect(await refunds(id)).toEqual([{ amount_cents: 11_000 }]);
    } else {
      // On a loaded machine the surviving worker may handle the timer before the decision is even
      // sent (the test sends it 2.4 s after the deadline, the takeover comes about 3 s after it):
      // then the call has settled, and the decision is refused, live and on replay alike.
      expect(await refunds(id)).toEqual([]);
      expect(JSON.parse(await toolContent(id))).toMatchObject({ kind: 'approval_timeout' });
      expect((await h.client.state(id)).refusedDecisions.map((r) => r.decisionId)).toEqual(['stamped-before-deadline']);
    }
    // The queries the guard declined came before the workflow task (a client retries them).
    const outcomes = await queryOutcomes;
    console.log(
      `deadline query split: ${outcomes.filter((o) => o.includes(STALE_QUERY_TASK_MESSAGE)).length} of ${outcomes.length} queries declined by the guard`,
    );
  });

  it('a cancel sent while another worker takes over after the deadline fired ends the turn with the call settled once', async () => {
    // The same shape with a cancel instead of a decision. Measured with the guard switched off,
    // this one replays cleanly too (the model call the timer alone would start is cancelled
    // before it was ever sent), so it checks the outcome of a cancel during a takeover, not the
    // guard.
    const id = h.newConversationId('deadline-query-split-cancel');
    // The model call after the timeout answers slowly: on a loaded machine the surviving worker may
    // take the timer's task before the cancel is sent, and the cancel must still find the turn running.
    // The responder answers it, not the queue: when the cancel came first no such call is made, and
    // the next message is answered "Done." at once rather than after the slow reply.
    h.model.setResponder((request) =>
      JSON.stringify(request.body).includes('Anything else?')
        ? { content: 'Done.' }
        : { kind: 'delay', ms: 10_000, then: { content: 'Done.' } },
    );
    const { messageId } = await splitByQueries(id, () => h.client.cancelTurn(id, 'changed my mind'), null);

    const turn = await h.client.waitForTurn(id, messageId, 60_000);
    expect(turn.outcome).toBe('cancelled');
    await expectNoSplit(id);
    expect(await refunds(id)).toEqual([]);
    // The cancel and the fired timer reach the workflow in one task; either may settle the waiting
    // call, and both mean it never ran. What matters is one tool message and no refund.
    expect(['cancelled', 'approval_timeout']).toContain(JSON.parse(await toolContent(id)).kind);
    // The conversation goes on: the next message is answered.
    expect((await h.client.ask(id, 'Anything else?', { timeoutMs: 60_000 })).answer).toBe('Done.');
    h.model.setResponder(undefined);
    h.expectOnlyValidModelRequests();
  });
});
