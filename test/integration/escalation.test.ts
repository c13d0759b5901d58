import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import type { ApiTokenConfig } from '../../src/api/tokens';
import { approvalPolicy } from '../../src/policies/approval-policy';
import { apiCaller, TEST_DECISION_KEY, token } from '../support/api';
import { exportHistoryFixture } from '../support/fixture-export';
import { startHarness, type Harness } from '../support/harness';
import { startTestReceiver, type TestReceiver } from '../support/webhook-receiver';
import { webhookPayloadProblem } from '../support/webhook-schema';

// Escalation ladders on waiting calls, with short timers, against a real worker, dev server, PostgreSQL and the API:
// a reminder, then another group may decide, then (nobody deciding) the deadline's outcome as before; in a run that
// began by continuing as new.

const KEY = TEST_DECISION_KEY;
const TOKENS: ApiTokenConfig[] = [
  { subject: 'alice@example.com', roles: ['requester'], token: token('a') },
  { subject: 'fiona@example.com', roles: ['approver'], groups: ['finance'], token: token('f') },
  { subject: 'mia@example.com', roles: ['approver'], groups: ['managers'], token: token('m') },
];

const POLICY = approvalPolicy([
  {
    name: 'refunds-escalate',
    outcome: 'ask',
    tools: ['issue_refund'],
    groups: ['finance'],
    escalation: [
      { afterMs: 1_500, remind: true },
      { afterMs: 3_000, addGroups: ['managers'] },
    ],
  },
]);

const SECRET = 'w'.repeat(40);
let receiver: TestReceiver;
let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  receiver = await startTestReceiver({ k1: SECRET });
  h = await startHarness({
    decisionTrust: { keys: [KEY] },
    approvalPolicy: POLICY,
    notifications: { endpoints: [{ name: 'ops', url: receiver.url, keyId: 'k1', secret: SECRET }], pollEveryMs: 200 },
  });
  api = await startApiServer({ client: h.client, tokens: TOKENS, decisions: { signingKey: KEY } });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
  await receiver?.close();
});

const call = apiCaller(() => api.url);
const refund = (id: string, cents: number) => ({
  toolCalls: [{ id, name: 'issue_refund', arguments: { order_id: 'ord_2001', amount_cents: cents, reason: 'late' } }],
});
const refundedCents = async (orderId: string): Promise<number> =>
  (await h.pool.query('SELECT refunded_cents FROM orders WHERE id = $1', [orderId])).rows[0].refunded_cents;
const listedPolicy = async (id: string) =>
  ((await call('GET', '/v1/approvals', token('f'))).json.approvals as any[]).find((a) => a.conversationId === id)
    ?.policy;

describe('escalation', () => {
  it('reminds, then lets managers decide; a manager refused before that step approves after it, in a run continued as new', async () => {
    const id = h.newConversationId('escalate');
    const input = { approvalTimeoutMs: 60_000, continueAsNewAfterEvents: 1 };
    h.model.enqueue({ content: 'Hello.' });
    const first = await h.client.ask(id, 'Hello', { input });
    expect(first.turn.outcome).toBe('answered');

    h.model.enqueue(refund('call_esc', 9_000), { content: 'Refunded after escalation.' });
    const before = await refundedCents('ord_2001');
    await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Refund 90 on the Hopper order' });
    await expect.poll(async () => (await listedPolicy(id))?.escalationSteps).toBe(2);
    // The call waits in a run the first turn's run continued as new.
    const started = (await h.temporal.workflow.getHandle(id).fetchHistory()).events?.[0];
    expect(started?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId).toBeTruthy();
    const waiting = (await h.client.state(id)).pendingApprovals[0];
    expect(waiting.policy).toMatchObject({ rule: 'refunds-escalate', groups: ['finance'], escalated: 0 });

    // Step 1, a reminder: managers may not decide yet.
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals[0]?.policy?.escalated).toBe(1);
    const early = await call('POST', `/v1/conversations/${id}/decisions`, token('m'), {
      decision: 'approve',
      callKeys: [waiting.callKey],
    });
    expect(early.status).toBe(403);
    expect(early.json.error.code).toBe('not_permitted');

    // Step 2 adds managers: in the state, in approvers' list, and in the workflow's check.
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals[0]?.policy?.escalated).toBe(2);
    expect((await h.client.state(id)).pendingApprovals[0].policy?.groups).toEqual(['finance', 'managers']);
    await expect.poll(async () => (await listedPolicy(id))?.groups).toEqual(['finance', 'managers']);
    const approved = await call('POST', `/v1/conversations/${id}/decisions`, token('m'), {
      decision: 'approve',
      callKeys: [waiting.callKey],
    });
    expect(approved.status).toBe(200);
    await expect.poll(async () => (await h.client.state(id)).status).toBe('idle');
    expect(await refundedCents('ord_2001')).toBe(before + 9_000);
    h.expectOnlyValidModelRequests();
    // Each step was announced, signed, between the call's waiting and its decision, with what it did.
    await expect
      .poll(() => receiver.handled.filter((e) => e.conversationId === id).map((e) => e.type))
      .toEqual(['call.waiting', 'call.escalated', 'call.escalated', 'call.decided', 'turn.ended_after_wait']);
    const steps = receiver.handled.filter((e) => e.conversationId === id && e.type === 'call.escalated');
    expect(steps.map((e) => e.escalation)).toEqual([
      expect.objectContaining({
        rule: 'refunds-escalate',
        step: 1,
        remind: true,
        addedGroups: [],
        groups: ['finance'],
      }),
      expect.objectContaining({
        step: 2,
        remind: false,
        addedGroups: ['managers'],
        groups: ['finance', 'managers'],
        nextEscalationAt: null,
      }),
    ]);
    for (const e of steps) expect(webhookPayloadProblem(e)).toBeUndefined();
    await exportHistoryFixture(h.temporal, id, 'escalation');
  });

  it('nobody deciding: both steps are taken, then the deadline settles the call as approval_timeout', async () => {
    const id = h.newConversationId('escalate-timeout');
    h.model.enqueue(refund('call_late', 9_100), { content: 'Nobody decided.' });
    const { turn } = await h.client.ask(id, 'Refund 91, nobody will decide', { input: { approvalTimeoutMs: 4_500 } });
    expect(turn.outcome).toBe('answered');
    const results = (await h.client.transcript(id)).flatMap((m) =>
      m.message.role === 'tool' ? [JSON.parse(m.message.content)] : [],
    );
    expect(results).toEqual([expect.objectContaining({ kind: 'approval_timeout' })]);
    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    const timers = (history.events ?? []).filter((e) => e.timerStartedEventAttributes);
    expect(timers).toHaveLength(3); // two escalation steps and the deadline
    const escalations = (history.events ?? []).filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'durableAgent.recordEscalation',
    );
    expect(escalations).toHaveLength(2);
  });

  it('a decision before the first step stops the ladder: no step is taken', async () => {
    const id = h.newConversationId('escalate-early');
    h.model.enqueue(refund('call_quick', 9_200), { content: 'Refunded at once.' });
    await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Refund 92 quickly' });
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length).toBe(1);
    const [waiting] = (await h.client.state(id)).pendingApprovals;
    const approved = await call('POST', `/v1/conversations/${id}/decisions`, token('f'), {
      decision: 'approve',
      callKeys: [waiting.callKey],
    });
    expect(approved.status).toBe(200);
    await expect.poll(async () => (await h.client.state(id)).status).toBe('idle');
    await new Promise((resolve) => setTimeout(resolve, 3_500)); // past both steps' times
    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    expect(
      (history.events ?? []).filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'durableAgent.recordEscalation',
      ),
    ).toHaveLength(0);
  });
});
