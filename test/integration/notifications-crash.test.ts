import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionOptions, loadTemporalConnection } from '../../src/app/temporal-connection';
import { AgentClient } from '../../src/client/client';
import { freePort } from '../../src/common/free-port';
import { AGENT_METRICS } from '../../src/contract/metrics';
import { startEmbeddedPostgres, type EmbeddedPostgresServer } from '../../src/db/embedded-postgres';
import { createPool } from '../../src/db/pool';
import { startHarness, type Harness } from '../support/harness';
import { startTestReceiver, type TestReceiver } from '../support/webhook-receiver';
import { webhookPayloadProblem } from '../support/webhook-schema';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

// Webhooks are never lost: a worker process (npm start's entry, its endpoint
// from AGENT_WEBHOOK_URL and AGENT_WEBHOOK_SECRET) killed with SIGKILL while
// it posts an event leaves it in the outbox, and the next worker delivers it
// with the same id, which the (deduplicating) receiver handles once; an event
// written before PostgreSQL restarts is delivered once it is back. The
// delivery metrics count what happened.

const SECRET = randomBytes(32).toString('hex');

let h: Harness;
let receiver: TestReceiver;
const workers: WorkerProcess[] = [];
beforeAll(async () => {
  h = await startHarness({ worker: false });
  receiver = await startTestReceiver({ k1: SECRET });
});
afterAll(async () => {
  for (const worker of workers) await worker.stop('SIGKILL');
  await h?.stop();
  await receiver?.close();
});

/** A worker process of the harness (or of `databaseUrl` and `taskQueue`), delivering to the receiver. */
async function startWorker(extra: Record<string, string> = {}): Promise<WorkerProcess> {
  const worker = await startWorkerProcess(
    h.workerEnv({ AGENT_WEBHOOK_URL: receiver.url, AGENT_WEBHOOK_SECRET: `k1:${SECRET}`, ...extra }),
  );
  workers.push(worker);
  return worker;
}

/** The events the receiver handled for conversation `id`, as `type id`. */
const handledFor = (id: string): string[] =>
  receiver.handled.filter((e) => e.conversationId === id).map((e) => `${e.type} ${e.id}`);

/** The events the outbox of `pool` holds for conversation `id`, as `type id`, in order. */
async function outboxOf(pool: Pool, id: string): Promise<string[]> {
  const { rows } = await pool.query<{ type: string; event_id: string }>(
    'SELECT type, event_id FROM durable_agent.notification_outbox WHERE conversation_id = $1 ORDER BY id',
    [id],
  );
  return rows.map((r) => `${r.type} ${r.event_id}`);
}

describe('webhooks across crashes', () => {
  it('a worker killed while it posts an event: the next worker delivers it with the same id, handled once', async () => {
    const metricsAddress = `127.0.0.1:${await freePort()}`;
    receiver.mode = 'hold'; // the first attempt is under way, unanswered, when the worker dies
    const first = await startWorker();
    const id = h.newConversationId('notify-kill');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_k',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'k' },
          },
        ],
      },
      { content: 'Refunded after the crash.' },
    );
    const messageId = await h.client.sendMessage(id, 'Refund across a crash');
    await expect.poll(() => receiver.held(), { timeout: 30_000 }).toBe(1);
    const [waiting] = await outboxOf(h.pool, id);
    expect(waiting).toMatch(/^call\.waiting /);
    expect(receiver.deliveries.at(-1)!.headers['agent-webhook-id']).toBe(waiting.split(' ')[1]);

    await first.stop('SIGKILL');
    receiver.mode = 'ok';
    const second = await startWorker({ AGENT_METRICS_ADDRESS: metricsAddress });
    // Its claim held until the lease ran out (the attempt's timeout and 5 s), then the new worker posts it.
    await expect.poll(() => handledFor(id), { timeout: 60_000 }).toEqual([waiting]);
    const attempts = receiver.deliveries.filter((d) => d.headers['agent-webhook-id'] === waiting.split(' ')[1]);
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    expect(new Set(attempts.map((d) => d.body)).size).toBe(1);

    await h.client.decide(id, { decision: 'approve', decidedBy: 'ops' });
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    await expect.poll(() => handledFor(id)).toEqual(await outboxOf(h.pool, id));
    expect(handledFor(id).map((e) => e.split(' ')[0])).toEqual([
      'call.waiting',
      'call.decided',
      'turn.ended_after_wait',
    ]);

    // The new worker counted its deliveries, and nothing waits for the endpoint.
    const metric = async (name: string, labels: Record<string, string>) =>
      sample(await (await fetch(`http://${metricsAddress}/metrics`)).text(), name, labels);
    await expect
      .poll(() => metric(AGENT_METRICS.webhookDeliveries.name, { endpoint: 'webhook', outcome: 'delivered' }))
      .toBeGreaterThanOrEqual(2);
    await expect
      .poll(() => metric(AGENT_METRICS.webhookUndelivered.name, { endpoint: 'webhook', state: 'pending' }), {
        timeout: 30_000,
      })
      .toBe(0);
    expect(second.output()).not.toMatch(/"level":50/);
    await second.stop();
  });

  describe('a PostgreSQL restart', () => {
    let dataDir: string;
    let pg: EmbeddedPostgresServer;
    let pool: Pool;
    let client: AgentClient;
    beforeAll(async () => {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-notify-pg-'));
      fs.chmodSync(dataDir, 0o755);
      pg = await startEmbeddedPostgres({
        dataDir: path.join(dataDir, 'cluster'),
        database: 'notify',
        ephemeral: false,
      });
      pool = createPool(pg.databaseUrl, 2);
    }, 120_000);
    afterAll(async () => {
      await client?.close();
      await pool?.end();
      await pg?.stop().catch(() => undefined);
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it('an event written before PostgreSQL restarts is delivered once it is back, and the next one after it', async () => {
      const taskQueue = `notify-pg-${randomUUID()}`;
      receiver.mode = 'fail';
      const worker = await startWorker({ DATABASE_URL: pg.databaseUrl, TEMPORAL_TASK_QUEUE: taskQueue });
      client = await AgentClient.connect({
        temporalAddress: h.temporalAddress,
        ...connectionOptions(loadTemporalConnection(h.temporalEnv)),
        databaseUrl: pg.databaseUrl,
        taskQueue,
      });
      const id = h.newConversationId('notify-pg');
      h.model.enqueue(
        {
          toolCalls: [
            {
              id: 'call_p',
              name: 'issue_refund',
              arguments: { order_id: 'ord_2001', amount_cents: 13_000, reason: 'p' },
            },
          ],
        },
        { content: 'Refunded after the restart.' },
      );
      const messageId = await client.sendMessage(id, 'Refund across a database restart');
      await expect.poll(async () => (await outboxOf(pool, id)).length, { timeout: 30_000 }).toBe(1);
      await expect.poll(() => receiver.deliveries.some((d) => d.body.includes(id))).toBe(true);

      await pg.stop();
      await sleep(1_500);
      pg = await startEmbeddedPostgres({ dataDir: pg.dataDir, port: pg.port, database: 'notify', ephemeral: false });
      receiver.mode = 'ok';
      const [waiting] = await outboxOf(pool, id);
      await expect.poll(() => handledFor(id), { timeout: 60_000 }).toEqual([waiting]);

      await client.decide(id, { decision: 'approve', decidedBy: 'ops' });
      expect((await client.waitForTurn(id, messageId)).outcome).toBe('answered');
      await expect.poll(() => handledFor(id), { timeout: 30_000 }).toEqual(await outboxOf(pool, id));
      expect(handledFor(id).map((e) => e.split(' ')[0])).toEqual([
        'call.waiting',
        'call.decided',
        'turn.ended_after_wait',
      ]);
      expect(worker.output()).not.toMatch(/"level":50/);
      await worker.stop();
    });
  });

  it('every body matches docs/webhook-payload.schema.json', () => {
    const bodies = receiver.deliveries.map((d) => JSON.parse(d.body) as unknown);
    expect(bodies.length).toBeGreaterThanOrEqual(4);
    expect(bodies.map(webhookPayloadProblem).filter(Boolean)).toEqual([]);
  });
});

/** The sum of the samples of `name` whose labels include `labels`, in Prometheus text. */
function sample(text: string, name: string, labels: Record<string, string>): number {
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
