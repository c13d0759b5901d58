/**
 * Standing grants: a person approving a call may also let later calls of the
 * same tool in the same conversation run without asking, within limits (a
 * count, an amount summed over an argument, a time). Types and pure checks;
 * workflow-safe. The rules that apply them are in `src/core/grants.ts`.
 */

/** What a grant given with an approval covers, as its grantor asks for it. */
export interface GrantRequest {
  /** How many later calls it covers (1 to {@link GRANT_MAX_CALLS}). */
  maxCalls?: number;
  /**
   * The most the covered calls may add up to, summed over one numeric argument (e.g. `amount_cents`, or a dotted path):
   * a call whose argument would take the sum over it, or that lacks a number there, is not covered.
   */
  maxAmount?: { argument: string; total: number };
  /** How long it lasts, in milliseconds from the approval (default and most: {@link GRANT_MAX_MS}). */
  expiresInMs?: number;
}

/** A grant covers at most this many calls. */
export const GRANT_MAX_CALLS = 1000;
/** A grant lasts at most (and by default) 30 days. */
export const GRANT_MAX_MS = 30 * 24 * 3600 * 1000;

/** A grant as the conversation keeps it and its state shows it. */
export interface StandingGrant {
  /** The id of the decision that gave it. */
  id: string;
  /** The tool whose later calls it covers. */
  toolName: string;
  /** The approval policy's rule of the call it was given with: it covers calls under the same rule only. */
  rule?: string;
  /** Who gave it (the approving decision's `decidedBy`). */
  grantedBy?: string;
  /** Whether a signature proved who gave it. */
  authenticated?: boolean;
  /** The effect key of the call it was given with. */
  callKey: string;
  /** Workflow time it was given, ms since the epoch. */
  grantedAt: number;
  /** Workflow time it ends, ms since the epoch. */
  expiresAt: number;
  maxCalls?: number;
  /** Calls it covered so far. */
  callsUsed: number;
  /** The amount limit, with what the covered calls added up to so far. */
  amount?: { argument: string; total: number; used: number };
  /** Set once it was revoked: workflow time and who revoked it. */
  revokedAt?: number;
  revokedBy?: string;
}

/** A request to revoke a grant (the `revokeGrant` signal). */
export interface GrantRevocation {
  /** The grant's id (the decision that gave it). */
  grantId: string;
  /** Who revokes it, as the sender names them. */
  revokedBy?: string;
  reason?: string;
}

/** Says what is wrong with a grant request, or undefined when it is one. */
export function describeBadGrant(grant: unknown): string | undefined {
  if (typeof grant !== 'object' || grant === null || Array.isArray(grant))
    return '"grant", when given, must be an object like {"maxCalls": 2, "expiresInMs": 3600000}';
  const g = grant as Record<string, unknown>;
  const unknown = Object.keys(g).filter((k) => !['maxCalls', 'maxAmount', 'expiresInMs'].includes(k));
  if (unknown.length > 0)
    return `"grant" has unknown ${unknown.map((k) => `"${k}"`).join(', ')} (maxCalls, maxAmount, expiresInMs)`;
  if (g.maxCalls === undefined && g.maxAmount === undefined && g.expiresInMs === undefined)
    return '"grant" needs a limit: "maxCalls", "maxAmount" or "expiresInMs"';
  if (
    g.maxCalls !== undefined &&
    (!Number.isInteger(g.maxCalls) || (g.maxCalls as number) < 1 || (g.maxCalls as number) > GRANT_MAX_CALLS)
  )
    return `"grant.maxCalls" must be a whole number from 1 to ${GRANT_MAX_CALLS}`;
  if (
    g.expiresInMs !== undefined &&
    (!Number.isInteger(g.expiresInMs) || (g.expiresInMs as number) < 1 || (g.expiresInMs as number) > GRANT_MAX_MS)
  )
    return `"grant.expiresInMs" must be a whole number of milliseconds from 1 to ${GRANT_MAX_MS} (30 days)`;
  if (g.maxAmount !== undefined) {
    const a = g.maxAmount as Record<string, unknown>;
    if (
      typeof a !== 'object' ||
      a === null ||
      typeof a.argument !== 'string' ||
      a.argument === '' ||
      a.argument.length > 200 ||
      typeof a.total !== 'number' ||
      !Number.isFinite(a.total) ||
      a.total <= 0 ||
      Object.keys(a).some((k) => k !== 'argument' && k !== 'total')
    )
      return '"grant.maxAmount" must be {"argument": "<argument name or dotted path>", "total": <a positive number>}';
  }
  return undefined;
}

/** The decision id of a call a grant covered: one per call instance. */
export function grantedDecisionId(callKey: string): string {
  return `grant/${callKey}`;
}
