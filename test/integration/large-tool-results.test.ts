import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tool } from '../../src/tools/tool';
import { historyEventSizes } from '../support/history';
import { startHarness, type Harness } from '../support/harness';
import { effectKeyOf } from '../support/effect-keys';

const BIG = Array.from({ length: 2000 }, (_, i) => `line ${i}: ${'ledger entry '.repeat(2)}`).join('\n');

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    inlineResultLimit: 4096,
    tools: [
      tool({
        name: 'export_ledger',
        description: 'Export the whole ledger as text.',
        parameters: z.object({}),
        execute: () => BIG,
      }),
    ],
  });
});
afterAll(async () => {
  await h?.stop();
});

describe('large tool results', () => {
  it('are stored in PostgreSQL, carried through history as a preview, and sent to the model in full', async () => {
    expect(BIG.length).toBeGreaterThan(50_000);
    const id = h.newConversationId();
    h.model.enqueue(
      { toolCalls: [{ id: 'call_export', name: 'export_ledger', arguments: {} }] },
      { content: 'The ledger is long.' },
    );
    const { answer } = await h.client.ask(id, 'Export the ledger');
    expect(answer).toBe('The ledger is long.');

    const second = h.requestsFor('Export the ledger')[1].messages as { role: string; content: string }[];
    expect(second[2]).toMatchObject({ role: 'tool', tool_call_id: 'call_export', content: BIG });

    const stored = await h.pool.query('SELECT content FROM durable_agent.tool_results WHERE idempotency_key = $1', [
      await effectKeyOf(h.pool, id, 'call_export'),
    ]);
    expect(stored.rows[0].content).toBe(BIG);

    const events = await historyEventSizes(h.temporal, id);
    const total = events.reduce((sum, e) => sum + e.bytes, 0);
    expect(total).toBeLessThan(BIG.length / 5);
    const state = await h.client.state(id);
    expect(state.messages[2].contentLength).toBeLessThan(1000);
    h.expectOnlyValidModelRequests();
  });
});
