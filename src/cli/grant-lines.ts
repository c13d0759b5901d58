/**
 * Standing grants on the command line (docs/approval-policies.md#standing-grants):
 * reading `approve`'s `--grant-calls`, `--grant-amount` and `--grant-for`
 * into a grant request, and printing a conversation's grants, one line
 * each. Pure, so it is tested alone.
 */
import { describeBadGrant, GRANT_MAX_CALLS, GRANT_MAX_MS, type GrantRequest, type GrantView } from '../contract';

/** Milliseconds in each unit `--grant-for` takes. */
const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A duration like `45s`, `30m`, `2h` or `1d`, in milliseconds (at most 30 days); throws saying what it takes when it
 * is not one.
 */
export function parseGrantDuration(text: string): number {
  const match = /^([0-9]+)(s|m|h|d)$/.exec(text.trim());
  if (!match)
    throw new Error(
      `--grant-for takes a duration like 30m, 2h or 1d (a whole number then s, m, h or d), not "${text}".`,
    );
  const ms = Number(match[1]) * UNIT_MS[match[2]];
  if (ms < 1 || ms > GRANT_MAX_MS)
    throw new Error(`--grant-for is ${ms < 1 ? 'zero' : `"${text}"`}; a grant lasts from 1 s to 30 days (30d).`);
  return ms;
}

/** The options of `approve` that ask for a grant, as commander hands them over (all strings). */
export interface GrantOptions {
  grantCalls?: string;
  grantAmount?: string;
  grantFor?: string;
}

/**
 * The grant `approve`'s options ask for, or undefined when they ask for none. Throws, saying the limit, when one is
 * not valid: `--grant-calls` a whole number from 1 to 1000, `--grant-amount` `<argument>=<total>` with a total above 0,
 * `--grant-for` a duration of at most 30 days.
 */
export function grantOfOptions(options: GrantOptions): GrantRequest | undefined {
  const grant: GrantRequest = {};
  if (options.grantCalls !== undefined) {
    const calls = options.grantCalls.trim();
    if (!/^[0-9]+$/.test(calls) || Number(calls) < 1 || Number(calls) > GRANT_MAX_CALLS)
      throw new Error(`--grant-calls takes a whole number from 1 to ${GRANT_MAX_CALLS}, not "${options.grantCalls}".`);
    grant.maxCalls = Number(calls);
  }
  if (options.grantAmount !== undefined) {
    const at = options.grantAmount.lastIndexOf('=');
    const argument = at > 0 ? options.grantAmount.slice(0, at).trim() : '';
    const total = at > 0 ? Number(options.grantAmount.slice(at + 1).trim()) : NaN;
    if (argument === '' || !Number.isFinite(total) || total <= 0 || options.grantAmount.slice(at + 1).trim() === '')
      throw new Error(
        `--grant-amount takes <argument>=<total>, the numeric argument summed over the covered calls and the most they may add up to (above 0), e.g. amount_cents=50000; not "${options.grantAmount}".`,
      );
    grant.maxAmount = { argument, total };
  }
  if (options.grantFor !== undefined) grant.expiresInMs = parseGrantDuration(options.grantFor);
  if (grant.maxCalls === undefined && grant.maxAmount === undefined && grant.expiresInMs === undefined)
    return undefined;
  const bad = describeBadGrant(grant);
  if (bad) throw new Error(`The grant is not valid: ${bad}.`);
  return grant;
}

/** A grant's limits in words: "up to 2 later calls, up to 50000 of amount_cents in all, for 2h". */
export function grantLimitsText(grant: GrantRequest): string {
  return [
    grant.maxCalls !== undefined && `up to ${grant.maxCalls} later call${grant.maxCalls === 1 ? '' : 's'}`,
    grant.maxAmount && `up to ${grant.maxAmount.total} of ${grant.maxAmount.argument} in all`,
    grant.expiresInMs !== undefined && `for ${durationText(grant.expiresInMs)}`,
  ]
    .filter((p): p is string => typeof p === 'string')
    .join(', ');
}

/** A duration as `--grant-for` writes it, in its largest whole unit. */
function durationText(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's']) if (ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  return `${ms}ms`;
}

/** Where a grant stands: live, revoked, expired, or used up (its calls or amount spent). */
export function grantState(grant: GrantView, now: number): 'live' | 'revoked' | 'expired' | 'used up' {
  if (grant.revokedAt !== undefined) return 'revoked';
  if (grant.live) return 'live';
  return Date.parse(grant.expiresAt) <= now ? 'expired' : 'used up';
}

/**
 * One grant in a line: id, state, tool and rule, who gave it, its use against its limits, and until when (or who
 * revoked it), e.g. `grant-1  live  issue_refund (rule refunds)  by bob  calls 1 of 2  until 2026-03-01T10:00:00.000Z`.
 */
export function grantLine(grant: GrantView, now: number): string {
  const rule = grant.rule ? ` (rule ${grant.rule})` : '';
  const calls =
    grant.maxCalls !== undefined ? `calls ${grant.callsUsed} of ${grant.maxCalls}` : `calls ${grant.callsUsed}`;
  const amount = grant.amount ? `  ${grant.amount.argument} ${grant.amount.used} of ${grant.amount.total}` : '';
  const end =
    grant.revokedAt !== undefined
      ? `  revoked${grant.revokedBy ? ` by ${grant.revokedBy}` : ''} at ${grant.revokedAt}`
      : `  until ${grant.expiresAt}`;
  return `${grant.id}  ${grantState(grant, now)}  ${grant.toolName}${rule}  by ${grant.grantedBy ?? 'nobody named'}  ${calls}${amount}${end}`;
}
