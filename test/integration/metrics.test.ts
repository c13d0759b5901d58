import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/common/free-port';
import { AGENT_METRICS } from '../../src/contract/metrics';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

// The standalone worker serves the SDK's metrics and the agent's own in
// Prometheus format on AGENT_METRICS_ADDRESS; one turn with an approval moves
// the agent's counts, and no label carries a conversation id.

let h: Harness;
let worker: WorkerProcess | undefined;
let metricsAddress: string;

beforeAll(async () => {
  h = await startHarness({ worker: false });
  metricsAddress = `127.0.0.1:${await freePort()}`;
  worker = await startWorkerProcess({
    ...h.workerEnv({ OPENAI_MODEL: 'scripted-model' }),
    AGENT_METRICS_ADDRESS: metricsAddress,
    AGENT_MODEL_PRICES: JSON.stringify({ 'scripted-model': { input: 2, output: 8 } }),
  });
});
afterAll(async () => {
  await worker?.stop('SIGKILL');
  await h?.stop();
});

const scrape = async (): Promise<string> => {
  const response = await fetch(`http://${metricsAddress}/metrics`);
  expect(response.status).toBe(200);
  return response.text();
};

/** The sum of the samples of `name` whose labels include `labels`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) total += Number(match[3]);
  }
  return total;
}

describe('metrics', () => {
  it("serves the SDK's and the agent's metrics, and one turn with an approval moves the agent's counts", async () => {
    const before = await scrape();
    const id = h.newConversationId('metrics');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_m1',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 10_500, reason: 'damaged' },
          },
        ],
      },
      { content: 'Refunded.' },
    );
    const messageId = await h.client.sendMessage(id, 'Refund 105 dollars on ord_1001');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    // The gauge counts through visibility, every 15 s.
    await expect
      .poll(async () => sample(await scrape(), AGENT_METRICS.conversationsAwaitingApproval.name, { waited: 'any' }), {
        timeout: 40_000,
        interval: 1_000,
      })
      .toBeGreaterThanOrEqual(1);

    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_m1', decidedBy: 'ops@example.com' });
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');

    const delta = (text: string, name: string, labels: Record<string, string> = {}) =>
      sample(text, name, labels) - sample(before, name, labels);
    await expect
      .poll(async () => delta(await scrape(), AGENT_METRICS.turns.name, { outcome: 'answered' }), { timeout: 10_000 })
      .toBe(1);
    const after = await scrape();
    expect(delta(after, AGENT_METRICS.modelCalls.name, { model: 'scripted-model', outcome: 'ok' })).toBe(2);
    expect(delta(after, `${AGENT_METRICS.modelLatency.name}_count`, { model: 'scripted-model', outcome: 'ok' })).toBe(
      2,
    );
    expect(delta(after, AGENT_METRICS.modelTokens.name, { model: 'scripted-model', kind: 'prompt' })).toBeGreaterThan(
      0,
    );
    const completion = delta(after, AGENT_METRICS.modelTokens.name, { model: 'scripted-model', kind: 'completion' });
    expect(completion).toBeGreaterThan(0);
    // $2 and $8 per million tokens: two and eight millionths of a dollar per token.
    const prompt = delta(after, AGENT_METRICS.modelTokens.name, { model: 'scripted-model', kind: 'prompt' });
    expect(delta(after, AGENT_METRICS.modelCost.name, { model: 'scripted-model' })).toBe(2 * prompt + 8 * completion);
    expect(delta(after, AGENT_METRICS.toolRuns.name, { tool: 'issue_refund', outcome: 'ok' })).toBe(1);
    expect(delta(after, `${AGENT_METRICS.toolLatency.name}_count`, { tool: 'issue_refund', outcome: 'ok' })).toBe(1);
    expect(delta(after, AGENT_METRICS.toolCalls.name, { tool: 'issue_refund', outcome: 'ok' })).toBe(1);
    expect(delta(after, AGENT_METRICS.approvalDecisions.name, { tool: 'issue_refund', decision: 'approve' })).toBe(1);
    expect(delta(after, `${AGENT_METRICS.approvalWait.name}_count`, { decision: 'approve' })).toBe(1);
    // The agent's own buckets: a person's answer may take days.
    expect(after).toMatch(/^agent_approval_wait_bucket\{[^}]*le="604800000"\} /m);
    expect(after).toMatch(/^agent_model_call_latency_bucket\{[^}]*le="300000"\} /m);
    // The SDK's own: workflow and activity task latencies, slots, the sticky cache.
    expect(sample(after, 'temporal_workflow_task_execution_latency_count')).toBeGreaterThan(0);
    expect(sample(after, 'temporal_activity_execution_latency_count')).toBeGreaterThan(0);
    expect(after).toMatch(/^temporal_worker_task_slots_available\{/m);
    expect(after).toMatch(/^temporal_sticky_cache_size\{/m);
    // Labels come from small sets: no conversation, call or person.
    for (const value of [id, 'call_m1', 'ops@example.com', messageId]) expect(after).not.toContain(value);
  });

  it('the operating guide documents every metric of the catalog with its type and labels', () => {
    const guide = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'operating.md'), 'utf8');
    for (const m of Object.values(AGENT_METRICS)) {
      const row = guide.split('\n').find((line) => line.startsWith(`| \`${m.name}\` |`));
      expect(row, m.name).toBeDefined();
      expect(row).toContain(`| ${m.kind}`);
      for (const label of m.labels) expect(row, `${m.name} label ${label}`).toContain(`\`${label}\``);
    }
  });

  it('a second worker on the same metrics address stops before starting anything, naming the variable and the way out', async () => {
    const failed = await startWorkerProcess({
      ...h.workerEnv({ OPENAI_MODEL: 'scripted-model' }),
      AGENT_METRICS_ADDRESS: metricsAddress,
    }).catch((err: Error) => err);
    expect(failed).toBeInstanceOf(Error);
    expect((failed as Error).message).toContain(
      `AGENT_METRICS_ADDRESS: ${metricsAddress} is in use by another process`,
    );
    expect((failed as Error).message).toContain('or to off for no metrics endpoint');
    expect((failed as Error).message).not.toContain('Durable agent worker is running.');
  });
});
