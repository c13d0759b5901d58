import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/common/free-port';
import { startDevServer, type DevServer } from '../../src/app/temporal-server';
import { backofficeTools } from '../../src/demo/tools';
import { tool } from '../../src/tools/tool';
import { startHarness, type Harness } from '../support/harness';
import { effectKeyOf } from '../support/effect-keys';

// The Temporal dev server stopped and started again on the same SQLite file
// while conversations are in flight; they carry on when it is back.

let server: DevServer;
let h: Harness;
let dir: string;
let port: number;
let slowRuns = 0;

const restartServer = async (downMs = 1_000): Promise<void> => {
  await server.stop();
  await new Promise((resolve) => setTimeout(resolve, downMs));
  server = await startDevServer({ dbFilename: path.join(dir, 'temporal.sqlite'), port });
};

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-restart-'));
  port = await freePort();
  server = await startDevServer({ dbFilename: path.join(dir, 'temporal.sqlite'), port });
  h = await startHarness({
    temporalAddress: server.address,
    tools: [
      ...backofficeTools(),
      tool({
        name: 'slow_report',
        description: 'A report that takes a few seconds.',
        parameters: z.object({}),
        async execute() {
          slowRuns++;
          await new Promise((resolve) => setTimeout(resolve, 4_000));
          return 'report ready';
        },
      }),
    ],
  });
});
afterAll(async () => {
  await h?.stop();
  await server?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('a Temporal server restart', () => {
  it('while a conversation waits for approval: the decision made after the restart is applied and the turn finishes', async () => {
    const id = h.newConversationId('restart-approval');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_big',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 12_345, reason: 'restart' },
          },
        ],
      },
      { content: 'Refund issued after the restart.' },
    );
    const messageId = await h.client.sendMessage(id, 'Refund across a restart');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);

    await restartServer();
    await expect
      .poll(async () => (await h.client.state(id).catch(() => undefined))?.pendingApprovals.length, {
        timeout: 60_000,
        interval: 500,
      })
      .toBe(1);
    await h.client.decide(id, { decision: 'approve', decidedBy: 'ops' });
    const turn = await h.client.waitForTurn(id, messageId, 60_000);
    expect(turn.outcome).toBe('answered');
    const refunds = await h.pool.query('SELECT amount_cents FROM refunds WHERE idempotency_key = $1', [
      await effectKeyOf(h.pool, id, 'call_big'),
    ]);
    expect(refunds.rows).toEqual([{ amount_cents: 12_345 }]);
    h.expectOnlyValidModelRequests();
  });

  it('while a tool runs: the conversation finishes once the server is back', async () => {
    const id = h.newConversationId('restart-tool');
    slowRuns = 0;
    h.model.enqueue(
      { toolCalls: [{ id: 'call_slow', name: 'slow_report', arguments: {} }] },
      { content: 'Here is the report.' },
    );
    const messageId = await h.client.sendMessage(id, 'Slow report across a restart', {
      input: { timeouts: { heartbeatMs: 3_000 } },
    });
    await expect.poll(() => slowRuns, { timeout: 20_000 }).toBe(1);

    await restartServer();
    const turn = await h.client.waitForTurn(id, messageId, 90_000);
    expect(turn.outcome).toBe('answered');
    const tools = (await h.client.transcript(id)).map((m) => m.message).filter((m) => m.role === 'tool');
    expect(tools).toEqual([{ role: 'tool', tool_call_id: 'call_slow', content: 'report ready' }]);
    console.log(`server restart during a tool: the tool ran ${slowRuns} time(s)`);
    h.expectOnlyValidModelRequests();
  });
});
