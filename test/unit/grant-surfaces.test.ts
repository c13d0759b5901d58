import { describe, expect, it } from 'vitest';
import { grantOfForm } from '../../src/api/inbox-grant-route';
import { grantRequestWords, grantStatus } from '../../src/api/inbox-grants';
import { revokeGrantBody } from '../../src/api/grant-routes';
import { decisionBody } from '../../src/api/schemas';
import type { GrantView } from '../../src/contract';
import { grantLimitsText, grantLine, grantOfOptions, parseGrantDuration } from '../../src/cli/grant-lines';

// Standing grants where people ask for them: the API's decision body, the inbox form's grant fields and the CLI's
// --grant-* options each take a grant request within the workflow's limits and refuse one outside them, saying the
// limit; the inbox and the CLI say where a grant stands.

const DAY = 86_400_000;

describe("the API's decision body", () => {
  const approve = { decision: 'approve', toolCallIds: ['call_1'] };
  it('takes a grant with an approval of one call', () => {
    expect(decisionBody.safeParse({ ...approve, grant: { maxCalls: 2 } }).success).toBe(true);
    expect(
      decisionBody.safeParse({
        ...approve,
        grant: { maxAmount: { argument: 'refund.amount_cents', total: 5_000 }, expiresInMs: 30 * DAY },
      }).success,
    ).toBe(true);
  });

  it.each([
    ['a rejection', { decision: 'reject', toolCallIds: ['call_1'], grant: { maxCalls: 1 } }, 'goes with an "approve"'],
    ['two calls', { decision: 'approve', callKeys: ['k1', 'k2'], grant: { maxCalls: 1 } }, 'exactly one call'],
    ['no limit', { ...approve, grant: {} }, 'needs a limit'],
    ['too many calls', { ...approve, grant: { maxCalls: 1001 } }, '1000'],
    ['past 30 days', { ...approve, grant: { expiresInMs: 30 * DAY + 1 } }, ''],
    ['a zero total', { ...approve, grant: { maxAmount: { argument: 'amount_cents', total: 0 } } }, ''],
    ['an unknown field', { ...approve, grant: { maxCalls: 1, forever: true } }, ''],
    ['a NUL in the argument', { ...approve, grant: { maxAmount: { argument: 'a\u0000', total: 1 } } }, 'U+0000'],
  ])('refuses a grant on %s', (_, body, says) => {
    const parsed = decisionBody.safeParse(body);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => i.message).join(' ')).toContain(says);
  });

  it('takes a revocation with or without a reason, and nothing else', () => {
    expect(revokeGrantBody.safeParse(undefined).success).toBe(true);
    expect(revokeGrantBody.safeParse({ reason: 'done' }).success).toBe(true);
    expect(revokeGrantBody.safeParse({ revokedBy: 'mallory' }).success).toBe(false);
  });
});

describe("the inbox form's grant fields", () => {
  it('read the limits given, leaving blank ones out', () => {
    expect(grantOfForm({ grantCalls: '2', grantArgument: '', grantTotal: '', grantFor: '' })).toEqual({
      grant: { maxCalls: 2 },
    });
    expect(grantOfForm({ grantArgument: 'amount_cents', grantTotal: '5000', grantFor: '2', grantUnit: 'h' })).toEqual({
      grant: { maxAmount: { argument: 'amount_cents', total: 5_000 }, expiresInMs: 2 * 3_600_000 },
    });
  });

  it.each([
    [{}, 'Give the grant a limit'],
    [{ grantCalls: '0' }, 'from 1 to 1000'],
    [{ grantCalls: '2.5' }, 'whole number'],
    [{ grantArgument: 'amount_cents' }, 'needs both'],
    [{ grantArgument: 'amount_cents', grantTotal: '-3' }, 'above 0'],
    [{ grantFor: '31', grantUnit: 'd' }, 'at most 30 days'],
    [{ grantFor: '5', grantUnit: 'w' }, 'minutes, hours or days'],
  ])('refuse %j, saying why', (fields, says) => {
    const read = grantOfForm(fields);
    expect('problem' in read && read.problem).toContain(says);
  });

  it('say a grant in words, and where it stands', () => {
    expect(
      grantRequestWords({ maxCalls: 1, maxAmount: { argument: 'amount_cents', total: 900 }, expiresInMs: DAY }),
    ).toBe('up to 1 later call, up to 900 of amount_cents in all, for 1 day');
    const now = Date.parse('2026-03-01T10:00:00Z');
    const grant: GrantView = {
      id: 'g1',
      toolName: 'issue_refund',
      callKey: 'c/msg-1/call-0',
      grantedAt: '2026-03-01T09:00:00.000Z',
      expiresAt: '2026-03-01T11:00:00.000Z',
      maxCalls: 1,
      callsUsed: 1,
      live: false,
    };
    expect(grantStatus(grant, now)).toBe('used up');
    expect(grantStatus({ ...grant, expiresAt: '2026-03-01T09:30:00.000Z' }, now)).toBe('expired');
    expect(grantStatus({ ...grant, revokedAt: '2026-03-01T09:10:00.000Z' }, now)).toBe('revoked');
    expect(grantStatus({ ...grant, callsUsed: 0, live: true }, now)).toBe('live');
  });
});

describe("the CLI's grant options", () => {
  it('read durations like 30m, 2h and 1d, up to 30 days', () => {
    expect(parseGrantDuration('45s')).toBe(45_000);
    expect(parseGrantDuration('30m')).toBe(1_800_000);
    expect(parseGrantDuration('2h')).toBe(7_200_000);
    expect(parseGrantDuration('30d')).toBe(30 * DAY);
    expect(() => parseGrantDuration('31d')).toThrow(/from 1 s to 30 days/);
    expect(() => parseGrantDuration('0m')).toThrow(/zero/);
    expect(() => parseGrantDuration('2 weeks')).toThrow(/like 30m, 2h or 1d/);
  });

  it('make a grant request of --grant-calls, --grant-amount and --grant-for, or none', () => {
    expect(grantOfOptions({})).toBeUndefined();
    expect(grantOfOptions({ grantCalls: '3', grantAmount: 'amount_cents=50000', grantFor: '2h' })).toEqual({
      maxCalls: 3,
      maxAmount: { argument: 'amount_cents', total: 50_000 },
      expiresInMs: 7_200_000,
    });
    expect(
      grantLimitsText({ maxCalls: 3, maxAmount: { argument: 'amount_cents', total: 50_000 }, expiresInMs: 7_200_000 }),
    ).toBe('up to 3 later calls, up to 50000 of amount_cents in all, for 2h');
  });

  it.each([
    [{ grantCalls: '0' }, /--grant-calls takes a whole number from 1 to 1000/],
    [{ grantCalls: 'many' }, /--grant-calls/],
    [{ grantAmount: 'amount_cents' }, /--grant-amount takes <argument>=<total>/],
    [{ grantAmount: '=5' }, /--grant-amount/],
    [{ grantAmount: 'amount_cents=-1' }, /above 0/],
    [{ grantFor: 'forever' }, /--grant-for takes a duration/],
  ])('refuse %j, saying what they take', (options, says) => {
    expect(() => grantOfOptions(options)).toThrow(says);
  });

  it('print a grant in one line: id, state, tool and rule, grantor, use, end', () => {
    const now = Date.parse('2026-03-01T10:00:00Z');
    const line = grantLine(
      {
        id: 'g1',
        toolName: 'issue_refund',
        rule: 'refunds-ask',
        grantedBy: 'bob@example.com',
        callKey: 'c/msg-1/call-0',
        grantedAt: '2026-03-01T09:00:00.000Z',
        expiresAt: '2026-03-02T09:00:00.000Z',
        maxCalls: 2,
        callsUsed: 1,
        amount: { argument: 'amount_cents', total: 5_000, used: 3_000 },
        live: true,
      },
      now,
    );
    expect(line).toBe(
      'g1  live  issue_refund (rule refunds-ask)  by bob@example.com  calls 1 of 2  amount_cents 3000 of 5000  until 2026-03-02T09:00:00.000Z',
    );
  });
});
