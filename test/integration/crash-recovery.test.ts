import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';
import { effectKeyOf } from '../support/effect-keys';

// Real worker processes killed with SIGKILL at chosen points; a new process
// must finish every conversation with a valid transcript, each side effect
// applied once and no decision lost.
//
// Every worker of the file shares one crash marker (crash-tools.ts kills its worker at a refund while the marker is
// absent): a test arms it by removing it, so the worker left running by the test before serves as the one to crash, and
// only the worker after each crash is started anew (a worker start is seconds).

const HEARTBEAT_MS = 3_000;
const input = { timeouts: { heartbeatMs: HEARTBEAT_MS } };
/** Model calls and idempotent tools as local activities. */
const LOCAL = { localActivities: { modelCalls: true, idempotentTools: true } };

let h: Harness;
let worker: WorkerProcess | undefined;
let scratch: string;
/** The crash marker of every worker of the file: present (disarmed) except while a test waits for a crash. */
let marker: string;
const recoveries: { point: string; ms: number }[] = [];

beforeAll(async () => {
  h = await startHarness({ worker: false });
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-crash-'));
  marker = path.join(scratch, 'crash-marker');
  fs.writeFileSync(marker, 'disarmed');
});
// A test that failed before its crash leaves the marker armed: the next test's refund must not crash.
afterEach(() => {
  if (!fs.existsSync(marker)) fs.writeFileSync(marker, 'disarmed');
});
afterAll(async () => {
  await worker?.stop('SIGKILL');
  await h?.stop();
  fs.rmSync(scratch, { recursive: true, force: true });
  console.log(
    `recovery after SIGKILL (kill → turn finished, new worker started at once): ${recoveries.map((r) => `${r.point} ${r.ms} ms`).join('; ')}`,
  );
});

const startWorker = async (): Promise<WorkerProcess> => {
  worker = await startWorkerProcess(
    h.workerEnv({
      AGENT_TOOLS_MODULE: path.join(__dirname, '..', 'support', 'crash-tools.ts'),
      CRASH_MARKER_FILE: marker,
    }),
  );
  return worker;
};
/** A running worker: the one an earlier test left, or a new one. */
const aWorker = async (): Promise<WorkerProcess> => worker ?? (await startWorker());
/** Arms the crash marker: the next refund kills the worker running it (and writes the marker again). */
const armCrash = (): void => fs.rmSync(marker, { force: true });
const kill = async (): Promise<number> => {
  await worker?.stop('SIGKILL');
  worker = undefined;
  return Date.now();
};
const roles = async (id: string) => (await h.client.transcript(id)).map((m) => m.message.role);
const refundsFor = async (key: string) =>
  (await h.pool.query('SELECT amount_cents FROM refunds WHERE idempotency_key = $1', [key])).rows;

/** Kills the worker while the model call hangs; a new worker calls again and the turn is answered. */
async function killDuringModelCall(
  name: string,
  text: string,
  conversationInput: Record<string, unknown>,
): Promise<string> {
  const id = h.newConversationId(name);
  let calls = 0;
  h.model.setResponder((request) => {
    if (!JSON.stringify(request.body).includes(text)) return { content: 'unexpected' };
    calls++;
    return calls === 1 ? { kind: 'hang' } : { content: 'Answered after the crash.' };
  });
  try {
    await aWorker();
    const messageId = await h.client.sendMessage(id, text, { input: conversationInput });
    await expect.poll(() => calls, { timeout: 20_000 }).toBe(1);
    const killedAt = await kill();
    await startWorker();
    const turn = await h.client.waitForTurn(id, messageId, 60_000);
    recoveries.push({ point: name, ms: Date.now() - killedAt });
    expect(turn.outcome).toBe('answered');
    expect(calls).toBe(2);
    expect(await roles(id)).toEqual(['user', 'assistant']);
  } finally {
    h.model.setResponder(undefined);
  }
  h.expectOnlyValidModelRequests();
  return id;
}

/**
 * The refund tool kills its worker right after its effect and ledger row
 * committed; the call runs again on a new worker, gets the recorded result,
 * and the refund happened once.
 */
async function killAfterRefund(
  name: string,
  orderId: string,
  conversationInput: Record<string, unknown>,
): Promise<string> {
  const id = h.newConversationId(name);
  h.model.enqueue(
    {
      toolCalls: [
        {
          id: 'call_refund',
          name: 'issue_refund',
          arguments: { order_id: orderId, amount_cents: 1_500, reason: 'crash test' },
        },
      ],
    },
    { content: 'Refunded 15.00.' },
  );
  await aWorker();
  armCrash();
  const messageId = await h.client.sendMessage(id, `Refund 15 on ${orderId} and crash`, { input: conversationInput });
  await expect.poll(() => fs.existsSync(marker), { timeout: 20_000 }).toBe(true);
  const killedAt = JSON.parse(fs.readFileSync(marker, 'utf8')).killedAt as number;
  await expect.poll(() => worker!.child.exitCode !== null || worker!.child.signalCode !== null).toBe(true);
  await kill();
  await startWorker();
  const turn = await h.client.waitForTurn(id, messageId, 60_000);
  recoveries.push({ point: name, ms: Date.now() - killedAt });
  expect(turn.outcome).toBe('answered');

  const key = (await effectKeyOf(h.pool, id, 'call_refund'))!;
  expect(await refundsFor(key)).toEqual([{ amount_cents: 1_500 }]);
  const ledger = await h.pool.query('SELECT result FROM durable_agent.tool_ledger WHERE idempotency_key = $1', [key]);
  const tool = (await h.client.transcript(id)).map((m) => m.message).find((m) => m.role === 'tool');
  expect(JSON.parse((tool as { content: string }).content)).toEqual(ledger.rows[0].result);
  h.expectOnlyValidModelRequests();
  return id;
}

/** The conversation's scheduled activity types, and the attempts its activities started with. */
async function activitiesOf(id: string): Promise<{ types: string[]; attempts: number[] }> {
  const history = await h.temporal.workflow.getHandle(id).fetchHistory();
  const events = history.events ?? [];
  return {
    types: events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []),
    attempts: events.flatMap((e) => e.activityTaskStartedEventAttributes?.attempt ?? []),
  };
}

describe('SIGKILL of the worker process', () => {
  it('during the model call: a new worker retries the call and the turn finishes', async () => {
    const id = await killDuringModelCall('kill-model', 'kill during the model call', input);
    // The client starts conversations with a short workflow task timeout, so a task the killed
    // worker held is handed on after 5 s rather than Temporal's default 10 s.
    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    expect(Number(started?.workflowTaskTimeout?.seconds)).toBe(5);
  });

  it('after a refund committed but before its activity completed: the retry returns the recorded result, the refund happened once', async () => {
    const id = await killAfterRefund('kill-refund', 'ord_2001', input);
    expect(Math.max(...(await activitiesOf(id)).attempts)).toBeGreaterThanOrEqual(2);
  });

  it("after a handoff, during the new agent's refund: one refund, and the new agent answers on the next worker", async () => {
    const id = h.newConversationId('kill-handoff');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_handoff', name: 'transfer_to_refunds', arguments: {} }] },
      {
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1002', amount_cents: 1_200, reason: 'handoff crash' },
          },
        ],
      },
      { content: 'Refunded 12.00.' },
    );
    await aWorker();
    armCrash();
    const messageId = await h.client.sendMessage(id, 'HANDOFF-CRASH refund 12 on ord_1002', {
      input: { ...input, agent: 'triage' },
    });
    await expect.poll(() => fs.existsSync(marker), { timeout: 20_000 }).toBe(true);
    await expect.poll(() => worker!.child.exitCode !== null || worker!.child.signalCode !== null).toBe(true);
    await kill();
    await startWorker();
    expect((await h.client.waitForTurn(id, messageId, 60_000)).outcome).toBe('answered');
    const key = (await effectKeyOf(h.pool, id, 'call_refund'))!;
    expect(await refundsFor(key)).toEqual([{ amount_cents: 1_200 }]);
    const requests = h.requestsFor('HANDOFF-CRASH');
    expect(requests.map((r) => (r.messages as { content: string }[])[0].content.split('.')[0])).toEqual([
      'You are the triage agent of a back office',
      'You are the refunds specialist of a back office',
      'You are the refunds specialist of a back office',
    ]);
    expect((await h.client.state(id)).agent).toBe('refunds');
    expect(await roles(id)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    h.expectOnlyValidModelRequests();
  });

  it('during a refund inside an agent called as a tool: one refund, the child answers and so does the parent', async () => {
    const id = h.newConversationId('kill-sub-agent');
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_delegate', name: 'ask_refunds', arguments: { input: 'SUBAGENT-CRASH refund 13 on ord_3001' } },
        ],
      },
      {
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_3001', amount_cents: 1_300, reason: 'sub-agent crash' },
          },
        ],
      },
      { content: 'Refunded 13.00 once.' },
      { content: 'The refunds agent refunded 13.00.' },
    );
    await aWorker();
    armCrash();
    const messageId = await h.client.sendMessage(id, 'SUBAGENT-CRASH please refund', {
      input: { ...input, agent: 'desk' },
    });
    await expect.poll(() => fs.existsSync(marker), { timeout: 30_000 }).toBe(true);
    await expect.poll(() => worker!.child.exitCode !== null || worker!.child.signalCode !== null).toBe(true);
    await kill();
    const killedAt = Date.now();
    await startWorker();
    const turn = await h.client.waitForTurn(id, messageId, 60_000);
    recoveries.push({ point: 'refund in a sub-agent', ms: Date.now() - killedAt });
    expect(turn.outcome).toBe('answered');
    const child = `${id}~refunds~1-0`;
    const key = (await effectKeyOf(h.pool, child, 'call_refund'))!;
    expect(JSON.parse(fs.readFileSync(marker, 'utf8')).idempotencyKey).toBe(key);
    expect(await refundsFor(key)).toEqual([{ amount_cents: 1_300 }]);
    expect(await roles(child)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const result = (await h.client.transcript(id)).map((m) => m.message).find((m) => m.role === 'tool');
    expect(result).toEqual({ role: 'tool', tool_call_id: 'call_delegate', content: 'Refunded 13.00 once.' });
    expect(await roles(id)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    h.expectOnlyValidModelRequests();
  });

  it('while waiting for approval: a decision sent while no worker runs is applied once the new worker starts', async () => {
    const id = h.newConversationId('kill-approval');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_big',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 11_000, reason: 'approved' },
          },
        ],
      },
      { content: 'Approved refund issued.' },
    );
    await aWorker();
    const messageId = await h.client.sendMessage(id, 'Big refund, then crash', { input });
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    const killedAt = await kill();
    await h.client.signalDecision(id, { decisionId: 'approve-while-down', decision: 'approve', decidedBy: 'ops' });
    await startWorker();
    const turn = await h.client.waitForTurn(id, messageId, 60_000);
    recoveries.push({ point: 'awaiting approval', ms: Date.now() - killedAt });
    expect(turn.outcome).toBe('answered');
    expect(await refundsFor((await effectKeyOf(h.pool, id, 'call_big'))!)).toEqual([{ amount_cents: 11_000 }]);
    const records = await h.pool.query(
      'SELECT decision_id FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [id],
    );
    expect(records.rows).toEqual([{ decision_id: 'approve-while-down' }]);
    expect(await roles(id)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    h.expectOnlyValidModelRequests();
  });

  it('between turns: the next message waits for a worker and is answered', async () => {
    const id = h.newConversationId('kill-idle');
    h.model.enqueue({ content: 'First.' }, { content: 'Second, after the crash.' });
    await aWorker();
    await h.client.ask(id, 'Before the crash', { input });
    const killedAt = await kill();
    const messageId = await h.client.sendMessage(id, 'After the crash');
    await startWorker();
    const turn = await h.client.waitForTurn(id, messageId, 60_000);
    recoveries.push({ point: 'between turns', ms: Date.now() - killedAt });
    expect(turn.outcome).toBe('answered');
    expect(await roles(id)).toEqual(['user', 'assistant', 'user', 'assistant']);
    h.expectOnlyValidModelRequests();
  });

  it('with local activities, during the model call: the workflow task times out, a new worker runs the call again and the turn finishes', async () => {
    const id = await killDuringModelCall('kill-local-model', 'kill during the local model call', {
      ...input,
      ...LOCAL,
    });
    expect((await activitiesOf(id)).types.filter((t) => /callModel/.test(t))).toEqual([]);
  });

  it('with local activities, after a refund committed but before its local activity completed: run again, it returns the recorded result; the refund happened once', async () => {
    const id = await killAfterRefund('kill-local-refund', 'ord_3001', { ...input, ...LOCAL });
    // No activity was scheduled for the refund or the model: they ran as local activities.
    expect((await activitiesOf(id)).types.filter((t) => /runTool|callModel/.test(t))).toEqual([]);
  });
});
