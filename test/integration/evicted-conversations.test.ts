import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';

// A conversation waiting days for a person should cost the worker nothing:
// with a bounded cache, the worker drops the least recently active ones and
// rebuilds each from its history when a decision arrives.

const CACHE = 2;
const WAITING = 5;

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ maxCachedConversations: CACHE });
});
afterAll(async () => {
  await h?.stop();
});

describe('conversations evicted from the worker cache', () => {
  it('more conversations wait for approval than the cache holds; each is rebuilt when approved, runs its tool once and answers', async () => {
    const ids = Array.from({ length: WAITING }, (_, i) => h.newConversationId(`evicted-${i}`));
    // Each turn's first model request asks for a refund over the approval threshold; each second one answers.
    h.model.setResponder((request) => {
      const messages = (request.body as { messages: { role: string; content?: string }[] }).messages;
      const user = messages.find((m) => m.role === 'user')?.content ?? '';
      const order = /ord_\d+/.exec(user)?.[0] ?? 'ord_2001';
      if (messages.at(-1)?.role === 'tool') return { content: `Refund on ${order} done.` };
      return {
        toolCalls: [
          { name: 'issue_refund', arguments: { order_id: order, amount_cents: 10_001, reason: 'approved later' } },
        ],
      };
    });
    // Over the approval threshold, and refundable in full from each order: one from ord_1001, four from ord_2001.
    const orders = ['ord_1001', 'ord_2001', 'ord_2001', 'ord_2001', 'ord_2001'];
    const messageIds = await Promise.all(ids.map((id, i) => h.client.sendMessage(id, `Refund 110 on ${orders[i]}`)));
    for (const id of ids) {
      await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 30_000 }).toBe(1);
    }
    expect(h.worker?.getStatus().numCachedWorkflows).toBeLessThanOrEqual(CACHE);

    for (const id of ids) await h.client.decide(id, { decision: 'approve', decidedBy: 'ops' });
    const turns = await Promise.all(ids.map((id, i) => h.client.waitForTurn(id, messageIds[i], 60_000)));
    expect(turns.map((t) => t.outcome)).toEqual(ids.map(() => 'answered'));
    for (const id of ids) {
      const refunds = await h.pool.query('SELECT amount_cents FROM refunds WHERE idempotency_key LIKE $1', [`${id}/%`]);
      expect(refunds.rows).toEqual([{ amount_cents: 10_001 }]);
    }
    expect(h.worker?.getStatus().numCachedWorkflows).toBeLessThanOrEqual(CACHE);
    h.expectOnlyValidModelRequests();
  });
});
