import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { tool, ToolError } from '../../src/tools/tool';
import { effectKeyOf } from '../support/effect-keys';
import { startHarness, type Harness } from '../support/harness';

// A tool whose effect an earlier attempt applied, and whose next attempt
// fails (its own system refusing the repeat, or any error before it reaches
// `context.once`): the effect is in the ledger, so the call reports the
// recorded result. Reporting the failure would tell the model the call did
// not run while its effect stands. (The chaos run at scale found this: a
// worker killed after the effect committed, and the retry failing.)

/** Attempts of `reserve_stock`, by effect key. */
const attempts = new Map<string, number>();

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    tools: [
      tool({
        name: 'reserve_stock',
        description: 'Reserve units of a SKU.',
        parameters: z.object({ sku: z.string(), fail: z.enum(['permanently', 'transiently']) }),
        maxAttempts: 3,
        timeoutMs: 2_000,
        async execute({ sku, fail }, context) {
          const attempt = (attempts.get(context.idempotencyKey) ?? 0) + 1;
          attempts.set(context.idempotencyKey, attempt);
          if (attempt === 1) {
            await context.once(async (tx) => {
              await tx.query('INSERT INTO ledger_test_reservations (idempotency_key, sku) VALUES ($1, $2)', [
                context.idempotencyKey,
                sku,
              ]);
              return { sku, reserved: 1 };
            });
            // The effect committed, and then the attempt is lost: it never answers, and times out.
            await sleep(30_000, undefined, { signal: context.signal }).catch(() => undefined);
            throw new Error('the attempt was abandoned');
          }
          // The retry: the warehouse refuses what it already did, before the tool reaches `once`.
          if (fail === 'permanently') throw new ToolError(`SKU ${sku} is already reserved.`);
          throw new Error('the warehouse timed out');
        },
      }),
    ],
  });
  await h.pool.query(
    'CREATE TABLE IF NOT EXISTS ledger_test_reservations (idempotency_key text NOT NULL, sku text NOT NULL)',
  );
});
afterAll(async () => {
  await h?.stop();
});

describe('a call whose effect is in the ledger', () => {
  it.each([
    ['fails for good on its retry', 'permanently'],
    ['fails on its retry with an error a retry could fix', 'transiently'],
  ] as const)('and that %s reports the recorded result, with the effect applied once', async (_what, fail) => {
    const id = h.newConversationId('ledger-failure');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_reserve', name: 'reserve_stock', arguments: { sku: `gear-${fail}`, fail } }] },
      { content: 'Reserved.' },
    );
    const answer = await h.client.ask(id, `Reserve gear-${fail}`);
    expect(answer.turn.outcome).toBe('answered');
    const key = (await effectKeyOf(h.pool, id, 'call_reserve'))!;
    expect(attempts.get(key)).toBe(2);
    const tool = (await h.client.transcript(id)).map((m) => m.message).find((m) => m.role === 'tool')!;
    expect(JSON.parse((tool as { content: string }).content)).toEqual({ sku: `gear-${fail}`, reserved: 1 });
    const rows = await h.pool.query('SELECT sku FROM ledger_test_reservations WHERE idempotency_key = $1', [key]);
    expect(rows.rows).toEqual([{ sku: `gear-${fail}` }]);
    h.expectOnlyValidModelRequests();
  });
});
