import { describe, expect, it } from 'vitest';
import { checkDecisionSignature, signDecision } from '../../src/common/decision-signing';
import { policyRefusal, type ApprovalDecision, type CallPolicy } from '../../src/contract';
import { approvedBy, ToolCallBatch, type RequestedCall } from '../../src/core/batch';

// What the workflow does with an approval policy's verdict (src/core/batch.ts, src/contract/policies.ts): deny and
// allow decide without a person, recorded as the rule's decision; N of M counts each person once; who may decide is
// checked from the signed decision's groups.

const call = (id: string, policy?: CallPolicy, needsApproval = policy?.outcome === 'ask'): RequestedCall => ({
  id,
  key: `conv/msg-1/call-${id}`,
  name: 'issue_refund',
  arguments: '{"amount_cents": 150000}',
  needsApproval,
  ...(policy ? { policy } : {}),
});

describe("an approval policy's verdict in the batch", () => {
  it('deny settles the call as rejected by the rule, allow makes it ready, both with a decision by the rule', () => {
    const batch = new ToolCallBatch(
      [
        call('d', { rule: 'never', outcome: 'deny', reason: 'Not here.' }),
        call('a', { rule: 'small', outcome: 'allow' }),
        call('q', { rule: 'finance', outcome: 'ask', groups: ['finance'] }),
        call('n'),
      ],
      1_000,
    );
    expect(batch.get('d')).toMatchObject({
      phase: 'settled',
      outcome: { kind: 'rejected' },
      decision: { approved: false, decidedBy: 'rule:never', rule: 'never', decisionId: 'rule/conv/msg-1/call-d' },
    });
    expect(JSON.parse(batch.get('d')!.outcome!.content)).toMatchObject({
      kind: 'rejected',
      rule: 'never',
      reason: 'Not here.',
    });
    expect(batch.get('a')).toMatchObject({ phase: 'ready', decision: { approved: true, decidedBy: 'rule:small' } });
    expect(batch.get('q')?.phase).toBe('awaiting_approval');
    expect(batch.get('n')?.phase).toBe('ready');
    expect(batch.ruled().map((c) => c.id)).toEqual(['d', 'a']);
  });

  it('a call whose rule needs two people runs with the second approval; a rejection decides at once', () => {
    const policy: CallPolicy = { rule: 'two', outcome: 'ask', approvals: 2 };
    const batch = new ToolCallBatch([call('x', policy), call('y', policy)], 0);
    batch.decide(['x'], { decisionId: '1', approved: true, decidedBy: 'lea', decidedAt: 1 });
    expect(batch.get('x')?.phase).toBe('awaiting_approval');
    expect(approvedBy(batch.get('x')!)).toEqual(['lea']);
    batch.decide(['x'], { decisionId: '2', approved: true, decidedBy: 'leo', decidedAt: 2 });
    expect(batch.get('x')).toMatchObject({ phase: 'ready', decision: { decidedBy: 'leo' } });
    batch.decide(['y'], { decisionId: '3', approved: true, decidedBy: 'lea', decidedAt: 3 });
    batch.decide(['y'], { decisionId: '4', approved: false, decidedBy: 'leo', decidedAt: 4 });
    expect(batch.get('y')).toMatchObject({ phase: 'settled', outcome: { kind: 'rejected' } });
  });

  it('survives a snapshot (continue-as-new) with its approvals so far', () => {
    const batch = new ToolCallBatch([call('x', { rule: 'two', outcome: 'ask', approvals: 2 })], 0);
    batch.decide(['x'], { decisionId: '1', approved: true, decidedBy: 'lea', decidedAt: 1 });
    const copy = ToolCallBatch.fromSnapshot(JSON.parse(JSON.stringify(batch.snapshot())));
    expect(approvedBy(copy.get('x')!)).toEqual(['lea']);
    copy.decide(['x'], { decisionId: '2', approved: true, decidedBy: 'leo', decidedAt: 2 });
    expect(copy.get('x')?.phase).toBe('ready');
  });
});

describe('who may decide a call under a rule', () => {
  const finance: CallPolicy = { rule: 'big', outcome: 'ask', groups: ['finance'] };
  const signed = { authenticated: true };

  it('lets a member of a named group decide, refuses others and unproven senders, saying who may', () => {
    expect(
      policyRefusal(finance, { subject: 'fiona', groups: ['finance'], ...signed }, true, ['alice']),
    ).toBeUndefined();
    expect(policyRefusal(finance, { subject: 'bob', groups: ['support'], ...signed }, true, ['alice'])).toBe(
      'bob may not decide this call: the approval policy\'s rule "big" lets members of finance decide it, and bob\'s groups are support. Ask a member of finance.',
    );
    expect(policyRefusal(finance, { subject: 'bob', ...signed }, false, ['alice'])).toMatch(/bob's groups are none/);
    expect(policyRefusal(finance, { subject: 'fiona', groups: ['finance'], authenticated: false }, true, [])).toMatch(
      /sender is not proven: decide it through the HTTP API/,
    );
  });

  it('keeps four eyes unless the rule lets requesters approve; a requester may always reject their own call', () => {
    const anyone: CallPolicy = { rule: 'ask', outcome: 'ask' };
    expect(policyRefusal(anyone, { subject: 'alice' }, true, ['alice'])).toMatch(
      /alice sent the request .* \(four eyes\)/,
    );
    expect(
      policyRefusal({ ...anyone, requesterMayApprove: true }, { subject: 'alice' }, true, ['alice']),
    ).toBeUndefined();
    expect(policyRefusal(finance, { subject: 'alice', groups: [] }, false, ['alice'])).toBeUndefined();
    expect(policyRefusal(undefined, { subject: 'alice' }, true, ['alice'])).toBeUndefined();
  });

  it('counts each person once towards N of M', () => {
    const two: CallPolicy = { rule: 'two', outcome: 'ask', approvals: 2 };
    expect(policyRefusal(two, { subject: 'lea', ...signed }, true, [], ['lea'])).toBe(
      'lea approved this call already; the approval policy\'s rule "two" needs 2 different people, and 1 more must approve it.',
    );
    expect(policyRefusal(two, { subject: 'leo', ...signed }, true, [], ['lea'])).toBeUndefined();
    expect(policyRefusal(two, { subject: 'leo' }, true, [], ['lea'])).toMatch(/not proven/);
  });

  it("a decision's signature covers the decider's groups: other groups break it", () => {
    const key = { id: 'k1', secret: 's'.repeat(40) };
    const decision: ApprovalDecision = {
      decisionId: 'd',
      decision: 'approve',
      toolCallId: 'c',
      decidedBy: 'bob',
      deciderGroups: ['support'],
    };
    const signature = signDecision(key, 'conv', decision);
    expect(checkDecisionSignature([key], 'conv', { ...decision, signature })).toBe('valid');
    expect(checkDecisionSignature([key], 'conv', { ...decision, deciderGroups: ['finance'], signature })).toBe(
      'invalid',
    );
    expect(checkDecisionSignature([key], 'conv', { ...decision, deciderGroups: undefined, signature })).toBe('invalid');
    // The same groups in another order sign the same.
    const two = { ...decision, deciderGroups: ['b', 'a'] };
    expect(
      checkDecisionSignature([key], 'conv', {
        ...two,
        deciderGroups: ['a', 'b'],
        signature: signDecision(key, 'conv', two),
      }),
    ).toBe('valid');
  });
});
