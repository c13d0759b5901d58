import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalPolicy } from '../../src/policies/approval-policy';
import { exportHistoryFixture } from '../support/fixture-export';
import { startHarness, type Harness } from '../support/harness';

// Standing grants against a real worker, dev server and PostgreSQL: an approval that also grants later calls of the
// tool in the conversation, within a count, an amount or a time; a call a grant covers runs without waiting and says
// which grant let it; past its limits, or once revoked, calls wait for a person again.

const POLICY = approvalPolicy([{ name: 'refunds-ask', outcome: 'ask', tools: ['issue_refund'] }]);

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ approvalPolicy: POLICY });
});
afterAll(async () => {
  await h?.stop();
});

const refund = (id: string, cents: number, order = 'ord_2001') => ({
  toolCalls: [{ id, name: 'issue_refund', arguments: { order_id: order, amount_cents: cents, reason: 'late' } }],
});
const waitingIds = async (id: string) => (await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId);
const decisionRows = async (id: string) =>
  (
    await h.pool.query(
      `SELECT decision_id, decided_by, via, grant_id, grant_amount::float8 AS grant_amount, tool_call_ids
         FROM durable_agent.approval_decisions WHERE conversation_id = $1 ORDER BY decided_at, decision_id`,
      [id],
    )
  ).rows;

/** Sends a message whose model asks for one refund, and waits until the call waits for a person or the turn ends. */
async function askRefund(id: string, callId: string, cents: number, text: string): Promise<string> {
  h.model.enqueue(refund(callId, cents), { content: `Done with ${callId}.` });
  const messageId = await h.client.sendMessage(id, text);
  await expect
    .poll(async () => (await waitingIds(id)).includes(callId) || (await h.client.state(id)).status === 'idle')
    .toBe(true);
  return messageId;
}

describe('standing grants', () => {
  it("a grant of two calls covers the next two and not the third, each recorded as the grantor's decision naming the grant", async () => {
    const id = h.newConversationId('grant-count');
    const first = await askRefund(id, 'call_g0', 1_000, 'Refund 10');
    expect(await waitingIds(id)).toEqual(['call_g0']);
    const granting = await h.client.decide(id, {
      decisionId: 'grant-two',
      decision: 'approve',
      toolCallId: 'call_g0',
      decidedBy: 'bob@example.com',
      grant: { maxCalls: 2 },
    });
    expect(granting.applied).toBe(true);
    expect((await h.client.waitForTurn(id, first)).outcome).toBe('answered');
    expect((await h.client.state(id)).grants).toEqual([
      expect.objectContaining({
        id: 'grant-two',
        toolName: 'issue_refund',
        rule: 'refunds-ask',
        grantedBy: 'bob@example.com',
        maxCalls: 2,
        callsUsed: 0,
        live: true,
      }),
    ]);

    for (const [callId, text] of [
      ['call_g1', 'Refund 11'],
      ['call_g2', 'Refund 12'],
    ] as const) {
      const messageId = await askRefund(id, callId, 1_100, text);
      expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    }
    expect((await h.client.state(id)).grants?.[0]).toMatchObject({ callsUsed: 2, live: false });

    await askRefund(id, 'call_g3', 1_200, 'Refund 13');
    expect(await waitingIds(id)).toEqual(['call_g3']);
    await h.client.decide(id, { decision: 'reject', toolCallId: 'call_g3', reason: 'enough' });
    await expect.poll(async () => (await h.client.state(id)).status).toBe('idle');

    const rows = await decisionRows(id);
    expect(rows.map((r) => [r.decided_by, r.via, r.grant_id, r.tool_call_ids[0]])).toEqual([
      ['bob@example.com', 'update', null, 'call_g0'],
      ['bob@example.com', 'grant', 'grant-two', 'call_g1'],
      ['bob@example.com', 'grant', 'grant-two', 'call_g2'],
      [null, 'update', null, 'call_g3'],
    ]);
    const grantRow = (
      await h.pool.query('SELECT * FROM durable_agent.approval_grants WHERE conversation_id = $1', [id])
    ).rows;
    expect(grantRow).toEqual([
      expect.objectContaining({
        grant_id: 'grant-two',
        tool_name: 'issue_refund',
        granted_by: 'bob@example.com',
        max_calls: 2,
        rule: 'refunds-ask',
      }),
    ]);
    h.expectOnlyValidModelRequests();
    await exportHistoryFixture(h.temporal, id, 'grant-two-calls');

    // The audit export tells the same story: the approval that gave the grant, and each call it covered.
    const records = [];
    for await (const page of h.client.auditRecords({
      from: new Date(Date.now() - 3_600_000),
      to: new Date(Date.now() + 60_000),
    }))
      records.push(...page.filter((r) => r.conversationId === id));
    expect(records.map((r) => [r.kind, r.decidedBy, r.grantId, r.calls[0].toolCallId])).toEqual([
      ['decision', 'bob@example.com', null, 'call_g0'],
      ['grant', 'bob@example.com', 'grant-two', 'call_g1'],
      ['grant', 'bob@example.com', 'grant-two', 'call_g2'],
      ['decision', null, null, 'call_g3'],
    ]);
    expect(records[0].grantGiven).toMatchObject({
      toolName: 'issue_refund',
      rule: 'refunds-ask',
      maxCalls: 2,
      revokedAt: null,
    });
    expect(records[1].calls[0]).toMatchObject({ toolName: 'issue_refund', arguments: { amount_cents: 1_100 } });
  });

  it('an amount grant covers calls while their sum fits; a revoked grant covers nothing', async () => {
    const id = h.newConversationId('grant-amount');
    const first = await askRefund(id, 'call_a0', 500, 'Refund 5');
    await h.client.decide(id, {
      decisionId: 'grant-amount',
      decision: 'approve',
      toolCallId: 'call_a0',
      decidedBy: 'fiona@example.com',
      grant: { maxAmount: { argument: 'amount_cents', total: 5_000 }, expiresInMs: 3_600_000 },
    });
    expect((await h.client.waitForTurn(id, first)).outcome).toBe('answered');

    const covered = await askRefund(id, 'call_a1', 3_000, 'Refund 30');
    expect((await h.client.waitForTurn(id, covered)).outcome).toBe('answered');
    // 3,000 + 3,000 is over the 5,000 granted: this one waits.
    await askRefund(id, 'call_a2', 3_000, 'Refund 30 more');
    expect(await waitingIds(id)).toEqual(['call_a2']);
    await h.client.decide(id, { decision: 'reject', toolCallId: 'call_a2' });
    await expect.poll(async () => (await h.client.state(id)).status).toBe('idle');
    expect((await h.client.state(id)).grants?.[0]).toMatchObject({
      amount: { argument: 'amount_cents', total: 5_000, used: 3_000 },
      live: true,
    });

    await h.client.revokeGrant(id, { grantId: 'grant-amount', revokedBy: 'fiona@example.com', reason: 'done' });
    await expect.poll(async () => (await h.client.state(id)).grants?.[0].live).toBe(false);
    expect((await h.client.state(id)).grants?.[0]).toMatchObject({ revokedBy: 'fiona@example.com' });
    await askRefund(id, 'call_a3', 100, 'Refund 1');
    expect(await waitingIds(id)).toEqual(['call_a3']);
    await h.client.decide(id, { decision: 'reject', toolCallId: 'call_a3' });
    await expect
      .poll(
        async () =>
          (
            await h.pool.query('SELECT revoked_by FROM durable_agent.approval_grants WHERE grant_id = $1', [
              'grant-amount',
            ])
          ).rows[0]?.revoked_by,
      )
      .toBe('fiona@example.com');
    const rows = await decisionRows(id);
    expect(rows.filter((r) => r.via === 'grant').map((r) => [r.tool_call_ids[0], r.grant_amount])).toEqual([
      ['call_a1', 3_000],
    ]);
  });

  it('a grant goes with an approval only: on a rejection it is refused, nothing decided', async () => {
    const id = h.newConversationId('grant-refused');
    await askRefund(id, 'call_r0', 700, 'Refund 7');
    const onReject = await h.client
      .decide(id, { decision: 'reject', toolCallId: 'call_r0', grant: { maxCalls: 1 } } as never)
      .catch((e: unknown) => (e as Error).message);
    expect(onReject).toContain('"grant" goes with an "approve" decision only');
    await h.client.decide(id, { decision: 'reject', toolCallId: 'call_r0' });
  });
});
