import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyOnce } from '../../src/activities/tools';
import { startHarness, type Harness } from '../support/harness';
import { effectKeyOf } from '../support/effect-keys';
import { anEffectKeyOf } from '../support/effect-key-match';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const refundedCents = async (orderId: string): Promise<number> =>
  (await h.pool.query('SELECT refunded_cents FROM orders WHERE id = $1', [orderId])).rows[0].refunded_cents;

describe('the refund tool applies its side effect once per tool call', () => {
  it('records the refund and its idempotency key in one transaction, and a retry gets the recorded result', async () => {
    const id = h.newConversationId();
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_refund_1',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 1500, reason: 'late delivery' },
          },
        ],
      },
      { content: 'Refunded 15.00.' },
    );
    await h.client.ask(id, 'Refund 15 on ord_2001');
    const key = (await effectKeyOf(h.pool, id, 'call_refund_1'))!;
    expect(key).toEqual(anEffectKeyOf(`${id}/msg-1/call-0`));

    const ledger = await h.pool.query(
      'SELECT tool_name, result FROM durable_agent.tool_ledger WHERE idempotency_key = $1',
      [key],
    );
    expect(ledger.rows).toEqual([
      { tool_name: 'issue_refund', result: expect.objectContaining({ order_id: 'ord_2001', amount_cents: 1500 }) },
    ]);
    const refunds = await h.pool.query('SELECT amount_cents FROM refunds WHERE idempotency_key = $1', [key]);
    expect(refunds.rows).toEqual([{ amount_cents: 1500 }]);
    expect(await refundedCents('ord_2001')).toBe(1500);

    // What an attempt retried after a crash does: the same key, the effect not applied again.
    let ranAgain = false;
    const replay = await applyOnce(h.pool, h.tables, key, 'issue_refund', async () => {
      ranAgain = true;
      return { order_id: 'ord_2001', amount_cents: 1500 };
    });
    expect(ranAgain).toBe(false);
    expect(replay).toEqual(ledger.rows[0].result);
    expect(await refundedCents('ord_2001')).toBe(1500);
  });

  it('two concurrent attempts with the same key apply the effect once and return the same result', async () => {
    const key = 'concurrent/call_x';
    let applied = 0;
    const effect = async (tx: import('pg').PoolClient) => {
      applied++;
      await tx.query("UPDATE orders SET refunded_cents = refunded_cents + 100 WHERE id = 'ord_3001'");
      await new Promise((resolve) => setTimeout(resolve, 200));
      return { applied_by: applied };
    };
    const [a, b] = await Promise.all([
      applyOnce(h.pool, h.tables, key, 'test', effect),
      applyOnce(h.pool, h.tables, key, 'test', effect),
    ]);
    expect(applied).toBe(1);
    expect(a).toEqual(b);
    expect(await refundedCents('ord_3001')).toBe(100);
  });

  it('an effect an attempt applied under the call key alone (a worker from before keys named the arguments) is not applied again', async () => {
    const callKey = `legacy-${h.newConversationId()}/msg-1/call-0`;
    await applyOnce(h.pool, h.tables, callKey, 'test', async () => ({ applied: 'by the old worker' }));
    let ranAgain = false;
    const result = await applyOnce(
      h.pool,
      h.tables,
      `${callKey}/args-0123456789abcdef`,
      'test',
      async () => {
        ranAgain = true;
        return { applied: 'by the upgraded worker' };
      },
      undefined,
      callKey,
    );
    expect(ranAgain).toBe(false);
    expect(result).toEqual({ applied: 'by the old worker' });
    const rows = await h.pool.query(
      'SELECT idempotency_key FROM durable_agent.tool_ledger WHERE idempotency_key LIKE $1',
      [`${callKey}%`],
    );
    expect(rows.rows).toEqual([{ idempotency_key: callKey }]);
  });
});
