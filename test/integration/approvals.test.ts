import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';
import { effectKeyOf } from '../support/effect-keys';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

type Wire = { role: string; tool_call_id?: string; content?: string };
const refund = (id: string, order: string, cents: number) => ({
  id,
  name: 'issue_refund',
  arguments: { order_id: order, amount_cents: cents, reason: 'damaged' },
});
const refundedCents = async (orderId: string): Promise<number> =>
  (await h.pool.query('SELECT refunded_cents FROM orders WHERE id = $1', [orderId])).rows[0].refunded_cents;
const waitForPending = async (id: string, count: number) => {
  await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(count);
  return h.client.state(id);
};
const toolMessages = async (id: string) =>
  (await h.client.transcript(id))
    .map((m) => m.message)
    .filter((m): m is Extract<typeof m, { role: 'tool' }> => m.role === 'tool');

describe('the approval gate', () => {
  it('rejecting a batch of three parallel tool calls answers all three and the next model call is accepted', async () => {
    const id = h.newConversationId('reject-all');
    h.model.enqueue(
      {
        toolCalls: [
          refund('call_r1', 'ord_1001', 11_000),
          refund('call_r2', 'ord_2001', 20_000),
          refund('call_r3', 'ord_2001', 15_000),
        ],
      },
      { content: 'Understood, no refunds.' },
    );
    const messageId = await h.client.sendMessage(id, 'Refund three big orders');
    const waiting = await waitForPending(id, 3);
    expect(waiting.status).toBe('awaiting_approval');

    const result = await h.client.decide(id, {
      decision: 'reject',
      reason: 'over budget',
      decidedBy: 'ops@example.com',
    });
    expect(result).toMatchObject({ applied: true, toolCallIds: ['call_r1', 'call_r2', 'call_r3'] });
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn.outcome).toBe('answered');

    const tools = await toolMessages(id);
    expect(tools.map((t) => t.tool_call_id)).toEqual(['call_r1', 'call_r2', 'call_r3']);
    for (const t of tools) expect(JSON.parse(t.content)).toMatchObject({ kind: 'rejected', reason: 'over budget' });
    const next = h.requestsFor('Refund three big orders')[1].messages as Wire[];
    expect(next.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'tool']);
    h.expectOnlyValidModelRequests();
    expect(await refundedCents('ord_2001')).toBe(0);

    const records = await h.pool.query(
      'SELECT decision, tool_call_ids, reason, decided_by, via FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [id],
    );
    expect(records.rows).toEqual([
      {
        decision: 'reject',
        tool_call_ids: ['call_r1', 'call_r2', 'call_r3'],
        reason: 'over budget',
        decided_by: 'ops@example.com',
        via: 'update',
      },
    ]);
  });

  it('approving one and rejecting two: one runs, two are rejected, the model continues', async () => {
    const id = h.newConversationId('mixed');
    h.model.enqueue(
      {
        toolCalls: [
          refund('call_m1', 'ord_1001', 10_500),
          refund('call_m2', 'ord_1001', 10_600),
          refund('call_m3', 'ord_1001', 10_700),
        ],
      },
      { content: 'One refund issued.' },
    );
    const messageId = await h.client.sendMessage(id, 'Refund ord_1001 three ways');
    await waitForPending(id, 3);
    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_m2', decidedBy: 'ops' });
    await h.client.signalDecision(id, { decision: 'reject', toolCallId: 'call_m1', reason: 'duplicate' });
    await h.client.signalDecision(id, { decision: 'reject', toolCallId: 'call_m3', reason: 'duplicate' });
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn.outcome).toBe('answered');

    const tools = await toolMessages(id);
    expect(tools.map((t) => [t.tool_call_id, JSON.parse(t.content).kind ?? 'ok'])).toEqual([
      ['call_m1', 'rejected'],
      ['call_m2', 'ok'],
      ['call_m3', 'rejected'],
    ]);
    expect(JSON.parse(tools[1].content)).toMatchObject({ order_id: 'ord_1001', amount_cents: 10_600 });
    expect(await refundedCents('ord_1001')).toBe(10_600);
    h.expectOnlyValidModelRequests();
  });

  it('an approval that times out settles as approval_timeout and the loop continues', async () => {
    const id = h.newConversationId('timeout');
    h.model.enqueue({ toolCalls: [refund('call_t1', 'ord_3001', 15_000)] }, { content: 'No decision came.' });
    const { turn } = await h.client.ask(id, 'Refund after a timeout', { input: { approvalTimeoutMs: 1_500 } });
    expect(turn.outcome).toBe('answered');
    const tools = await toolMessages(id);
    expect(tools.map((t) => [t.tool_call_id, JSON.parse(t.content).kind])).toEqual([['call_t1', 'approval_timeout']]);
    expect((await h.client.state(id)).pendingApprovals).toEqual([]);
    h.expectOnlyValidModelRequests();
  });

  it('a decision for an unknown id via the update is refused with a clear error, and nothing changes', async () => {
    const id = h.newConversationId('unknown');
    h.model.enqueue({ toolCalls: [refund('call_u1', 'ord_2001', 12_000)] }, { content: 'Rejected then.' });
    const messageId = await h.client.sendMessage(id, 'Refund with a typo in the decision');
    await waitForPending(id, 1);
    await expect(h.client.decide(id, { decision: 'approve', toolCallId: 'call_typo' })).rejects.toThrow(
      /No tool call "call_typo" is pending/,
    );
    const state = await h.client.state(id);
    expect(state.pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_u1']);
    expect(state.decisionsApplied).toBe(0);
    await h.client.decide(id, { decision: 'reject', toolCallId: 'call_u1' });
    await h.client.waitForTurn(id, messageId);
    await expect(h.client.decide(id, { decision: 'approve', toolCallId: 'call_u1' })).rejects.toThrow(
      /No tool call "call_u1" is pending|already settled/,
    );
    h.expectOnlyValidModelRequests();
  });

  it('the same decision sent twice is applied once', async () => {
    const id = h.newConversationId('twice');
    h.model.enqueue(
      { toolCalls: [refund('call_d1', 'ord_2001', 12_500), refund('call_d2', 'ord_2001', 12_600)] },
      { content: 'Done.' },
    );
    const messageId = await h.client.sendMessage(id, 'Refund twice decided');
    await waitForPending(id, 2);
    const decision = { decisionId: 'decision-42', decision: 'approve' as const, toolCallId: 'call_d1' };
    await h.client.signalDecision(id, decision);
    await h.client.signalDecision(id, decision);
    const again = await h.client.decide(id, decision);
    expect(again).toEqual({ decisionId: 'decision-42', applied: false, toolCallIds: ['call_d1'] });
    await h.client.decide(id, { decision: 'reject', toolCallId: 'call_d2' });
    await h.client.waitForTurn(id, messageId);
    expect(await refundedCents('ord_2001')).toBe(12_500);
    const records = await h.pool.query(
      'SELECT decision_id FROM durable_agent.approval_decisions WHERE conversation_id = $1 ORDER BY decided_at',
      [id],
    );
    expect(records.rows.map((r) => r.decision_id)).toHaveLength(2);
    expect((await h.client.state(id)).decisionsApplied).toBe(2);
  });

  it('calls that need no approval run at once, while the others wait for a person', async () => {
    const id = h.newConversationId('mixed-needs');
    h.model.enqueue(
      {
        toolCalls: [
          refund('call_big', 'ord_2001', 13_000),
          { id: 'call_find', name: 'find_customer', arguments: { query: 'Alan' } },
        ],
      },
      { content: 'Done.' },
    );
    const messageId = await h.client.sendMessage(id, 'Refund and look up');
    await waitForPending(id, 1);
    // The lookup finishes while the refund still waits for a person.
    await expect
      .poll(
        async () =>
          (
            await h.pool.query('SELECT 1 FROM durable_agent.tool_results WHERE idempotency_key = $1', [
              await effectKeyOf(h.pool, id, 'call_find'),
            ])
          ).rowCount,
      )
      .toBe(1);
    expect((await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_big']);
    await h.client.decide(id, { decision: 'reject', toolCallId: 'call_big' });
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
  });

  it('after an approved tool ran, the loop always continues to a final answer and the turn ends in a clear done state', async () => {
    const id = h.newConversationId('done');
    h.model.enqueue({ toolCalls: [refund('call_ok', 'ord_2001', 10_100)] }, { content: 'Refund of 101.00 issued.' });
    const messageId = await h.client.sendMessage(id, 'Refund 101 on ord_2001');
    await waitForPending(id, 1);
    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_ok' });
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn).toMatchObject({ outcome: 'answered', steps: 2 });
    const state = await h.client.state(id);
    expect(state).toMatchObject({ status: 'idle', pendingApprovals: [], runningToolCalls: [] });
    expect(state.lastError).toBeUndefined();
    expect(state.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    h.expectOnlyValidModelRequests();
  });

  it('the CLI lists a call waiting for approval (from the list in PostgreSQL) and approves it', async () => {
    const id = h.newConversationId('cli-pending');
    h.model.enqueue({ toolCalls: [refund('call_cli', 'ord_2001', 10_200)] }, { content: 'Approved refund issued.' });
    const messageId = await h.client.sendMessage(id, 'Refund through the CLI');
    await waitForPending(id, 1);
    const env = { ...h.temporalEnv, DATABASE_URL: h.databaseUrl, TEMPORAL_TASK_QUEUE: h.taskQueue };
    await expect
      .poll(async () => (await runCli(['pending'], env)).stdout, { timeout: 30_000, interval: 1_000 })
      .toContain(id);
    const { stdout } = await runCli(['pending'], env);
    expect(stdout).toMatch(new RegExp(`call_cli\\s+issue_refund\\(\\{"order_id":"ord_2001","amount_cents":10200`));
    expect(stdout).toContain(`key ${id}/msg-1/call-0`);

    expect((await runCli(['approve', id, 'call_cli', '--by', 'cli-test'], env)).stdout).toMatch(
      /^Approved as cli-test: issue_refund\(\{"order_id":"ord_2001","amount_cents":10200,[^)]*\}\) \[call_cli\]; it runs now\./,
    );
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    const refused = await runCli(['approve', id, 'call_cli'], env).catch((err: { stderr: string }) => err);
    expect((refused as { stderr: string }).stderr).toMatch(
      /Tool call "call_cli" is not waiting for approval in conversation cli-pending-\S+\. Nothing was decided; see "pending"\./,
    );
  });
});
