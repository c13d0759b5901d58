import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { backofficeTools } from '../../src/demo/tools';
import { tool } from '../../src/tools/tool';
import { startHarness, type Harness } from '../support/harness';
import { runCli } from '../support/cli';
import { exportHistoryFixture } from '../support/fixture-export';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';
import { anEffectKeyOf } from '../support/effect-key-match';

// A tool that is not idempotent and does not report back (timed out, or its
// worker died) may or may not have acted: its call settles as effect_unknown,
// never as a plain failure the model would retry, and operators can list it.

const HEARTBEAT_MS = 3_000;

let h: Harness;
let scratch: string;
let ranSlow = 0;

const slowTools = [
  tool({
    name: 'wire_money',
    description: 'Send a bank transfer.',
    parameters: z.object({ amount_cents: z.number() }),
    idempotent: false,
    timeoutMs: 1_000,
    async execute() {
      ranSlow++;
      await sleep(3_000);
      return { wired: true };
    },
  }),
  tool({
    name: 'fetch_report',
    description: 'Build a report (reads only).',
    parameters: z.object({}),
    timeoutMs: 1_000,
    maxAttempts: 1,
    async execute() {
      await sleep(3_000);
      return { report: 'late' };
    },
  }),
];

beforeAll(async () => {
  h = await startHarness({ tools: [...backofficeTools(), ...slowTools] });
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-effect-unknown-'));
  await h.pool.query('CREATE TABLE letters (customer_id text NOT NULL, idempotency_key text NOT NULL)');
});
afterAll(async () => {
  await h?.stop();
  fs.rmSync(scratch, { recursive: true, force: true });
});

const toolContents = async (id: string) =>
  (await h.client.transcript(id)).flatMap(({ message: m }) =>
    m.role === 'tool' ? [JSON.parse(m.content) as Record<string, unknown>] : [],
  );

/** Conversations the UnknownEffects search attribute lists (visibility is eventually consistent: polled). */
const listedWithUnknownEffects = async (id: string): Promise<string[]> => {
  const found: string[] = [];
  for await (const execution of h.temporal.workflow.list({ query: `UnknownEffects > 0 AND WorkflowId = '${id}'` })) {
    found.push(execution.workflowId);
  }
  return found;
};

describe('calls whose effect is unknown', () => {
  it('a tool that is not idempotent and runs past its timeout settles as effect_unknown, is not retried, and the turn answers', async () => {
    const id = h.newConversationId('unknown-timeout');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_wire', name: 'wire_money', arguments: { amount_cents: 500 } }] },
      { content: 'I could not confirm the transfer.' },
    );
    const { turn, answer } = await h.client.ask(id, 'Wire 5.00');
    expect(turn.outcome).toBe('answered');
    expect(answer).toBe('I could not confirm the transfer.');
    expect(ranSlow).toBe(1);
    const [result] = await toolContents(id);
    expect(result).toMatchObject({ kind: 'effect_unknown', started: true });
    expect(String(result.error)).toMatch(/may or may not have taken effect.*Do not call it again before checking/);
    const state = await h.client.state(id);
    expect(state.unknownEffectsCount).toBe(1);
    expect(state.unknownEffects).toEqual([
      expect.objectContaining({
        toolCallId: 'call_wire',
        toolName: 'wire_money',
        callKey: `${id}/msg-1/call-0`,
        why: expect.stringMatching(/timeout of 1000 ms/),
      }),
    ]);
    await expect.poll(() => listedWithUnknownEffects(id), { timeout: 15_000, interval: 500 }).toEqual([id]);
    await exportHistoryFixture(h.temporal, id, 'effect-unknown-timeout');
    h.expectOnlyValidModelRequests();
  });

  it('an idempotent tool that times out is a plain tool_failed, and the conversation is not listed', async () => {
    const id = h.newConversationId('failed-timeout');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_report', name: 'fetch_report', arguments: {} }] },
      { content: 'The report timed out.' },
    );
    await h.client.ask(id, 'Build the report');
    const [result] = await toolContents(id);
    expect(result).toMatchObject({ kind: 'tool_failed' });
    const state = await h.client.state(id);
    expect(state.unknownEffectsCount).toBe(0);
    // The listing query works (the timed-out conversation above shows up); this one stays out of it.
    await sleep(1_500);
    expect(await listedWithUnknownEffects(id)).toEqual([]);
  });

  const WORKER_GONE = /heartbeat timeout|its worker stopped while it ran/;

  it('a worker killed while a tool that is not idempotent runs: the call settles as effect_unknown, listed by the search attribute and the CLI', async () => {
    const marker = path.join(scratch, 'letter-running');
    const id = h.newConversationId('unknown-kill');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_letter', name: 'send_letter', arguments: { customer_id: 'cus_ada' } }] },
      { content: 'The letter may have gone out; please check before sending another.' },
    );
    // Only the worker processes serve this conversation's task queue from here on.
    h.worker?.shutdown();
    const env = h.workerEnv({
      AGENT_TOOLS_MODULE: path.join(__dirname, '..', 'support', 'unknown-effect-tools.ts'),
      LETTER_MARKER_FILE: marker,
    });
    let worker: WorkerProcess | undefined = await startWorkerProcess(env);
    try {
      const messageId = await h.client.sendMessage(id, 'Send Ada a letter', {
        input: { timeouts: { heartbeatMs: HEARTBEAT_MS } },
      });
      await expect.poll(() => fs.existsSync(marker), { timeout: 20_000 }).toBe(true);
      await worker.stop('SIGKILL');
      worker = await startWorkerProcess(env);
      const turn = await h.client.waitForTurn(id, messageId, 60_000);
      expect(turn.outcome).toBe('answered');
      const [result] = await toolContents(id);
      expect(result).toMatchObject({ kind: 'effect_unknown', started: true });
      // Either way of noticing the kill may come first: the heartbeat timeout, or the lost-worker takeover.
      expect(String(result.error)).toMatch(WORKER_GONE);
      // The letter went out once, and nothing ran it again.
      const letters = await h.pool.query('SELECT idempotency_key FROM letters');
      expect(letters.rows).toEqual([{ idempotency_key: anEffectKeyOf(`${id}/msg-1/call-0`) }]);
      await expect.poll(() => listedWithUnknownEffects(id), { timeout: 15_000, interval: 500 }).toEqual([id]);
      const { stdout } = await runCli(['unknown-effects'], {
        TEMPORAL_ADDRESS: h.temporalAddress,
        DATABASE_URL: h.databaseUrl,
        TEMPORAL_TASK_QUEUE: h.taskQueue,
      });
      expect(stdout).toContain(`${id}  1 call(s) with unknown effect`);
      expect(stdout).toMatch(
        new RegExp(`call_letter\\s+send_letter\\s+key ${id}/msg-1/call-0 .*(${WORKER_GONE.source})`),
      );
      h.expectOnlyValidModelRequests();
    } finally {
      await worker?.stop('SIGKILL');
    }
  });
});
