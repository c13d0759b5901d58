import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AUDIT_MAX_RANGE_DAYS, auditRange, describeBadAuditRange } from '../../src/audit/range';
import type { AuditRecord } from '../../src/audit/record';
import { describeAuditMismatch, verifyAuditRecord } from '../../src/audit/verify';
import { auditVerificationFailed, describeAuditVerification, verifyAuditExport } from '../../src/audit/verify-export';
import { signDecision, type DecisionKey } from '../../src/common/decision-signing';
import type { ApprovalDecision } from '../../src/contract/decisions';
import { parseAuditCallKey } from '../../src/db/audit';

// An audit record's signature checked again: valid only when the API's key signed the decision for the record's
// conversation and the record says what was signed; every field a person could change after export is caught.

const KEY: DecisionKey = { id: 'k1', secret: 's'.repeat(40) };
const OLD_KEY: DecisionKey = { id: 'k0', secret: 'o'.repeat(40) };
const OTHER_KEY: DecisionKey = { id: 'k9', secret: 'x'.repeat(40) };
const CONVERSATION = 'shop-1';
const CALL_KEY = `${CONVERSATION}/msg-1/call-0`;

/** A person's decision as the API signs it, and its record as the export writes it. */
function signedRecord(decision: Partial<ApprovalDecision> = {}, key = KEY): AuditRecord {
  const d: ApprovalDecision = {
    decisionId: 'd-1',
    decision: 'approve',
    toolCallId: 'call_1',
    callKey: CALL_KEY,
    decidedBy: 'bob@example.com',
    sentAt: '2026-03-01T10:00:00.000Z',
    ...decision,
  };
  const signed = { ...d, signature: signDecision(key, CONVERSATION, d) };
  return {
    kind: 'decision',
    conversationId: CONVERSATION,
    decisionId: d.decisionId,
    decidedAt: '2026-03-01T10:00:00.050Z',
    decidedBy: d.decidedBy ?? null,
    authenticated: true,
    deciderGroups: d.deciderGroups ?? null,
    via: 'update',
    verdict: d.decision,
    callStillWaits: false,
    rule: null,
    reason: d.reason ?? null,
    response: d.response ?? null,
    calls: [
      {
        toolCallId: 'call_1',
        callKey: CALL_KEY,
        toolName: 'issue_refund',
        arguments: { order_id: 'ord_1', amount_cents: 100 },
        editedArguments: d.arguments ?? null,
        note: null,
      },
    ],
    superseded: false,
    supersededAt: null,
    runId: 'run-1',
    signedDecision: signed,
    grantId: null,
    grantAmount: null,
    grantGiven: null,
  };
}

const ruleRecord = (): AuditRecord => ({
  ...signedRecord(),
  kind: 'policy',
  decisionId: `rule/${CALL_KEY}`,
  decidedBy: 'rule:small-refunds',
  authenticated: null,
  via: 'policy',
  rule: 'small-refunds',
  signedDecision: null,
});

describe('verifyAuditRecord', () => {
  it('a decision the API signed, recorded as signed, is valid; with any key of the list (rotation)', () => {
    expect(verifyAuditRecord(signedRecord(), [KEY])).toBe('valid');
    expect(verifyAuditRecord(signedRecord({}, OLD_KEY), [KEY, OLD_KEY])).toBe('valid');
    const edit = signedRecord({ decision: 'edit', arguments: { b: 2, a: { y: 1, x: [1, 2] } } });
    // The export's edited arguments may come back with their keys in another order (jsonb): the same arguments.
    edit.calls[0].editedArguments = { a: { x: [1, 2], y: 1 }, b: 2 };
    expect(verifyAuditRecord(edit, [KEY])).toBe('valid');
    const grouped = signedRecord({ deciderGroups: ['leads', 'finance'] });
    grouped.deciderGroups = ['finance', 'leads'];
    expect(verifyAuditRecord(grouped, [KEY])).toBe('valid');
    const respond = signedRecord({ decision: 'respond', response: 'Order shipped on Monday.' });
    expect(verifyAuditRecord(respond, [KEY])).toBe('valid');
  });

  it("a rule's own decision, an unauthenticated one and one recorded before signatures were kept are unsigned", () => {
    expect(verifyAuditRecord(ruleRecord(), [KEY])).toBe('unsigned');
    expect(verifyAuditRecord({ ...signedRecord(), authenticated: false, signedDecision: null }, [KEY])).toBe(
      'unsigned',
    );
  });

  it('a changed signed decision, conversation or signature is invalid; a key not given is unknown_key', () => {
    const record = signedRecord();
    const changed = (signed: Partial<ApprovalDecision>) => ({
      ...record,
      signedDecision: { ...record.signedDecision!, ...signed },
    });
    expect(verifyAuditRecord(changed({ decidedBy: 'mallory' }), [KEY])).toBe('invalid');
    expect(verifyAuditRecord(changed({ decision: 'reject' }), [KEY])).toBe('invalid');
    expect(verifyAuditRecord({ ...record, conversationId: 'shop-2' }, [KEY])).toBe('invalid');
    expect(verifyAuditRecord(changed({ signature: `k1.${'A'.repeat(43)}` }), [KEY])).toBe('invalid');
    const { signature: _dropped, ...unsignedSigned } = record.signedDecision!;
    expect(verifyAuditRecord({ ...record, signedDecision: unsignedSigned }, [KEY])).toBe('invalid');
    expect(verifyAuditRecord(signedRecord({}, OTHER_KEY), [KEY])).toBe('unknown_key');
    expect(verifyAuditRecord(record, [])).toBe('unknown_key');
  });

  it('a record that says something other than its valid signed decision is a mismatch, naming the field and both values', () => {
    const cases: [string, (r: AuditRecord) => void, RegExp][] = [
      ['verdict', (r) => (r.verdict = 'reject'), /verdict: the signed decision says "approve", the record "reject"/],
      ['decider', (r) => (r.decidedBy = 'fiona@example.com'), /decided by: .*"bob@example.com".*"fiona@example.com"/],
      ['decision id', (r) => (r.decisionId = 'd-2'), /decision id/],
      ['reason', (r) => (r.reason = 'looks fine'), /reason: the signed decision says null, the record "looks fine"/],
      ['response', (r) => (r.response = 'done'), /response/],
      ['call key', (r) => (r.calls[0].callKey = `${CONVERSATION}/msg-3/call-0`), /call key/],
      ['tool call id', (r) => (r.calls[0].toolCallId = 'call_2'), /tool call id/],
      [
        'another call',
        (r) => r.calls.push({ ...r.calls[0], toolCallId: 'call_9', callKey: 'x/msg-9/call-0' }),
        /tool call id.*call key/,
      ],
      ['edited arguments', (r) => (r.calls[0].editedArguments = { amount_cents: 1 }), /edited arguments/],
      [
        'groups',
        (r) => (r.deciderGroups = ['finance']),
        /decider groups: the signed decision says \[\], the record \["finance"\]/,
      ],
    ];
    for (const [what, change, problem] of cases) {
      const record = signedRecord();
      change(record);
      expect(verifyAuditRecord(record, [KEY]), what).toBe('mismatch');
      expect(describeAuditMismatch(record), what).toMatch(problem);
    }
    const edit = signedRecord({ decision: 'edit', arguments: { amount_cents: 50 } });
    edit.calls[0].editedArguments = { amount_cents: 5000 };
    expect(describeAuditMismatch(edit)).toMatch(/edited arguments: the signed decision says \{"amount_cents":50\}/);
    expect(describeAuditMismatch(signedRecord())).toBeUndefined();
  });
});

describe('verifyAuditExport', () => {
  const lines = (...records: (AuditRecord | string)[]) =>
    Readable.from(records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))));

  it('counts valid and unsigned records by why, lists each failure by line and decision id, and fails on any', async () => {
    const tampered = signedRecord({ decisionId: 'd-7' });
    tampered.verdict = 'reject';
    const unauthenticated = { ...signedRecord({ decisionId: 'd-3' }), authenticated: false, signedDecision: null };
    const result = await verifyAuditExport(
      lines(
        signedRecord(),
        ruleRecord(),
        '',
        unauthenticated,
        tampered,
        '{"kind": "decision"',
        signedRecord({ decisionId: 'd-8' }, OTHER_KEY),
        '{"kind": "escalation"}',
      ),
      [KEY],
    );
    expect(result).toMatchObject({
      records: 7,
      valid: 1,
      unsigned: { byRule: 1, byGrant: 0, unauthenticated: 1, notKept: 0 },
      failed: { invalid: 0, mismatch: 1, unknown_key: 1, malformed: 2 },
    });
    expect(result.failures.map((f) => [f.line, f.verdict, f.decisionId])).toEqual([
      [5, 'mismatch', 'd-7'],
      [6, 'malformed', undefined],
      [7, 'unknown_key', 'd-8'],
      [8, 'malformed', undefined],
    ]);
    expect(auditVerificationFailed(result)).toBe(true);
    const text = describeAuditVerification(result, 'audit.jsonl', ['k1']).join('\n');
    expect(text).toContain('Checked 7 records of audit.jsonl with key k1:');
    expect(text).toContain('  1 valid');
    expect(text).toContain('  2 unsigned (1 decided by a rule, 1 unauthenticated)');
    expect(text).toContain('line 5 (decision d-7 of shop-1): mismatch: verdict: the signed decision says "approve"');
    expect(text).toContain('line 6: malformed: not JSON');
    expect(text).toContain('line 7 (decision d-8 of shop-1): unknown_key: signed with key "k9"');
    expect(text).toMatch(/line 8: malformed: not an audit record: kind/);
  });

  it('an export of valid and unsigned records passes', async () => {
    const result = await verifyAuditExport(lines(signedRecord(), ruleRecord()), [KEY]);
    expect(auditVerificationFailed(result)).toBe(false);
    expect(result.failures).toEqual([]);
  });
});

describe('the range of an export', () => {
  it('takes ISO 8601 with Z or an offset, or a date, from included to excluded, at most a year', () => {
    expect(auditRange('2026-01-01', '2026-01-02T00:00:00+02:00')).toEqual({
      from: new Date('2026-01-01T00:00:00Z'),
      to: new Date('2026-01-01T22:00:00Z'),
    });
    expect(describeBadAuditRange('2026-01-01T00:00:00Z', `2027-01-02T00:00:00Z`)).toBeUndefined(); // 366 days
    expect(describeBadAuditRange('2026-01-01T00:00:00Z', '2027-01-02T00:00:01Z')).toContain(
      `one export covers at most ${AUDIT_MAX_RANGE_DAYS}`,
    );
    expect(describeBadAuditRange('2026-01-02', '2026-01-01')).toContain(
      '"to" (2026-01-01T00:00:00.000Z) must be after',
    );
    expect(describeBadAuditRange('2026-01-01', '2026-01-01')).toContain('must be after');
    expect(describeBadAuditRange('yesterday', '2026-01-01')).toContain('"from" is not an ISO 8601 time');
    expect(describeBadAuditRange('2026-01-01', '2026-02-30')).toContain('"to" is not an ISO 8601 time');
    expect(describeBadAuditRange('2026-01-01T10:00:00', '2026-02-01')).toContain('"from" is not an ISO 8601 time');
    expect(describeBadAuditRange('0001-01-01T00:00:00Z', '0001-01-02T00:00:00Z')).toBeUndefined();
    // Year 1 at +14:00 is still year 0 in UTC, which PostgreSQL has not: refused, not a server error.
    expect(describeBadAuditRange('0001-01-01T00:00:00+14:00', '0001-01-02T00:00:00Z')).toContain('before the year 1');
  });

  it("a call key names its message's seq and the call's place, with or without a regeneration", () => {
    expect(parseAuditCallKey('shop-1/msg-12/call-3')).toEqual({ assistantSeq: 12, index: 3 });
    expect(parseAuditCallKey('a/b/regen-2/msg-5/call-0')).toEqual({ assistantSeq: 5, index: 0 });
    expect(parseAuditCallKey('call_1')).toBeUndefined();
  });
});
