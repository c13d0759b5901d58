import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkDecisionSignature, signDecision } from '../../src/common/decision-signing';
import {
  describeBadDecision,
  describeOversizedDecision,
  EDITED_ARGUMENTS_MAX_BYTES,
  type ApprovalDecision,
} from '../../src/contract';

// The four decisions' shapes, limits and signatures (src/contract/decisions.ts, src/contract/limits.ts,
// src/common/decision-signing.ts).

const key = { id: 'k1', secret: 's'.repeat(40) };

describe('edit and respond decisions', () => {
  it('say what an edit or a response lacks, and refuse their fields on other decisions', () => {
    expect(describeBadDecision({ decisionId: 'd', decision: 'edit', toolCallId: 'c' })).toMatch(
      /"edit" needs "arguments": the JSON object/,
    );
    expect(describeBadDecision({ decisionId: 'd', decision: 'edit', toolCallId: 'c', arguments: [1] })).toMatch(
      /"edit" needs "arguments"/,
    );
    expect(describeBadDecision({ decisionId: 'd', decision: 'edit', arguments: {} })).toBe(
      '"edit" decides one call: name it with "toolCallId" or "callKey"',
    );
    expect(describeBadDecision({ decisionId: 'd', decision: 'respond', callKey: 'k', response: '  ' })).toMatch(
      /"respond" needs "response"/,
    );
    expect(describeBadDecision({ decisionId: 'd', decision: 'approve', arguments: {} })).toBe(
      '"arguments" go with an "edit" decision only',
    );
    expect(describeBadDecision({ decisionId: 'd', decision: 'reject', response: 'x' })).toBe(
      '"response" goes with a "respond" decision only',
    );
    expect(describeBadDecision({ decisionId: 'd', decision: 'maybe' })).toBe(
      '"decision" must be "approve", "reject", "edit" or "respond"',
    );
    expect(
      describeBadDecision({ decisionId: 'd', decision: 'edit', callKey: 'k', arguments: { a: 1 } }),
    ).toBeUndefined();
    const big: ApprovalDecision = {
      decisionId: 'd',
      decision: 'edit',
      toolCallId: 'c',
      arguments: { text: 'x'.repeat(EDITED_ARGUMENTS_MAX_BYTES) },
    };
    expect(describeOversizedDecision(big)).toMatch(
      new RegExp(`"arguments" are \\d+ bytes of JSON; they may have at most ${EDITED_ARGUMENTS_MAX_BYTES}`),
    );
  });

  it("an approval's signature is what it was before edit and respond existed; an edit's covers its arguments, in any key order", () => {
    const approve: ApprovalDecision = {
      decisionId: 'd-1',
      decision: 'approve',
      toolCallId: 'call_1',
      callKey: 'conv/msg-1/call-0',
      decidedBy: 'bob',
      sentAt: '2026-11-26T08:00:00.000Z',
    };
    const before = JSON.stringify([
      'durable-agent-decision/1',
      'conv',
      'd-1',
      'approve',
      'call_1',
      'conv/msg-1/call-0',
      null,
      'bob',
      '2026-11-26T08:00:00.000Z',
    ]);
    expect(signDecision(key, 'conv', approve)).toBe(
      `k1.${createHmac('sha256', key.secret).update(before).digest().toString('base64url')}`,
    );

    const edit: ApprovalDecision = {
      decisionId: 'd-2',
      decision: 'edit',
      toolCallId: 'call_1',
      arguments: { amount: 120, order: 'o1' },
    };
    const signed = { ...edit, signature: signDecision(key, 'conv', edit) };
    expect(checkDecisionSignature([key], 'conv', signed)).toBe('valid');
    expect(checkDecisionSignature([key], 'conv', { ...signed, arguments: { order: 'o1', amount: 120 } })).toBe('valid');
    expect(checkDecisionSignature([key], 'conv', { ...signed, arguments: { amount: 150, order: 'o1' } })).toBe(
      'invalid',
    );
    const respond: ApprovalDecision = {
      decisionId: 'd-3',
      decision: 'respond',
      toolCallId: 'call_1',
      response: 'done',
    };
    const answered = { ...respond, signature: signDecision(key, 'conv', respond) };
    expect(checkDecisionSignature([key], 'conv', answered)).toBe('valid');
    expect(checkDecisionSignature([key], 'conv', { ...answered, response: 'not done' })).toBe('invalid');
  });
});
