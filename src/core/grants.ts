/**
 * Standing grants in the conversation: given with an approval of one call,
 * they let later calls of the same tool (under the same approval policy rule)
 * run without asking, within their limits; revocable; never past their
 * limits. A covered call is decided by its grantor's grant, recorded like a
 * person's decision. Pure.
 */
import { GRANT_MAX_MS, grantedDecisionId, type GrantRevocation, type StandingGrant } from '../contract/grants';
import type { ApprovalDecision } from '../contract/decisions';
import type { DecisionRecord, GrantRevocationRecord } from '../contract/activities';
import { approvalsNeeded, argumentAt } from '../contract/policies';
import { parseJsonOrText } from '../contract/text';
import type { BatchCall } from './batch';
import type { CoreState } from './state';

/** Why a decision's grant cannot be given on the call of `ids`, or undefined when it can (or it asks for none). */
export function grantRefusal(s: CoreState, decision: ApprovalDecision, ids: readonly string[]): string | undefined {
  if (!decision.grant) return undefined;
  const call = ids.length === 1 ? s.batch?.get(ids[0]) : undefined;
  if (!call) return 'A grant is given with the approval of one call: name it by "toolCallId" or "callKey".';
  if (approvalsNeeded(call.policy) > 1) {
    return (
      `Tool call "${call.id}" (${call.name}) needs ${approvalsNeeded(call.policy)} different people under the approval policy's rule "${call.policy?.rule}": ` +
      'a grant would let one person approve later calls alone. Approve without a grant.'
    );
  }
  if (call.subAgent !== undefined)
    return `Tool call "${call.id}" runs an agent (${call.subAgent}): its calls take no grant.`;
  return undefined;
}

/** Gives the grant an applied approval asked for: kept in the conversation's state (across continue-as-new). */
export function giveGrant(
  s: CoreState,
  decision: ApprovalDecision,
  call: BatchCall,
  authenticated: boolean | undefined,
): StandingGrant | undefined {
  const asked = decision.grant;
  if (!asked) return undefined;
  const now = s.env.now();
  const grant: StandingGrant = {
    id: decision.decisionId,
    toolName: call.name,
    ...(call.policy?.rule !== undefined ? { rule: call.policy.rule } : {}),
    ...(decision.decidedBy !== undefined ? { grantedBy: decision.decidedBy } : {}),
    ...(authenticated !== undefined ? { authenticated } : {}),
    callKey: call.key,
    grantedAt: now,
    expiresAt: now + Math.min(asked.expiresInMs ?? GRANT_MAX_MS, GRANT_MAX_MS),
    ...(asked.maxCalls !== undefined ? { maxCalls: asked.maxCalls } : {}),
    callsUsed: 0,
    ...(asked.maxAmount ? { amount: { ...asked.maxAmount, used: 0 } } : {}),
  };
  s.kept.grants = [...(s.kept.grants ?? []), grant];
  return grant;
}

/** Whether a grant still covers anything: not revoked, not expired, calls left. */
export function isLive(grant: StandingGrant, now: number): boolean {
  return (
    grant.revokedAt === undefined &&
    now < grant.expiresAt &&
    (grant.maxCalls === undefined || grant.callsUsed < grant.maxCalls) &&
    (grant.amount === undefined || grant.amount.used < grant.amount.total)
  );
}

/**
 * The amount a call would count against the grant's amount limit, when it fits: undefined for a grant without one,
 * null when the call does not fit (no number at the argument, or over what is left).
 */
function amountOf(grant: StandingGrant, call: BatchCall): number | undefined | null {
  if (!grant.amount) return undefined;
  const value = argumentAt(parseJsonOrText(call.arguments), grant.amount.argument);
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return null;
  return grant.amount.used + value <= grant.amount.total ? value : null;
}

/**
 * The open batch's calls that wait for a person and that a live grant covers (the same tool, the same rule, within its
 * limits) are decided by it: ready to run, each with a decision by the grantor that names the grant. Returns the
 * records to store with the message that asked for them. Grants are used in the order they were given.
 */
export function applyGrants(s: CoreState): void {
  const grants = s.kept.grants;
  const batch = s.batch;
  if (!grants || grants.length === 0 || !batch) return;
  const now = s.env.now();
  for (const call of batch.awaitingApproval()) {
    if (call.subAgent !== undefined || approvalsNeeded(call.policy) > 1) continue;
    for (const grant of grants) {
      if (!isLive(grant, now) || grant.toolName !== call.name || grant.rule !== call.policy?.rule) continue;
      const amount = amountOf(grant, call);
      if (amount === null) continue;
      grant.callsUsed++;
      if (grant.amount && amount !== undefined) grant.amount.used += amount;
      batch.coverByGrant(call.id, {
        decisionId: grantedDecisionId(call.key),
        approved: true,
        ...(grant.grantedBy !== undefined ? { decidedBy: grant.grantedBy } : {}),
        ...(grant.authenticated !== undefined ? { authenticated: grant.authenticated } : {}),
        decidedAt: now,
        ...(grant.rule !== undefined ? { rule: grant.rule } : {}),
        grant: grant.id,
        ...(amount !== undefined ? { grantAmount: amount } : {}),
      });
      break;
    }
  }
}

/** The record of a call a grant covered, to store with the message that asked for it. */
export function grantedRecord(s: CoreState, call: BatchCall): DecisionRecord | undefined {
  const d = call.decision;
  if (!d?.grant) return undefined;
  return {
    conversationId: s.id,
    decisionId: d.decisionId,
    decision: 'approve',
    toolCallIds: [call.id],
    callKeys: [call.key],
    ...(d.decidedBy !== undefined ? { decidedBy: d.decidedBy } : {}),
    decidedAt: d.decidedAt,
    via: 'grant',
    ...(d.authenticated !== undefined ? { authenticated: d.authenticated } : {}),
    ...(d.rule !== undefined ? { rule: d.rule } : {}),
    grantId: d.grant,
    ...(d.grantAmount !== undefined ? { grantAmount: d.grantAmount } : {}),
  };
}

/**
 * Revokes a grant: it covers no call from now on. Returns what to record, or a refusal (no such grant, revoked
 * already).
 */
export function revokeGrant(
  s: CoreState,
  revocation: GrantRevocation,
): { record: GrantRevocationRecord } | { refusal: string } {
  const grant = (s.kept.grants ?? []).find((g) => g.id === revocation?.grantId);
  if (!grant) return { refusal: `No grant "${String(revocation?.grantId)}" was given in conversation ${s.id}.` };
  if (grant.revokedAt !== undefined) return { refusal: `Grant "${grant.id}" was revoked already.` };
  const now = s.env.now();
  grant.revokedAt = now;
  const by = typeof revocation.revokedBy === 'string' ? revocation.revokedBy.slice(0, 200) : undefined;
  if (by !== undefined) grant.revokedBy = by;
  const reason = typeof revocation.reason === 'string' ? revocation.reason.slice(0, 2000) : undefined;
  return {
    record: {
      conversationId: s.id,
      grantId: grant.id,
      ...(by !== undefined ? { revokedBy: by } : {}),
      ...(reason !== undefined ? { reason } : {}),
      revokedAt: now,
    },
  };
}
