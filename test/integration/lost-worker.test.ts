import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporal } from '@temporalio/proto';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';
import { DEFAULT_GRACE_MS } from '../../src/worker/lost-workers';
import { anEffectKeyOf } from '../support/effect-key-match';

// Lost-worker takeover with real worker processes: a worker killed with
// SIGKILL is noticed by its peer through PostgreSQL (its liveness lock is
// freed when the kernel closes its connection), which fails its started
// attempts so that Temporal retries them at once. The conversations use a
// 60 s heartbeat timeout: a turn finished within the test's 30 s wait after
// the kill was not rescued by the heartbeat timeout, and history names
// WorkerLost as the attempt's failure.

const HEARTBEAT_MS = 60_000;
/** The confirmation window of the workers whose liveness session is cut, ms; the test waits twice as long. */
const SESSION_CUT_CONFIRM_MS = 3_000;
const input = { timeouts: { heartbeatMs: HEARTBEAT_MS } };
const { EventType } = temporal.api.enums.v1;

let h: Harness;
const workers: WorkerProcess[] = [];
const recoveries: string[] = [];

beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(async () => {
  for (const w of workers) await w.stop('SIGKILL');
  await h?.stop();
  if (recoveries.length > 0) console.log(`lost-worker takeover: ${recoveries.join('; ')}`);
});

const identityOf = (w: WorkerProcess): string => `${w.child.pid}@${os.hostname()}`;
const start = async (env: Record<string, string> = {}): Promise<WorkerProcess> => {
  const w = await startWorkerProcess(h.workerEnv({ LOG_LEVEL: 'info', ...env }));
  workers.push(w);
  return w;
};

/**
 * Waits until PostgreSQL has run for longer than the takeover's grace after
 * a database start, during which workers judge no peer lost.
 */
async function waitPastDatabaseStartGrace(): Promise<void> {
  const { rows } = await h.pool.query<{ ms: number }>(
    'SELECT extract(epoch FROM now() - pg_postmaster_start_time()) * 1000 AS ms',
  );
  const left = DEFAULT_GRACE_MS + 500 - Number(rows[0].ms);
  if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
}

/** The worker process running a started attempt of the conversation, from the attempts table. */
async function runnerOf(conversationId: string): Promise<WorkerProcess | undefined> {
  const { rows } = await h.pool.query<{ identity: string }>(
    `SELECT w.identity FROM durable_agent.worker_activities a JOIN durable_agent.workers w USING (worker_key) WHERE a.workflow_id = $1`,
    [conversationId],
  );
  return workers.find((w) => rows.some((r) => r.identity === identityOf(w)));
}

/** The conversation's workflow tasks scheduled on a sticky queue, by queue name, in order. */
async function stickyQueuesOf(conversationId: string): Promise<string[]> {
  const history = await h.temporal.workflow.getHandle(conversationId).fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const queue = e.workflowTaskScheduledEventAttributes?.taskQueue;
    return queue?.kind === temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_STICKY ? [queue.name!] : [];
  });
}

/** The liveness lock a worker holds (one row while it holds it), with the backend holding it. */
const HELD_LOCK = `FROM pg_locks l JOIN durable_agent.workers w ON l.objid = w.lock_key::bigint::oid
  WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted AND w.identity = $1`;

/** The retried attempts of the conversation's activities: attempt number and the failure of the attempt before. */
async function retriedAttempts(
  conversationId: string,
): Promise<{ attempt: number; type?: string; message?: string }[]> {
  const history = await h.temporal.workflow.getHandle(conversationId).fetchHistory();
  return (history.events ?? [])
    .filter(
      (e) =>
        e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED &&
        (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1,
    )
    .map((e) => {
      const failure = e.activityTaskStartedEventAttributes?.lastFailure;
      return {
        attempt: e.activityTaskStartedEventAttributes!.attempt!,
        type: failure?.applicationFailureInfo?.type ?? undefined,
        message: failure?.message ?? undefined,
      };
    });
}

/**
 * Two worker processes with the tools of `unknown-effect-tools.ts`; a
 * conversation whose model calls `tool` once, then answers `answer`; the
 * worker running the tool is killed once the tool has written its row.
 * Returns the conversation and its tool messages, once its turn answered
 * (well before the 60 s heartbeat timeout: the peer took over).
 */
async function killWhileToolRuns(tool: string, answer: string): Promise<{ id: string; tools: string[] }> {
  await h.pool.query('CREATE TABLE IF NOT EXISTS letters (customer_id text NOT NULL, idempotency_key text NOT NULL)');
  const marker = path.join(fs.mkdtempSync(path.join(os.tmpdir(), `lost-${tool}-`)), 'running');
  const env = {
    AGENT_TOOLS_MODULE: path.join(__dirname, '..', 'support', 'unknown-effect-tools.ts'),
    LETTER_MARKER_FILE: marker,
  };
  for (const w of workers.splice(0)) await w.stop('SIGKILL');
  await Promise.all([start(env), start(env)]);
  const id = h.newConversationId(`lost-${tool}`);
  h.model.enqueue(
    { toolCalls: [{ id: `call_${tool}`, name: tool, arguments: { customer_id: 'cus_ada' } }] },
    { content: answer },
  );
  const messageId = await h.client.sendMessage(id, `Run ${tool} for Ada`, { input });
  await expect.poll(() => fs.existsSync(marker), { timeout: 20_000 }).toBe(true);
  let runner: WorkerProcess | undefined;
  await expect.poll(async () => (runner = await runnerOf(id)), { timeout: 10_000 }).toBeDefined();
  await waitPastDatabaseStartGrace();
  await runner!.stop('SIGKILL');
  const turn = await h.client.waitForTurn(id, messageId, HEARTBEAT_MS / 2);
  expect(turn.outcome).toBe('answered');
  const tools = (await h.client.transcript(id)).flatMap(({ message: m }) => (m.role === 'tool' ? [m.content] : []));
  expect(tools).toHaveLength(1);
  return { id, tools };
}

/** The idempotency keys of the rows the tools wrote for the conversation. */
async function lettersOf(id: string): Promise<string[]> {
  const { rows } = await h.pool.query<{ idempotency_key: string }>(
    'SELECT idempotency_key FROM letters WHERE idempotency_key LIKE $1',
    [`${id}/%`],
  );
  return rows.map((r) => r.idempotency_key);
}

describe('lost-worker takeover', () => {
  it('a worker killed during a model call: its peer fails the attempt over and the call is retried at once, not at the heartbeat timeout', async () => {
    await Promise.all([start(), start()]);
    const id = h.newConversationId('lost-model');
    let calls = 0;
    h.model.setResponder((request) => {
      if (!JSON.stringify(request.body).includes('takeover during the model call')) return { content: 'unexpected' };
      calls++;
      return calls === 1 ? { kind: 'hang' } : { content: 'Answered by the peer.' };
    });
    try {
      const messageId = await h.client.sendMessage(id, 'takeover during the model call', { input });
      await expect.poll(() => calls, { timeout: 20_000 }).toBe(1);
      let runner: WorkerProcess | undefined;
      await expect.poll(async () => (runner = await runnerOf(id)), { timeout: 10_000 }).toBeDefined();
      const lostIdentity = identityOf(runner!);
      await waitPastDatabaseStartGrace();
      const killedAt = Date.now();
      await runner!.stop('SIGKILL');
      const turn = await h.client.waitForTurn(id, messageId, HEARTBEAT_MS / 2);
      const events = (await h.temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
      const atMs = (e: (typeof events)[number]) =>
        Number(e.eventTime!.seconds) * 1000 + Math.round((e.eventTime!.nanos ?? 0) / 1e6);
      const retryStarted = events.find((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1);
      const lastTask = events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).at(-1);
      recoveries.push(
        `kill → retry started ${atMs(retryStarted!) - killedAt} ms, → turn's last workflow task ${atMs(lastTask!) - killedAt} ms (history)`,
      );
      const takeover = workers
        .map((w) => w.output())
        .join('\n')
        .split('\n')
        .find((l) => l.includes('its activity attempts are retried now'));
      if (takeover) recoveries.push(`takeover logged ${JSON.parse(takeover).time - killedAt} ms after the kill`);
      expect(turn.outcome).toBe('answered');
      expect(calls).toBe(2);
      const retried = await retriedAttempts(id);
      expect(retried).toHaveLength(1);
      expect(retried[0].type).toBe('WorkerLost');
      expect(retried[0].message).toContain(lostIdentity);
      // The lost worker's rows are gone; the survivor's remain.
      const left = await h.pool.query<{ identity: string }>('SELECT identity FROM durable_agent.workers');
      expect(left.rows.map((r) => r.identity)).not.toContain(lostIdentity);
    } finally {
      h.model.setResponder(undefined);
    }
    h.expectOnlyValidModelRequests();
  });

  it('a worker killed while a tool that is not idempotent runs its one attempt: the peer fails it over, and the call settles as effect_unknown', async () => {
    const { id, tools } = await killWhileToolRuns(
      'send_letter',
      'The letter may have gone out; please check before sending another.',
    );
    const result = JSON.parse(tools[0]) as { kind: string; error?: string };
    // The letter was written before the kill: a call reported as failed would read as "not sent".
    expect(result).toMatchObject({ kind: 'effect_unknown', started: true });
    expect(String(result.error)).toMatch(/worker stopped while it ran/);
    expect(await lettersOf(id)).toEqual([anEffectKeyOf(`${id}/msg-1/call-0`)]);
    const history = (await h.temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
    const failed = history.find((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED)
      ?.activityTaskFailedEventAttributes?.failure;
    expect(failed?.cause?.applicationFailureInfo?.type ?? failed?.applicationFailureInfo?.type).toBe('WorkerLost');
    h.expectOnlyValidModelRequests();
  });

  it('a worker killed after an idempotent call applied its effect on its last attempt: the call runs once more under its key and reports the recorded result', async () => {
    const { id, tools } = await killWhileToolRuns('post_invoice', 'The invoice is posted.');
    // The effect applied before the kill is reported as done, from the ledger, and applied once.
    expect(tools.map((t) => JSON.parse(t) as unknown)).toEqual([{ posted: true }]);
    expect(await lettersOf(id)).toEqual([anEffectKeyOf(`${id}/msg-1/call-0`)]);
    const history = (await h.temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
    expect(
      history.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name?.endsWith('runTool')),
    ).toHaveLength(2);
    h.expectOnlyValidModelRequests();
  });

  it('a worker whose liveness session alone is cut locks its key again and keeps its work', async () => {
    for (const w of workers.splice(0)) await w.stop('SIGKILL');
    // A generous confirmation window: the cut worker must reconnect within it, whatever the machine's load (it checks
    // every 100 ms).
    const env = { AGENT_LOST_WORKER_CONFIRM_MS: String(SESSION_CUT_CONFIRM_MS) };
    await Promise.all([start(env), start(env)]);
    const id = h.newConversationId('lost-session');
    let calls = 0;
    let release: (() => void) | undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    h.model.setResponder(async (request) => {
      if (!JSON.stringify(request.body).includes('cut the liveness session')) return { content: 'unexpected' };
      calls++;
      await released;
      return { content: 'Answered by the same worker.' };
    });
    try {
      const messageId = await h.client.sendMessage(id, 'cut the liveness session', { input });
      await expect.poll(() => calls, { timeout: 20_000 }).toBe(1);
      let runner: WorkerProcess | undefined;
      await expect.poll(async () => (runner = await runnerOf(id)), { timeout: 10_000 }).toBeDefined();
      await waitPastDatabaseStartGrace();
      const cut = await h.pool.query<{ ok: boolean }>(`SELECT pg_terminate_backend(l.pid) AS ok ${HELD_LOCK}`, [
        identityOf(runner!),
      ]);
      expect(cut.rows).toEqual([{ ok: true }]);
      // Longer than the peer's confirmation window: a peer that judged the cut worker lost would have failed its
      // attempt by now.
      await new Promise((resolve) => setTimeout(resolve, 2 * SESSION_CUT_CONFIRM_MS));
      release!();
      const turn = await h.client.waitForTurn(id, messageId, 20_000);
      expect(turn.outcome).toBe('answered');
      expect(calls).toBe(1);
      expect(await retriedAttempts(id)).toEqual([]);
      // It holds its lock again.
      const held = await h.pool.query(`SELECT 1 ${HELD_LOCK}`, [identityOf(runner!)]);
      expect(held.rowCount).toBe(1);
    } finally {
      release?.();
      h.model.setResponder(undefined);
    }
  });

  it('a worker learns its sticky queue from a conversation it ran, so a takeover can release it', async () => {
    const id = h.newConversationId('lost-sticky');
    h.model.enqueue({ content: 'First answer.' });
    const messageId = await h.client.sendMessage(id, 'learn the sticky queue', { input });
    expect((await h.client.waitForTurn(id, messageId, 20_000)).outcome).toBe('answered');
    const stickyQueues = new Set(await stickyQueuesOf(id));
    expect(stickyQueues.size).toBeGreaterThan(0);
    await expect
      .poll(
        async () =>
          (
            await h.pool.query<{ sticky_queue: string | null }>('SELECT sticky_queue FROM durable_agent.workers')
          ).rows.filter((r) => r.sticky_queue && stickyQueues.has(r.sticky_queue)).length,
        {
          timeout: 10_000,
        },
      )
      .toBeGreaterThan(0);
  });

  it("a killed worker's sticky queue is released: a conversation it cached takes a decision without the sticky queue timeout", async () => {
    // One worker alone: one the test before left (a worker start is seconds), or a new one.
    for (const w of workers.splice(1)) await w.stop('SIGKILL');
    const holder = workers[0] ?? (await start());
    const id = h.newConversationId('lost-cache');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_big',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 11_000, reason: 'approved after a takeover' },
          },
        ],
      },
      { content: 'Refund issued.' },
    );
    const messageId = await h.client.sendMessage(id, 'Big refund, cached by a worker that dies', { input });
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    // The holder ran everything (it was alone), so it holds the conversation and has learned its sticky queue.
    const sticky = await stickyQueuesOf(id);
    expect(sticky.length).toBeGreaterThan(0);
    await expect
      .poll(
        async () =>
          (
            await h.pool.query('SELECT sticky_queue FROM durable_agent.workers WHERE identity = $1', [
              identityOf(holder),
            ])
          ).rows[0]?.sticky_queue,
        { timeout: 10_000 },
      )
      .toBe(sticky.at(-1));
    await start();
    await waitPastDatabaseStartGrace();
    const killedAt = Date.now();
    await holder.stop('SIGKILL');
    // The peer took it over (its row is gone) before the decision arrives.
    await expect
      .poll(
        async () =>
          (await h.pool.query('SELECT 1 FROM durable_agent.workers WHERE identity = $1', [identityOf(holder)]))
            .rowCount,
        { timeout: 10_000 },
      )
      .toBe(0);
    await h.client.signalDecision(id, { decisionId: 'approve-after-takeover', decision: 'approve', decidedBy: 'ops' });
    const turn = await h.client.waitForTurn(id, messageId, 30_000);
    expect(turn.outcome).toBe('answered');
    const after = ((await h.temporal.workflow.getHandle(id).fetchHistory()).events ?? []).filter(
      (e) => Number(e.eventTime!.seconds) * 1000 >= killedAt - 1000,
    );
    // Without the release, the decision's workflow task waits on the dead worker's sticky queue and times out
    // (schedule-to-start).
    expect(after.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT)).toEqual([]);
    expect(after.some((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)).toBe(true);
  });
});
