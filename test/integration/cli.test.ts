import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { AgentClient } from '../../src/client/client';
import { freePort } from '../../src/common/free-port';
import { TEST_TOKENS, token } from '../support/api';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';

// The command line as a user meets it: `say` prints each step once and in
// order; a message comes from arguments, standard input or a file; piped
// `chat` answers every line, also lines that arrive while a turn runs;
// `pending` shows real ages; `approve` says what it approved, and gives a
// standing grant with --grant-*, which `grants` lists and `revoke-grant`
// revokes (directly and through the HTTP API); a command on a conversation
// no worker answers for fails within seconds and says why.

let h: Harness;
let env: Record<string, string>;
beforeAll(async () => {
  h = await startHarness();
  env = {
    TEMPORAL_ADDRESS: h.temporalAddress,
    DATABASE_URL: h.databaseUrl,
    TEMPORAL_TASK_QUEUE: h.taskQueue,
    AGENT_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'cli-')),
  };
});
afterAll(async () => {
  await h?.stop();
});

const count = (text: string, part: string) => text.split(part).length - 1;

/** Sends a message whose model asks for one refund on an order of its own, and waits until the call waits for a person. */
async function refundWaits(id: string, callId: string, text: string): Promise<string> {
  await h.pool.query(
    `INSERT INTO public.orders (id, customer_id, description, total_cents) VALUES ('ord_cli_grant', 'cus_alan', 'CLI grant order', 200000)
     ON CONFLICT (id) DO NOTHING`,
  );
  h.model.enqueue(
    {
      toolCalls: [
        {
          id: callId,
          name: 'issue_refund',
          arguments: { order_id: 'ord_cli_grant', amount_cents: 10_500, reason: 'late' },
        },
      ],
    },
    { content: `Refunded with ${callId}.` },
  );
  const messageId = await h.client.sendMessage(id, text);
  await expect
    .poll(async () => (await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId), { timeout: 20_000 })
    .toEqual([callId]);
  return messageId;
}

/** Sends a message whose model asks for one refund that a grant covers: the turn answers without anyone deciding. */
async function refundRunsUnasked(id: string, callId: string, text: string): Promise<void> {
  h.model.enqueue(
    {
      toolCalls: [
        {
          id: callId,
          name: 'issue_refund',
          arguments: { order_id: 'ord_cli_grant', amount_cents: 10_500, reason: 'late' },
        },
      ],
    },
    { content: `Refunded with ${callId}.` },
  );
  const messageId = await h.client.sendMessage(id, text);
  expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
  const via = await h.pool.query(
    `SELECT via FROM durable_agent.approval_decisions WHERE conversation_id = $1 AND $2 = ANY (tool_call_ids)`,
    [id, callId],
  );
  expect(via.rows).toEqual([{ via: 'grant' }]);
}

describe('the CLI', () => {
  it('say prints the tool call, its result, then the answer, each once', async () => {
    const id = h.newConversationId('say');
    h.model.enqueue(
      { toolCalls: [{ name: 'find_customer', arguments: { query: 'Ada' } }] },
      { content: 'Ada Lovelace is customer cus_ada.' },
    );
    const { stdout } = await runCli(['say', id, 'find', 'Ada'], env);
    expect(count(stdout, 'Ada Lovelace is customer cus_ada.')).toBe(1);
    const call = stdout.indexOf('⚙ find_customer');
    const result = stdout.indexOf('↳ ');
    const answer = stdout.indexOf('Ada Lovelace is customer cus_ada.');
    expect(call).toBeGreaterThan(-1);
    expect(call).toBeLessThan(result);
    expect(result).toBeLessThan(answer);
    expect(count(stdout, '⚙ find_customer')).toBe(1);
  });

  it('say - takes the message from standard input, and --file from a file', async () => {
    const id = h.newConversationId('stdin');
    h.model.enqueue({ content: 'Got the piped one.' }, { content: 'Got the file.' });
    expect((await runCli(['say', id, '-'], env, 'hello from a pipe\n')).stdout).toContain('Got the piped one.');
    const file = path.join(env.AGENT_DATA_DIR, 'message.txt');
    fs.writeFileSync(file, 'hello from a file\nsecond line\n');
    expect((await runCli(['say', id, '--file', file], env)).stdout).toContain('Got the file.');
    const texts = (await h.client.transcript(id))
      .filter((m) => m.message.role === 'user')
      .map((m) => m.message.content);
    expect(texts).toEqual(['hello from a pipe', 'hello from a file\nsecond line']);
    const empty = await runCli(['say', id, '-'], env, '  \n').catch((err: { stderr: string }) => err);
    expect((empty as { stderr: string }).stderr).toContain('The message is empty');
  });

  it('piped chat answers every line, also lines that arrive while a turn runs', async () => {
    const id = h.newConversationId('chat-pipe');
    h.model.enqueue({ content: 'First answer.' }, { content: 'Second answer.' }, { content: 'Third answer.' });
    const { stdout } = await runCli(['chat', id], env, 'one\ntwo\nthree\n');
    expect(stdout).toContain('First answer.');
    expect(stdout).toContain('Second answer.');
    expect(stdout).toContain('Third answer.');
    expect(stdout.indexOf('First answer.')).toBeLessThan(stdout.indexOf('Second answer.'));
    expect(stdout.indexOf('Second answer.')).toBeLessThan(stdout.indexOf('Third answer.'));
    const texts = (await h.client.transcript(id))
      .filter((m) => m.message.role === 'user')
      .map((m) => m.message.content);
    expect(texts).toEqual(['one', 'two', 'three']);
  });

  it('piped chat asks about each call that waits, also a later call with the id of one decided before', async () => {
    const id = h.newConversationId('chat-same-id');
    // Providers that restart ids in every response give the turn's second refund the first one's id.
    const refund = (cents: number) => ({
      toolCalls: [
        {
          id: 'call_again',
          name: 'issue_refund',
          arguments: { order_id: 'ord_2001', amount_cents: cents, reason: 'twice' },
        },
      ],
    });
    h.model.enqueue(refund(10_100), refund(10_200), { content: 'Refunded twice.' });
    const { stdout } = await runCli(['chat', id], env, 'refund twice\ny\ny\n');
    expect(count(stdout, 'needs approval. Approve?')).toBe(2);
    expect(stdout).toContain('"amount_cents":10100');
    expect(stdout).toContain('"amount_cents":10200');
    expect(count(stdout, 'Refunded twice.')).toBe(1);
    h.expectOnlyValidModelRequests();
  });

  it('pending shows how long each call has waited', async () => {
    const id = h.newConversationId('ages');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_age',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 10_300, reason: 'age' },
          },
        ],
      },
      { content: 'Done.' },
    );
    await h.client.sendMessage(id, 'Refund, then wait');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    // One second of waiting shows the age is real (it is printed in whole seconds).
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    let line = '';
    await expect
      .poll(
        async () =>
          (line = (await runCli(['pending'], env)).stdout.split('\n').find((l) => l.includes('call_age')) ?? ''),
        {
          timeout: 30_000,
          interval: 1_000,
        },
      )
      .toContain('call_age');
    expect(Number(/waiting (\d+)s/.exec(line)?.[1])).toBeGreaterThanOrEqual(1);
    await h.client.decide(id, { decision: 'reject', reason: 'test over' });
  });

  it('approve --grant-calls gives a standing grant: the next call runs unasked, grants lists it used up; revoke-grant revokes another', async () => {
    const id = h.newConversationId('cli-grant');
    const first = await refundWaits(id, 'call_cg0', 'Refund 105');
    // A grant goes with the approval of one named call.
    const all = await runCli(['approve', id, '--all', '--grant-calls', '1'], env).catch((e: { stderr: string }) => e);
    expect((all as { stderr: string }).stderr).toContain('A grant goes with the approval of one call');
    const bad = await runCli(['approve', id, 'call_cg0', '--grant-for', '2 weeks'], env).catch(
      (e: { stderr: string }) => e,
    );
    expect((bad as { stderr: string }).stderr).toContain('--grant-for takes a duration like 30m, 2h or 1d');
    expect((await h.client.state(id)).pendingApprovals).toHaveLength(1);

    const approved = await runCli(
      ['approve', id, 'call_cg0', '--grant-calls', '1', '--grant-for', '2h', '--by', 'bob'],
      env,
    );
    expect(approved.stdout).toContain('Approved as bob: issue_refund(');
    expect(approved.stdout).toContain(
      'Granted: later calls of issue_refund in this conversation run without asking, up to 1 later call, for 2h (grant ',
    );
    const grantId = /\(grant ([^),]+)\)/.exec(approved.stdout)?.[1];
    expect(grantId, approved.stdout).toBeDefined();
    expect(approved.stdout).toContain(`revoke: npm run cli -- revoke-grant ${id} ${grantId}`);
    expect((await h.client.waitForTurn(id, first)).outcome).toBe('answered');

    await refundRunsUnasked(id, 'call_cg1', 'Refund 105 again');
    const listed = (await runCli(['grants', id], env)).stdout;
    expect(listed).toMatch(new RegExp(`^${grantId}  used up  issue_refund  by bob  calls 1 of 1  until `, 'm'));
    const json = JSON.parse((await runCli(['grants', id, '--json'], env)).stdout);
    expect(json).toEqual([expect.objectContaining({ id: grantId, callsUsed: 1, maxCalls: 1, live: false })]);

    // Spent, it covers no more: the third refund waits, and is approved with an amount grant, which is revoked.
    const third = await refundWaits(id, 'call_cg2', 'Refund 105 once more');
    const amount = await runCli(
      ['approve', id, 'call_cg2', '--grant-amount', 'amount_cents=50000', '--by', 'bob', '--json'],
      env,
    );
    const decided = JSON.parse(amount.stdout);
    const otherId = decided.calls[0].grant.id;
    expect(decided.calls[0].grant).toEqual({ id: otherId, maxAmount: { argument: 'amount_cents', total: 50_000 } });
    expect(otherId).toBe(decided.calls[0].decisionId);
    expect((await h.client.waitForTurn(id, third)).outcome).toBe('answered');
    const revoked = await runCli(['revoke-grant', id, otherId, '--reason', 'enough', '--by', 'carol'], env);
    expect(revoked.stdout).toContain(
      `Revoked as carol: grant ${otherId}; later calls of issue_refund in ${id} wait for a person again.`,
    );
    expect(revoked.stdout).toMatch(
      new RegExp(`${otherId}  revoked  issue_refund  by bob  calls 0  amount_cents 0 of 50000  revoked by carol at `),
    );
    const again = await runCli(['revoke-grant', id, otherId], env).catch((e: { stderr: string }) => e);
    expect((again as { stderr: string }).stderr).toContain(`Grant "${otherId}" was revoked already by carol`);
    const unknown = await runCli(['revoke-grant', id, 'no-such-grant'], env).catch((e: { stderr: string }) => e);
    expect((unknown as { stderr: string }).stderr).toContain(`Conversation ${id} has no grant "no-such-grant"`);
  });

  it("through the HTTP API (AGENT_API_URL), approve --grant-calls gives a grant under the token's subject, grants lists it and revoke-grant revokes it as that subject", async () => {
    const api = await startApiServer({ client: h.client, tokens: TEST_TOKENS });
    try {
      const through = { ...env, AGENT_API_URL: api.url, AGENT_API_TOKEN: token('b') };
      const id = h.newConversationId('cli-grant-api');
      const first = await refundWaits(id, 'call_ca0', 'Refund 105');
      const approved = await runCli(['approve', id, 'call_ca0', '--grant-calls', '2'], through);
      expect(approved.stdout).toContain('Approved as bob@example.com');
      const grantId = /\(grant ([^),]+)\)/.exec(approved.stdout)?.[1];
      expect(grantId, approved.stdout).toBeDefined();
      expect((await h.client.waitForTurn(id, first)).outcome).toBe('answered');
      await refundRunsUnasked(id, 'call_ca1', 'Refund 105 again');
      expect((await runCli(['grants', id], through)).stdout).toMatch(
        new RegExp(`^${grantId}  live  issue_refund  by bob@example\\.com  calls 1 of 2  until `, 'm'),
      );
      // The API records the token's subject as who revokes; a requester's token may not revoke.
      const requester = await runCli(['revoke-grant', id, grantId!], { ...through, AGENT_API_TOKEN: token('a') }).catch(
        (e: { stderr: string }) => e,
      );
      expect((requester as { stderr: string }).stderr).toContain('(forbidden)');
      const revoked = await runCli(['revoke-grant', id, grantId!, '--reason', 'done'], through);
      expect(revoked.stdout).toContain(`Revoked as bob@example.com: grant ${grantId}`);
      expect((await h.client.state(id)).grants?.[0]).toMatchObject({ revokedBy: 'bob@example.com', live: false });
    } finally {
      await api.stop();
    }
  });

  it('a command on a conversation no worker answers for fails within seconds, saying so and changing nothing', async () => {
    const idle = AgentClient.fromClient(h.temporal, {
      taskQueue: `nobody-polls-${Date.now()}`,
      databaseUrl: h.databaseUrl,
    });
    const id = h.newConversationId('no-worker');
    await idle.sendMessage(id, 'Is anyone there?');
    const noWorker = { ...env, TEMPORAL_TASK_QUEUE: `nobody-polls` };
    // The three commands at once: each waits out its own timeout.
    const readings = [
      ['show', id],
      ['state', id],
    ];
    const [failures, refused] = await Promise.all([
      Promise.all(readings.map((args) => runCli(args, noWorker).catch((err: { stderr: string; code: number }) => err))),
      // A decision is checked against what the conversation last recorded (test/integration/queued-decisions.test.ts
      // queues one that waits).
      runCli(['approve', id, 'call_x'], noWorker).catch((err: { stderr: string; code: number }) => err),
    ]);
    readings.forEach((args, i) =>
      expect((failures[i] as { stderr: string }).stderr, args.join(' ')).toMatch(
        /No worker answered conversation .* within 5 s/,
      ),
    );
    expect((refused as { stderr: string }).stderr).toMatch(
      /Tool call "call_x" is not waiting for approval in conversation .* \(no worker answered within 3 s\)\. Nothing was decided/,
    );
    expect(
      await h.pool
        .query('SELECT count(*)::int AS n FROM durable_agent.approval_decisions WHERE conversation_id = $1', [id])
        .then((r) => r.rows[0].n),
    ).toBe(0);
    await h.temporal.workflow.getHandle(id).terminate('test over');
  });

  it('a command while no Temporal server answers fails saying where it tried and what to check', async () => {
    const closed = await freePort();
    const failed = await runCli(['pending'], { ...env, TEMPORAL_ADDRESS: `127.0.0.1:${closed}` }).catch(
      (err: { stderr: string; code: number }) => err,
    );
    expect((failed as { code: number }).code).not.toBe(0);
    expect((failed as { stderr: string }).stderr).toContain(`Could not connect to Temporal at 127.0.0.1:${closed}`);
    expect((failed as { stderr: string }).stderr).toContain('check TEMPORAL_ADDRESS');
  });
});
