import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/contract/messages';
import { readSuperseded } from '../../src/db/transcript-store';
import { pairingProblemsOf } from '../support/pairing';
import { startHarness, type Harness } from '../support/harness';
import { anEffectKeyOf } from '../support/effect-key-match';
import * as reset from '../support/temporal-reset';

// `temporal workflow reset` as operators use it, on the real dev server: the workflow's history goes back to a
// workflow task, PostgreSQL does not. After it, the transcript the model reads and the one readers show are the new
// run's, what the abandoned run wrote past the reset point is kept as superseded, the ledger never answers a call
// with another call's result, and no effect runs twice for the same call.

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const historyOf = (id: string) => reset.historyOf(h, id);
const resetTo = (id: string, eventId: number) => reset.resetTo(h, id, eventId);
const waitForTurns = (id: string, turns: number) => reset.waitForTurns(h, id, turns);
const waitForApproval = (id: string) => reset.waitForApproval(h, id);
const { taskSchedulingModelCall, lastTask } = reset;

const live = async (id: string): Promise<ChatMessage[]> => (await h.client.transcript(id)).map((m) => m.message);

function expectPaired(messages: ChatMessage[]): void {
  expect(pairingProblemsOf(messages)).toEqual([]);
}

const refundsOf = async (id: string) =>
  (
    await h.pool.query<{ amount_cents: number; idempotency_key: string }>(
      'SELECT amount_cents, idempotency_key FROM refunds WHERE idempotency_key LIKE $1 ORDER BY id',
      [`${id}/%`],
    )
  ).rows;
const ledgerOf = async (id: string) =>
  (
    await h.pool.query<{ idempotency_key: string }>(
      'SELECT idempotency_key FROM durable_agent.tool_ledger WHERE idempotency_key LIKE $1 ORDER BY created_at',
      [`${id}/%`],
    )
  ).rows.map((r) => r.idempotency_key);

const refund = (cents: number) => ({
  name: 'issue_refund',
  arguments: { order_id: 'ord_2001', amount_cents: cents, reason: `reset test ${cents}` },
});

/** Turn 1 answers, turn 2 refunds `cents` and answers: the conversation a reset goes back in. */
async function twoTurns(id: string, cents: number): Promise<void> {
  h.model.enqueue({ content: 'Hello.' });
  await h.client.ask(id, 'Hi');
  h.model.enqueue({ toolCalls: [refund(cents)] }, { content: `Refunded ${cents} cents.` });
  const { turn } = await h.client.ask(id, `Refund ${cents} cents on ord_2001`);
  expect(turn.outcome).toBe('answered');
}

describe('Temporal reset of a conversation', () => {
  it('to before a refund that ran, the new run asking for other arguments: both refunds are true, the transcript is the new run’s', async () => {
    const id = h.newConversationId('reset-other');
    await twoTurns(id, 1);
    const before = await live(id);

    h.model.enqueue({ toolCalls: [refund(2)] }, { content: 'Refunded 2 cents.' });
    await resetTo(id, taskSchedulingModelCall(await historyOf(id), 2));
    await waitForTurns(id, 2);

    // The 2-cent call ran for real under a key of its own; the 1-cent refund that happened stays in the ledger.
    expect((await refundsOf(id)).map((r) => [r.amount_cents, r.idempotency_key])).toEqual([
      [1, anEffectKeyOf(`${id}/msg-3/call-0`)],
      [2, anEffectKeyOf(`${id}/msg-3/call-0`)],
    ]);
    const ledger = await ledgerOf(id);
    expect(ledger).toHaveLength(2);
    expect(new Set(ledger).size).toBe(2);

    const after = await live(id);
    expectPaired(after);
    expect(after.slice(0, 3)).toEqual(before.slice(0, 3));
    expect(after.at(-1)).toMatchObject({ role: 'assistant', content: 'Refunded 2 cents.' });
    const tool = after.find((m) => m.role === 'tool');
    expect(JSON.parse(tool!.content as string)).toMatchObject({ amount_cents: 2 });
    // What the abandoned run wrote past the reset point is kept, readable, and out of the live transcript.
    const superseded = await h.client.superseded(id);
    expect(superseded.map((m) => [m.seq, m.reason])).toEqual([
      [3, 'reset'],
      [4, 'reset'],
      [5, 'reset'],
    ]);
    expect(JSON.parse(superseded[1].message.content as string)).toMatchObject({ amount_cents: 1 });
    expect(superseded[2].message).toMatchObject({ content: 'Refunded 1 cents.' });
    h.expectOnlyValidModelRequests();
  });

  it('to before a refund that ran, the new run asking the same: one refund, reported from the ledger', async () => {
    const id = h.newConversationId('reset-same');
    await twoTurns(id, 3);

    h.model.enqueue({ toolCalls: [refund(3)] }, { content: 'Refunded 3 cents (again asked).' });
    await resetTo(id, taskSchedulingModelCall(await historyOf(id), 2));
    await waitForTurns(id, 2);

    expect((await refundsOf(id)).map((r) => r.amount_cents)).toEqual([3]);
    expect(await ledgerOf(id)).toEqual([anEffectKeyOf(`${id}/msg-3/call-0`)]);
    const after = await live(id);
    expectPaired(after);
    expect(after.at(-1)).toMatchObject({ role: 'assistant', content: 'Refunded 3 cents (again asked).' });
    h.expectOnlyValidModelRequests();
  });

  it('to before a lookup, the new run looking up someone else: the tool runs and answers for them', async () => {
    const id = h.newConversationId('reset-lookup');
    h.model.enqueue({ content: 'Hello.' });
    await h.client.ask(id, 'Hi');
    h.model.enqueue({ toolCalls: [{ name: 'find_customer', arguments: { query: 'Ada' } }] }, { content: 'Found Ada.' });
    await h.client.ask(id, 'Find Ada');

    h.model.enqueue(
      { toolCalls: [{ name: 'find_customer', arguments: { query: 'Alan' } }] },
      { content: 'Found Alan.' },
    );
    await resetTo(id, taskSchedulingModelCall(await historyOf(id), 2));
    await waitForTurns(id, 2);

    const after = await live(id);
    expectPaired(after);
    const tool = after.find((m) => m.role === 'tool');
    expect(tool!.content).toContain('Alan Turing');
    expect(tool!.content).not.toContain('Ada Lovelace');
    h.expectOnlyValidModelRequests();
  });

  it('while a call waits: the new run waits on it, listed for approvers, and approving it refunds once', async () => {
    const id = h.newConversationId('reset-waiting');
    h.model.enqueue({ content: 'Hello.' });
    await h.client.ask(id, 'Hi');
    h.model.enqueue({ toolCalls: [{ id: 'call_big', ...refund(11_000) }] }, { content: 'Refunded 110.00.' });
    await h.client.sendMessage(id, 'Refund 110.00 on ord_2001');
    await waitForApproval(id);

    const runId = await resetTo(id, lastTask(await historyOf(id)));
    const state = await h.client.state(id);
    expect(state.status).toBe('awaiting_approval');
    expect(state.pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_big']);
    const listed = await h.client.waitingCalls({ conversationId: id });
    expect(listed.calls.map((c) => c.toolCallId)).toEqual(['call_big']);

    await h.client.decide(id, { toolCallId: 'call_big', decision: 'approve', decidedBy: 'ops' });
    await waitForTurns(id, 2);
    expect((await h.temporal.workflow.getHandle(id).describe()).runId).toBe(runId);
    expect((await refundsOf(id)).map((r) => r.amount_cents)).toEqual([11_000]);
    expectPaired(await live(id));
    expect(await readSuperseded(h.pool, h.tables, id)).toEqual([]);
    h.expectOnlyValidModelRequests();
  });

  it('to a task while a call waited that was approved after it: the decision is applied again, and the refund stays one', async () => {
    const id = h.newConversationId('reset-decided');
    h.model.enqueue({ content: 'Hello.' });
    await h.client.ask(id, 'Hi');
    h.model.enqueue({ toolCalls: [{ id: 'call_big', ...refund(12_000) }] }, { content: 'Refunded 120.00.' });
    await h.client.sendMessage(id, 'Refund 120.00 on ord_2001');
    await waitForApproval(id);
    const waitingTask = lastTask(await historyOf(id));
    await h.client.decide(id, { toolCallId: 'call_big', decision: 'approve', decidedBy: 'ops' });
    await waitForTurns(id, 2);

    h.model.enqueue({ content: 'Refunded 120.00 (after the reset).' });
    await resetTo(id, waitingTask);
    // Temporal applies the decision again in the new run (it reapplies signals and updates after the reset point);
    // the call runs again with the same arguments, and the ledger answers it.
    await waitForTurns(id, 2);
    expect((await refundsOf(id)).map((r) => r.amount_cents)).toEqual([12_000]);
    const after = await live(id);
    expectPaired(after);
    expect(after.at(-1)).toMatchObject({ role: 'assistant', content: 'Refunded 120.00 (after the reset).' });
    h.expectOnlyValidModelRequests();
  });

  it('of an idle conversation to its last workflow task: nothing changes, and the next message is answered', async () => {
    const id = h.newConversationId('reset-idle');
    await twoTurns(id, 4);
    const before = await live(id);

    await resetTo(id, lastTask(await historyOf(id)));
    expect(await live(id)).toEqual(before);
    h.model.enqueue({ content: 'Still here.' });
    const { answer } = await h.client.ask(id, 'Are you there?');
    expect(answer).toBe('Still here.');
    const after = await live(id);
    expect(after.slice(0, before.length)).toEqual(before);
    expectPaired(after);
    expect((await refundsOf(id)).map((r) => r.amount_cents)).toEqual([4]);
    expect(await readSuperseded(h.pool, h.tables, id)).toEqual([]);
    h.expectOnlyValidModelRequests();
  });
});
