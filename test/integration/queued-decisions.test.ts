import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { apiCaller, TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { runCli } from '../support/cli';
import { effectKeyOf } from '../support/effect-keys';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

// An approver's command line through the HTTP API alone (no Temporal, no
// PostgreSQL), and decisions given while no worker runs: they are checked
// against what the conversation last recorded, answered within seconds as
// queued, and applied once when a worker runs again.

const KEY = TEST_DECISION_KEY;
let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let worker: WorkerProcess | undefined;
let scratch: string;
// Keys in the worker, unsigned decisions accepted (and recorded as unauthenticated), so both CLI paths can be compared.
const workerEnv = () =>
  h.workerEnv({
    AGENT_DECISION_KEYS: `${KEY.id}:${KEY.secret}`,
    AGENT_REQUIRE_SIGNED_DECISIONS: 'false',
    AGENT_API_PORT: 'off',
  });

beforeAll(async () => {
  h = await startHarness({ worker: false });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS, decisions: { signingKey: KEY } });
  worker = await startWorkerProcess(workerEnv());
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'queued-'));
});
afterAll(async () => {
  await worker?.stop();
  await api?.stop();
  await h?.stop();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

const call = apiCaller(() => api.url);
/** The CLI of someone who holds only an API token: Temporal and PostgreSQL are unreachable from it. */
const remoteEnv = (who: string) => ({
  AGENT_API_URL: api.url,
  AGENT_API_TOKEN: token(who),
  TEMPORAL_ADDRESS: '127.0.0.1:1',
  DATABASE_URL: 'postgres://nobody@127.0.0.1:1/nothing',
  AGENT_DATA_DIR: scratch,
});
const refundsFor = async (key: string) =>
  (await h.pool.query('SELECT amount_cents FROM refunds WHERE idempotency_key = $1', [key])).rows;
const decisionsOf = async (id: string) =>
  (
    await h.pool.query(
      'SELECT tool_call_ids[1] AS tool_call_id, decision, decided_by, authenticated FROM durable_agent.approval_decisions WHERE conversation_id = $1 ORDER BY tool_call_ids[1]',
      [id],
    )
  ).rows;

describe('the CLI with only an API token', () => {
  it('say, pending, approve and show work without Temporal or PostgreSQL access', async () => {
    const id = h.newConversationId('remote');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_r1',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 10_400, reason: 'remote' },
          },
        ],
      },
      { content: 'Refunded 104.00 on ord_2001.' },
    );
    const said = await runCli(['say', id, 'Refund', '104.00', 'on', 'ord_2001'], remoteEnv('a'));
    expect(said.stdout).toContain('⚙ issue_refund [call_r1]');
    expect(said.stdout).toContain(
      '⏸ issue_refund({"order_id":"ord_2001","amount_cents":10400,"reason":"remote"}) needs approval',
    );
    let listed = '';
    await expect
      .poll(async () => (listed = (await runCli(['pending'], remoteEnv('b'))).stdout), {
        timeout: 20_000,
        interval: 500,
      })
      .toContain('call_r1');
    expect(listed).toMatch(
      new RegExp(`${id}  call_r1  issue_refund\\(.*\\)  waiting \\d+s  asked by alice@example.com`),
    );
    const approved = await runCli(['approve', id, 'call_r1'], remoteEnv('b'));
    expect(approved.stdout).toContain(
      'Approved as bob@example.com: issue_refund({"order_id":"ord_2001","amount_cents":10400,"reason":"remote"}) [call_r1]; it runs now.',
    );
    await expect
      .poll(async () => (await runCli(['show', id], remoteEnv('a'))).stdout, { timeout: 30_000, interval: 500 })
      .toContain('Refunded 104.00 on ord_2001.');
    expect(await refundsFor((await effectKeyOf(h.pool, id, 'call_r1'))!)).toEqual([{ amount_cents: 10_400 }]);
    expect(await decisionsOf(id)).toEqual([
      { tool_call_id: 'call_r1', decision: 'approve', decided_by: 'bob@example.com', authenticated: true },
    ]);
  });

  it('says which setting is missing when the URL comes without a token', async () => {
    const failed = await runCli(['pending'], { ...remoteEnv('b'), AGENT_API_TOKEN: '' }).catch(
      (err: { stderr: string }) => err,
    );
    expect((failed as { stderr: string }).stderr).toContain('AGENT_API_URL is set but AGENT_API_TOKEN is not');
  });
});

describe('a decision while no worker runs', () => {
  it('is refused or queued within seconds, as the worker would, and applied once when a worker runs', async () => {
    const id = h.newConversationId('queued');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_q1',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 11_000, reason: 'queued one' },
          },
          {
            id: 'call_q2',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'queued two' },
          },
        ],
      },
      { content: 'One refund made, one declined.' },
    );
    // dave sends the message: four eyes keep him from approving its calls, worker or not.
    expect(
      (await call('POST', `/v1/conversations/${id}/messages`, token('d'), { text: 'Two refunds on ord_2001, please' }))
        .status,
    ).toBe(202);
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 30_000 }).toBe(2);
    await expect
      .poll(async () => (await h.client.waitingCalls({ conversationId: id })).calls.length, { timeout: 20_000 })
      .toBe(2);
    await worker!.stop('SIGTERM');
    worker = undefined;

    const own = await call('POST', `/v1/conversations/${id}/decisions`, token('d'), {
      decision: 'approve',
      toolCallIds: ['call_q1'],
    });
    expect(own.status).toBe(403);
    expect(own.json.error.code).toBe('four_eyes');
    const unknown = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
      decision: 'approve',
      toolCallIds: ['call_nope'],
    });
    expect(unknown.status).toBe(409);
    expect(unknown.json.error.message).toContain('tool call "call_nope" is not waiting for approval');

    const began = Date.now();
    const approved = await runCli(['approve', id, 'call_q1'], remoteEnv('b'));
    const throughApiMs = Date.now() - began;
    expect(approved.stdout).toContain(
      'Queued as bob@example.com: approve issue_refund({"order_id":"ord_2001","amount_cents":11000,"reason":"queued one"}) [call_q1].',
    );
    expect(approved.stdout).toContain(`No worker answered for conversation ${id} within 3 s`);

    const direct = {
      TEMPORAL_ADDRESS: h.temporalAddress,
      DATABASE_URL: h.databaseUrl,
      TEMPORAL_TASK_QUEUE: h.taskQueue,
      AGENT_DATA_DIR: scratch,
    };
    const beganDirect = Date.now();
    const rejected = await runCli(['reject', id, 'call_q2', '--reason', 'too much', '--by', 'erin'], direct);
    const directMs = Date.now() - beganDirect;
    expect(rejected.stdout).toContain(
      'Queued as erin: reject issue_refund({"order_id":"ord_2001","amount_cents":12000,"reason":"queued two"}) [call_q2].',
    );
    expect(rejected.stdout).toContain('unsigned');
    console.log(
      `a decision with no worker running answered as queued in ${throughApiMs} ms through the API, ${directMs} ms directly (CLI start-up included)`,
    );
    expect(await decisionsOf(id)).toEqual([]);

    worker = await startWorkerProcess(workerEnv());
    await expect
      .poll(async () => (await h.client.state(id)).recentTurns.map((t) => t.outcome), { timeout: 60_000 })
      .toEqual(['answered']);
    expect(await refundsFor((await effectKeyOf(h.pool, id, 'call_q1'))!)).toEqual([{ amount_cents: 11_000 }]);
    expect(await refundsFor((await effectKeyOf(h.pool, id, 'call_q2'))!)).toEqual([]);
    expect(await decisionsOf(id)).toEqual([
      { tool_call_id: 'call_q1', decision: 'approve', decided_by: 'bob@example.com', authenticated: true },
      { tool_call_id: 'call_q2', decision: 'reject', decided_by: 'erin', authenticated: false },
    ]);
    const tools = (await h.client.transcript(id))
      .filter((m) => m.message.role === 'tool')
      .map((m) => (m.message as { tool_call_id: string }).tool_call_id);
    expect(tools.sort()).toEqual(['call_q1', 'call_q2']);
    h.expectOnlyValidModelRequests();
  });
});
