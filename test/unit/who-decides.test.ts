import { describe, expect, it } from 'vitest';
import { approvalAsk, type ChatViewer } from '../../src/api/chat-approvals';
import { decideCalls, DecisionProblem, type DecisionPolicy } from '../../src/api/decisions';
import type { ApiPrincipal, ApiRole } from '../../src/api/tokens';
import { approvalsSoFar, callPolicyOf, mayApprove, whoMayDecide } from '../../src/api/who-decides';
import type { AgentClient } from '../../src/client/client';
import { checkDecisionSignature } from '../../src/common/decision-signing';
import type { ApprovalDecision, WaitingCall, WaitingPolicy } from '../../src/contract';

// Who may decide a waiting call before anything is sent: four eyes, and the
// approval policy's rule the call waits under (its groups, N of M, whether
// its requester may approve). decideCalls refuses what the rule forbids with
// not_permitted, sending nothing, and sends the decider's groups, signed,
// with what it allows; the chat and GET /v1/approvals read the same checks.

const KEY = { id: 'k1', secret: 's'.repeat(40) };
const CONVERSATION = 'c-1';

const principal = (subject: string, groups: string[] = [], roles: ApiRole[] = ['approver']): ApiPrincipal => ({
  subject,
  roles: new Set(roles),
  groups: new Set(groups),
});

const rule = (over: Partial<WaitingPolicy> = {}): WaitingPolicy => ({
  rule: 'large-refunds',
  groups: ['finance'],
  approvals: 1,
  approvedBy: [],
  reason: 'Refunds over 500 EUR',
  ...over,
});

const waiting = (over: Partial<WaitingCall<Date>> = {}): WaitingCall<Date> => ({
  conversationId: CONVERSATION,
  rootConversationId: CONVERSATION,
  agentPath: [],
  toolCallId: 'call_1',
  callKey: 'c-1/2/0',
  toolName: 'issue_refund',
  arguments: { order_id: 'ord_1', amount_cents: 90_000 },
  requestedAt: new Date(0),
  ageMs: 1_000,
  requestedBy: ['rita@example.com'],
  ...over,
});

/** A client whose conversation waits on `calls`; the decisions it was sent are in `sent`. */
function fakeClient(calls: WaitingCall<Date>[]) {
  const sent: ApprovalDecision[] = [];
  const client = {
    waitingCalls: async () => ({ calls, workerAnswered: true }),
    decide: async (_id: string, decision: ApprovalDecision) => {
      sent.push(decision);
      return { decisionId: decision.decisionId, applied: true, toolCallIds: [decision.toolCallId!] };
    },
    signalDecision: async () => {
      throw new Error('not queued here');
    },
  } as unknown as AgentClient;
  return { client, sent };
}

/** What decideCalls refused with (its code and message), or undefined when it sent the decisions. */
async function refusal(
  calls: WaitingCall<Date>[],
  who: ApiPrincipal,
  decision: 'approve' | 'reject' | 'edit',
  policy: DecisionPolicy = { signingKey: KEY },
) {
  const { client, sent } = fakeClient(calls);
  try {
    await decideCalls(
      client,
      who,
      CONVERSATION,
      {
        decision,
        callKeys: calls.map((c) => c.callKey),
        ...(decision === 'edit' ? { arguments: { order_id: 'ord_1' } } : {}),
      },
      policy,
    );
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(DecisionProblem);
    expect(sent).toEqual([]);
    return { code: (err as DecisionProblem).code, message: (err as Error).message };
  }
}

describe('who may decide a waiting call', () => {
  it("refuses someone outside the rule's groups with not_permitted, naming the rule, its groups, theirs and whom to ask", async () => {
    const refused = await refusal([waiting({ policy: rule() })], principal('bob@example.com', ['support']), 'approve');
    expect(refused?.code).toBe('not_permitted');
    expect(refused?.message).toContain('Nothing was decided');
    expect(refused?.message).toContain('"large-refunds"');
    expect(refused?.message).toContain('lets members of finance decide it');
    expect(refused?.message).toContain("bob@example.com's groups are support");
    expect(refused?.message).toContain('Ask a member of finance');
    // Rejecting is deciding too: only members may.
    expect((await refusal([waiting({ policy: rule() })], principal('bob@example.com'), 'reject'))?.message).toContain(
      "bob@example.com's groups are none",
    );
  });

  it("sends a member's decision with their groups, sorted and covered by the signature", async () => {
    const { client, sent } = fakeClient([waiting({ policy: rule({ groups: ['finance', 'legal'] }) })]);
    const outcome = await decideCalls(
      client,
      principal('fay@example.com', ['legal', 'accounts']),
      CONVERSATION,
      { decision: 'approve', callKeys: ['c-1/2/0'] },
      { signingKey: KEY },
    );
    expect(outcome.results[0].policy?.rule).toBe('large-refunds');
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ decidedBy: 'fay@example.com', deciderGroups: ['accounts', 'legal'] });
    expect(checkDecisionSignature([KEY], CONVERSATION, sent[0])).toBe('valid');
    expect(checkDecisionSignature([KEY], CONVERSATION, { ...sent[0], deciderGroups: ['finance'] })).toBe('invalid');
  });

  it('counts N of M: a second approval by the same person is refused; another member may approve', async () => {
    const twice = rule({ approvals: 2, approvedBy: ['fay@example.com'] });
    const refused = await refusal([waiting({ policy: twice })], principal('fay@example.com', ['finance']), 'approve');
    expect(refused?.code).toBe('not_permitted');
    expect(refused?.message).toContain('fay@example.com approved this call already');
    expect(refused?.message).toContain('1 more must approve it');
    expect(await refusal([waiting({ policy: twice })], principal('gus@example.com', ['finance']), 'approve')).toBe(
      undefined,
    );
  });

  it("follows the rule's requesterMayApprove over the API's four-eyes setting, both ways", async () => {
    const rita = principal('rita@example.com', ['finance']);
    const open = waiting({ policy: rule({ requesterMayApprove: true }) });
    expect(await refusal([open], rita, 'approve', { signingKey: KEY, allowSelfApproval: false })).toBeUndefined();
    const strict = waiting({ policy: rule() });
    const refused = await refusal([strict], rita, 'edit', { signingKey: KEY, allowSelfApproval: true });
    expect(refused?.code).toBe('four_eyes');
    expect(refused?.message).toContain('rita@example.com sent the request that asked for call c-1/2/0');
    // A requester may reject their own call, in the rule's groups or not.
    expect(await refusal([strict], principal('rita@example.com'), 'reject')).toBeUndefined();
  });

  it('leaves calls without a rule as they were: four eyes by the API setting, no groups sent when the decider has none', async () => {
    const plain = waiting();
    const rita = principal('rita@example.com');
    const refused = await refusal([plain], rita, 'approve');
    expect(refused).toEqual({
      code: 'four_eyes',
      message:
        "Nothing was decided: rita@example.com sent the request that asked for call c-1/2/0, and a request's sender may not approve its calls (four eyes). Ask another approver.",
    });
    expect(await refusal([plain], rita, 'approve', { allowSelfApproval: true })).toBeUndefined();
    const { client, sent } = fakeClient([plain]);
    await decideCalls(
      client,
      principal('bob@example.com'),
      CONVERSATION,
      { decision: 'approve', callKeys: ['c-1/2/0'] },
      {},
    );
    expect(sent[0].deciderGroups).toBeUndefined();
    const grouped = fakeClient([plain]);
    await decideCalls(
      grouped.client,
      principal('bob@example.com', ['support']),
      CONVERSATION,
      { decision: 'approve', callKeys: ['c-1/2/0'] },
      {},
    );
    expect(grouped.sent[0].deciderGroups).toEqual(['support']);
  });

  it('says whether the caller may approve (the approver role, four eyes, the rule), and the rule in words', () => {
    const call = waiting({ policy: rule({ approvals: 2, approvedBy: ['fay@example.com'] }) });
    expect(mayApprove(principal('gus@example.com', ['finance']), call, {})).toBe(true);
    expect(mayApprove(principal('gus@example.com', ['finance'], ['operator']), call, {})).toBe(false);
    expect(mayApprove(principal('fay@example.com', ['finance']), call, {})).toBe(false);
    expect(mayApprove(principal('bob@example.com', ['support']), call, {})).toBe(false);
    expect(mayApprove(principal('rita@example.com', ['finance']), call, { allowSelfApproval: true })).toBe(false);
    expect(mayApprove(principal('rita@example.com'), waiting(), { allowSelfApproval: true })).toBe(true);
    expect(mayApprove(principal('rita@example.com'), waiting(), {})).toBe(false);
    expect(whoMayDecide(rule({ groups: ['finance', 'legal', 'audit'] }))).toBe('members of finance, legal or audit');
    expect(whoMayDecide(rule({ groups: undefined }))).toBe('any approver');
    expect(approvalsSoFar(call.policy!)).toBe('1 of 2 (by fay@example.com)');
    expect(callPolicyOf(rule({ requesterMayApprove: true }))).toEqual({
      rule: 'large-refunds',
      outcome: 'ask',
      groups: ['finance'],
      approvals: 1,
      requesterMayApprove: true,
      reason: 'Refunds over 500 EUR',
    });
  });

  it('tells the chat reader what the rule lets them decide', () => {
    const viewer = (subject: string, groups: string[]): ChatViewer => ({
      subject,
      groups,
      approver: true,
      allowSelfApproval: false,
    });
    const policy = rule({ approvals: 2, approvedBy: ['fay@example.com'] });
    const asked = { requestedBy: ['rita@example.com'], policy };
    expect(approvalAsk(viewer('gus@example.com', ['finance']), asked)).toEqual({
      descriptor: { decide: ['approve', 'reject'] },
    });
    const outsider = approvalAsk(viewer('bob@example.com', ['support']), asked);
    expect(outsider.descriptor).toEqual({ decide: [], rule: 'policy' });
    expect(outsider.reason).toContain('Waits for members of finance (the approval policy\'s rule "large-refunds")');
    expect(approvalAsk(viewer('fay@example.com', ['finance']), asked).descriptor).toEqual({
      decide: ['reject'],
      rule: 'policy',
    });
    expect(approvalAsk(viewer('rita@example.com', []), asked).descriptor).toEqual({
      decide: ['reject'],
      rule: 'four_eyes',
    });
  });
});
