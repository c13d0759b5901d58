import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentClient } from '../../src/client/client';
import { freePort } from '../../src/common/free-port';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';

// The command line as a user meets it: `say` prints each step once and in
// order; a message comes from arguments, standard input or a file; piped
// `chat` answers every line, also lines that arrive while a turn runs;
// `pending` shows real ages; `approve` says what it approved; a command on a
// conversation no worker answers for fails within seconds and says why.

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
