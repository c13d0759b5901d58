import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startApiServer } from '../../src/api/server';
import type { ApiTokenConfig } from '../../src/api/tokens';
import { signDecision } from '../../src/common/decision-signing';
import { DecisionRefusedError } from '../../src/common/errors';
import type { ApprovalDecision } from '../../src/contract/decisions';
import { backofficeTools } from '../../src/demo/tools';
import { approvalPolicy } from '../../src/policies/approval-policy';
import { tool } from '../../src/tools/tool';
import { apiCaller, TEST_DECISION_KEY, token } from '../support/api';
import { exportHistoryFixture } from '../support/fixture-export';
import { startHarness, type Harness } from '../support/harness';

// Approval policies against a real worker, dev server, PostgreSQL and the HTTP API: a refund over 300.00 waits for
// finance and is refused from a plain approver (at the API, and in the workflow for a signed decision that went around
// the API's check); closing an account needs two different people; allow and deny rules decide without a person and
// are recorded as decisions of the rule.

const KEY = TEST_DECISION_KEY;
const TOKENS: ApiTokenConfig[] = [
  { subject: 'alice@example.com', roles: ['requester'], token: token('a') },
  { subject: 'bob@example.com', roles: ['approver'], token: token('b') },
  { subject: 'fiona@example.com', roles: ['approver'], groups: ['finance'], token: token('f') },
  { subject: 'lea@example.com', roles: ['approver'], groups: ['leads'], token: token('l') },
  { subject: 'leo@example.com', roles: ['approver'], groups: ['leads'], token: token('m') },
  { subject: 'lia@example.com', roles: ['requester', 'approver'], groups: ['leads'], token: token('n') },
];

const closed: string[] = [];
const deleted: string[] = [];
const closeAccount = tool({
  name: 'close_account',
  description: 'Closes a customer account.',
  parameters: z.object({ customer_id: z.string() }),
  execute: ({ customer_id }) => {
    closed.push(customer_id);
    return `Closed ${customer_id}.`;
  },
});
const deleteCustomer = tool({
  name: 'delete_customer',
  description: 'Deletes a customer.',
  parameters: z.object({ customer_id: z.string() }),
  execute: ({ customer_id }) => {
    deleted.push(customer_id);
    return `Deleted ${customer_id}.`;
  },
});

const POLICY = approvalPolicy([
  {
    name: 'big-refunds-to-finance',
    outcome: 'ask',
    tools: ['issue_refund'],
    where: { amount_cents: { gt: 30_000 } },
    groups: ['finance'],
    reason: 'Refunds over 300.00 go to finance.',
  },
  { name: 'small-refunds', outcome: 'allow', tools: ['issue_refund'], where: { amount_cents: { lte: 5_000 } } },
  { name: 'close-needs-two-leads', outcome: 'ask', tools: ['close_account'], groups: ['leads'], approvals: 2 },
  { name: 'never-delete', outcome: 'deny', tools: ['delete_customer'], reason: 'Customers are never deleted here.' },
]);

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  h = await startHarness({
    decisionTrust: { keys: [KEY] },
    approvalPolicy: POLICY,
    tools: [...backofficeTools(), closeAccount, deleteCustomer],
  });
  api = await startApiServer({ client: h.client, tokens: TOKENS, decisions: { signingKey: KEY } });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

const call = apiCaller(() => api.url);
const listed = async (id: string, who = token('b')) =>
  ((await call('GET', '/v1/approvals', who)).json.approvals as any[]).filter((a) => a.conversationId === id);
const decisionRows = async (id: string) =>
  (
    await h.pool.query(
      `SELECT decision, decided_by, via, rule, decider_groups, call_still_waits, authenticated, signed_decision ->> 'signature' IS NOT NULL AS signed
         FROM durable_agent.approval_decisions WHERE conversation_id = $1 ORDER BY decided_at, decision_id`,
      [id],
    )
  ).rows;
const refundedCents = async (orderId: string): Promise<number> =>
  (await h.pool.query('SELECT refunded_cents FROM orders WHERE id = $1', [orderId])).rows[0].refunded_cents;
const toolContents = async (id: string) =>
  (await h.client.transcript(id)).flatMap((m) => (m.message.role === 'tool' ? [JSON.parse(m.message.content)] : []));

/** A decision signed with the API's key as if the API had sent it, for `subject` with `groups`: around the API's check. */
function signedAround(id: string, subject: string, groups: string[], callKey: string): ApprovalDecision {
  const decision: ApprovalDecision = {
    decisionId: randomUUID(),
    decision: 'approve',
    callKey,
    decidedBy: subject,
    deciderGroups: groups,
    sentAt: new Date().toISOString(),
  };
  return { ...decision, signature: signDecision(KEY, id, decision) };
}

describe('approval policies', () => {
  it('a refund over the rule amount waits for finance: a plain approver is refused at the API and in the workflow, finance approves it', async () => {
    const id = h.newConversationId('finance');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_big',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 40_000, reason: 'fraud' },
          },
        ],
      },
      { content: 'Refunded after finance approved.' },
    );
    const before = await refundedCents('ord_2001');
    expect(
      (await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Refund the whole order' })).status,
    ).toBe(202);
    await expect.poll(async () => (await listed(id)).length).toBe(1);
    const [waiting] = await listed(id);
    expect(waiting.policy).toEqual({
      rule: 'big-refunds-to-finance',
      groups: ['finance'],
      approvals: 1,
      approvedBy: [],
      reason: 'Refunds over 300.00 go to finance.',
    });
    expect(waiting.mayDecide).toBe(false);
    expect((await listed(id, token('f')))[0].mayDecide).toBe(true);
    expect((await h.client.state(id)).pendingApprovals[0].policy).toMatchObject({
      rule: 'big-refunds-to-finance',
      groups: ['finance'],
    });

    // The API refuses bob: he is in no group the rule names.
    const refused = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
      decision: 'approve',
      callKeys: [waiting.callKey],
    });
    expect(refused.status).toBe(403);
    expect(refused.json.error.code).toBe('not_permitted');
    expect(refused.json.error.message).toContain('big-refunds-to-finance');
    expect(refused.json.error.message).toContain('finance');

    // A validly signed decision whose groups are not finance's, sent around the API's check: the workflow refuses it.
    const around = signedAround(id, 'bob@example.com', ['support'], waiting.callKey);
    const error = await h.client.decide(id, around).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DecisionRefusedError);
    expect((error as Error).message).toMatch(
      /bob@example\.com may not decide this call.*big-refunds-to-finance.*finance/,
    );
    // Unsigned, with the right groups claimed: refused too (groups count only under a valid signature).
    const { signature: _signature, ...unsigned } = signedAround(id, 'mallory', ['finance'], waiting.callKey);
    expect(await h.client.decide(id, unsigned).catch((e: unknown) => (e as Error).message)).toMatch(
      /not signed|not proven/,
    );
    expect((await h.client.state(id)).pendingApprovals).toHaveLength(1);
    expect(await refundedCents('ord_2001')).toBe(before);

    const approved = await call('POST', `/v1/conversations/${id}/decisions`, token('f'), {
      decision: 'approve',
      callKeys: [waiting.callKey],
    });
    expect(approved.status).toBe(200);
    await expect.poll(async () => (await h.client.state(id)).status).toBe('idle');
    expect(await refundedCents('ord_2001')).toBe(before + 40_000);
    expect(await decisionRows(id)).toEqual([
      {
        decision: 'approve',
        decided_by: 'fiona@example.com',
        via: expect.any(String),
        rule: 'big-refunds-to-finance',
        decider_groups: ['finance'],
        call_still_waits: false,
        authenticated: true,
        signed: true,
      },
    ]);
    h.expectOnlyValidModelRequests();
  });

  it('closing an account needs two different leads: the same person twice is refused, the requester may not approve, the second lead runs it', async () => {
    const id = h.newConversationId('two-leads');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_close', name: 'close_account', arguments: { customer_id: 'cus_grace' } }] },
      { content: 'Closed after two approvals.' },
    );
    // lia (a lead) sends the request: four eyes keep her from approving it.
    expect(
      (await call('POST', `/v1/conversations/${id}/messages`, token('n'), { text: 'Close Grace account' })).status,
    ).toBe(202);
    await expect.poll(async () => (await listed(id)).length).toBe(1);
    const [waiting] = await listed(id);
    expect(waiting.policy).toMatchObject({
      rule: 'close-needs-two-leads',
      groups: ['leads'],
      approvals: 2,
      approvedBy: [],
    });
    expect(waiting.decisions ?? ['approve', 'reject']).toEqual(['approve', 'reject']);
    const decide = (who: string) =>
      call('POST', `/v1/conversations/${id}/decisions`, who, { decision: 'approve', callKeys: [waiting.callKey] });

    const own = await decide(token('n'));
    expect(own.status).toBe(403);
    expect(own.json.error.message).toContain('lia@example.com sent the request');

    expect((await decide(token('l'))).status).toBe(200);
    await expect.poll(async () => (await listed(id))[0]?.policy?.approvedBy).toEqual(['lea@example.com']);
    expect((await h.client.state(id)).pendingApprovals[0].policy?.approvedBy).toEqual(['lea@example.com']);
    expect(closed).not.toContain('cus_grace');

    const twice = await decide(token('l'));
    expect(twice.status).toBe(403);
    expect(twice.json.error.message).toContain('lea@example.com approved this call already');
    // The same person again, signed around the API: the workflow counts each person once.
    const again = await h.client
      .decide(id, signedAround(id, 'lea@example.com', ['leads'], waiting.callKey))
      .catch((e: unknown) => (e as Error).message);
    expect(again).toContain('lea@example.com approved this call already');
    expect(closed).not.toContain('cus_grace');

    expect((await decide(token('m'))).status).toBe(200);
    await expect.poll(async () => (await h.client.state(id)).status).toBe('idle');
    expect(closed.filter((c) => c === 'cus_grace')).toHaveLength(1);
    const rows = await decisionRows(id);
    expect(rows.map((r) => [r.decided_by, r.call_still_waits, r.rule])).toEqual([
      ['lea@example.com', true, 'close-needs-two-leads'],
      ['leo@example.com', false, 'close-needs-two-leads'],
    ]);
    expect(await listed(id)).toEqual([]);
    await exportHistoryFixture(h.temporal, id, 'approval-policy-two-people');
  });

  it('allow and deny rules decide without a person, recorded as decisions of the rule; the model reads why a call was denied', async () => {
    const id = h.newConversationId('ruled');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_small',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 2_000, reason: 'late' },
          },
          { id: 'call_delete', name: 'delete_customer', arguments: { customer_id: 'cus_alan' } },
        ],
      },
      { content: 'Refunded 20.00; deleting is not allowed.' },
    );
    const before = await refundedCents('ord_1001');
    const messageId = await h.client.sendMessage(id, 'Refund 20 and delete Alan');
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn.outcome).toBe('answered');
    expect(await refundedCents('ord_1001')).toBe(before + 2_000);
    expect(deleted).toEqual([]);
    const [refunded, denied] = await toolContents(id);
    expect(typeof refunded === 'string' || refunded.kind !== 'rejected').toBe(true);
    expect(denied).toMatchObject({
      kind: 'rejected',
      rule: 'never-delete',
      reason: 'Customers are never deleted here.',
    });
    expect(denied.error).toContain('no person was asked');
    expect(await decisionRows(id)).toEqual([
      expect.objectContaining({
        decision: 'approve',
        decided_by: 'rule:small-refunds',
        via: 'policy',
        rule: 'small-refunds',
      }),
      expect.objectContaining({
        decision: 'reject',
        decided_by: 'rule:never-delete',
        via: 'policy',
        rule: 'never-delete',
      }),
    ]);
    // The model was sent the denial as the call's result, paired with its call.
    const next = h.requestsFor('Refund 20 and delete Alan')[1].messages as { role: string; tool_call_id?: string }[];
    expect(next.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(['call_small', 'call_delete']);
    h.expectOnlyValidModelRequests();
    await exportHistoryFixture(h.temporal, id, 'approval-policy-allow-deny');
  });

  it('through the API, finance approves a big refund with a standing grant: the next big refund runs without asking, in her name; a grant is refused on a call that needs two leads; an approver revokes it', async () => {
    const id = h.newConversationId('api-grant');
    const bigRefund = (callId: string, cents: number) => ({
      toolCalls: [
        { id: callId, name: 'issue_refund', arguments: { order_id: 'ord_2001', amount_cents: cents, reason: 'late' } },
      ],
    });
    h.model.enqueue(bigRefund('call_g0', 31_000), { content: 'First refunded.' });
    const first = await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Refund 310' });
    await expect.poll(async () => (await listed(id)).length).toBe(1);
    const [waiting] = await listed(id);

    // A grant goes with an approval of one call: with a rejection it is refused before anything is sent.
    const onReject = await call('POST', `/v1/conversations/${id}/decisions`, token('f'), {
      decision: 'reject',
      callKeys: [waiting.callKey],
      grant: { maxCalls: 1 },
    });
    expect(onReject.status).toBe(400);
    expect(onReject.json.error.message).toContain('"grant" goes with an "approve" decision naming exactly one call');
    const noLimit = await call('POST', `/v1/conversations/${id}/decisions`, token('f'), {
      decision: 'approve',
      callKeys: [waiting.callKey],
      grant: {},
    });
    expect(noLimit.status).toBe(400);
    expect(noLimit.json.error.message).toContain('needs a limit');

    const granted = await call('POST', `/v1/conversations/${id}/decisions`, token('f'), {
      decision: 'approve',
      callKeys: [waiting.callKey],
      grant: { maxCalls: 2, maxAmount: { argument: 'amount_cents', total: 70_000 } },
    });
    expect(granted.status).toBe(200);
    const grantId = granted.json.results[0].decisionId;
    expect(granted.json.results[0].grant).toEqual({
      id: grantId,
      maxCalls: 2,
      maxAmount: { argument: 'amount_cents', total: 70_000 },
    });
    expect((await h.client.waitForTurn(id, first.json.messageId)).outcome).toBe('answered');
    const state = await call('GET', `/v1/conversations/${id}`, token('b'));
    expect(state.json.grants).toEqual([
      expect.objectContaining({
        id: grantId,
        toolName: 'issue_refund',
        rule: 'big-refunds-to-finance',
        grantedBy: 'fiona@example.com',
        authenticated: true,
        maxCalls: 2,
        callsUsed: 0,
        amount: { argument: 'amount_cents', total: 70_000, used: 0 },
        live: true,
      }),
    ]);

    // The next big refund runs without asking anyone, decided in fiona's name by the grant. (The demo's order may have
    // less left to refund than asked, so the tool may refuse the refund: what counts here is that it ran unasked.)
    h.model.enqueue(bigRefund('call_g1', 32_000), { content: 'Second refunded.' });
    const second = await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Refund 320' });
    expect((await h.client.waitForTurn(id, second.json.messageId)).outcome).toBe('answered');
    const rows = await h.pool.query(
      `SELECT decided_by, via, grant_id, authenticated, tool_call_ids FROM durable_agent.approval_decisions
        WHERE conversation_id = $1 ORDER BY decided_at, decision_id`,
      [id],
    );
    expect(rows.rows).toEqual([
      {
        decided_by: 'fiona@example.com',
        via: 'update',
        grant_id: null,
        authenticated: true,
        tool_call_ids: ['call_g0'],
      },
      {
        decided_by: 'fiona@example.com',
        via: 'grant',
        grant_id: grantId,
        authenticated: true,
        tool_call_ids: ['call_g1'],
      },
    ]);

    // Revoking: a requester may not; an unknown grant is 404; an approver (any) revokes it, recorded under their token.
    const revokePath = `/v1/conversations/${id}/grants/${grantId}/revoke`;
    expect((await call('POST', revokePath, token('a'), {})).status).toBe(403);
    const unknown = await call('POST', `/v1/conversations/${id}/grants/no-such-grant/revoke`, token('b'), {});
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.message).toContain('has no grant "no-such-grant"');
    const typed = await call('POST', revokePath, token('b'), { reason: 'enough', revokedBy: 'mallory' });
    expect(typed.status).toBe(400);
    const revoked = await call('POST', revokePath, token('b'), { reason: 'enough for today' });
    expect(revoked.status).toBe(200);
    expect(revoked.json).toMatchObject({
      conversationId: id,
      grantId,
      revokedBy: 'bob@example.com',
      queued: false,
      grant: { id: grantId, revokedBy: 'bob@example.com', live: false, callsUsed: 1 },
    });
    const again = await call('POST', revokePath, token('b'), {});
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({ code: 'decision_refused' });
    expect(again.json.error.message).toContain('revoked already by bob@example.com');
    await expect
      .poll(
        async () =>
          (
            await h.pool.query(
              'SELECT revoked_by, revoke_reason FROM durable_agent.approval_grants WHERE conversation_id = $1',
              [id],
            )
          ).rows,
      )
      .toEqual([{ revoked_by: 'bob@example.com', revoke_reason: 'enough for today' }]);
    // Revoked, it covers nothing: the next big refund waits for finance again.
    h.model.enqueue(bigRefund('call_g2', 33_000), { content: 'Not refunded.' });
    await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Refund 330' });
    await expect.poll(async () => (await listed(id)).map((w) => w.toolCallId)).toEqual(['call_g2']);
    const [third] = await listed(id);
    await call('POST', `/v1/conversations/${id}/decisions`, token('f'), {
      decision: 'reject',
      callKeys: [third.callKey],
    });
    await expect.poll(async () => (await h.client.state(id)).status).toBe('idle');

    // A call whose rule needs two people takes no grant: refused at the API, nothing decided.
    const two = h.newConversationId('api-grant-two');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_close2', name: 'close_account', arguments: { customer_id: 'cus_ada' } }] },
      { content: 'Closed.' },
    );
    await call('POST', `/v1/conversations/${two}/messages`, token('a'), { text: 'Close Ada' });
    await expect.poll(async () => (await listed(two)).length).toBe(1);
    const [close] = await listed(two);
    const nOfM = await call('POST', `/v1/conversations/${two}/decisions`, token('l'), {
      decision: 'approve',
      callKeys: [close.callKey],
      grant: { maxCalls: 5 },
    });
    expect(nOfM.status).toBe(409);
    expect(nOfM.json.error.code).toBe('decision_refused');
    expect(nOfM.json.error.message).toContain('"close-needs-two-leads", which needs 2 different people');
    expect((await h.client.state(two)).pendingApprovals[0].policy?.approvedBy).toEqual([]);
    // The workflow refuses it too, when a signed decision goes around the API's check.
    const around = { ...signedAround(two, 'lea@example.com', ['leads'], close.callKey), grant: { maxCalls: 5 } };
    const { signature: _s, ...unsignedAround } = around;
    const workflowRefusal = await h.client
      .decide(two, { ...unsignedAround, signature: signDecision(KEY, two, unsignedAround) })
      .catch((e: unknown) => (e as Error).message);
    expect(workflowRefusal).toContain('a grant would let one person approve later calls alone');
    await call('POST', `/v1/conversations/${two}/decisions`, token('l'), {
      decision: 'reject',
      callKeys: [close.callKey],
    });
    await expect.poll(async () => (await h.client.state(two)).status).toBe('idle');
    h.expectOnlyValidModelRequests();
  });
});
