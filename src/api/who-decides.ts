/**
 * Who may decide a waiting call, as the API, the inbox page and the chat see
 * it before sending anything: four eyes (a turn's requester may not approve
 * its calls) and the approval policy's rule the call waits under (who may
 * decide it, N of M). A courtesy: the workflow checks the same rule
 * (`policyRefusal`, src/contract/policies.ts) on the signed decision, and
 * its check is the one that counts. Pure.
 */
import { policyRefusal, type CallPolicy } from '../contract/policies';
import type { WaitingPolicy } from '../contract/waiting-calls';
import type { ApiPrincipal } from './tokens';

/** The facts of a waiting call the checks read: who asked for it and the rule it waits under. */
export interface DecidedCall {
  requestedBy: readonly string[];
  policy?: WaitingPolicy;
}

/** Who decides: their subject and the groups their token gave them. */
export type Decider = Pick<ApiPrincipal, 'subject'> & { groups?: ReadonlySet<string> | readonly string[] };

/** Why a decision may not be taken on a call: the API's code, and what to do, for people. */
export interface DecisionRefusal {
  /** `four_eyes`: the decider sent the request and may not approve its calls; `not_permitted`: the rule says no. */
  code: 'four_eyes' | 'not_permitted';
  message: string;
}

/** The rule a call waits under, as the workflow's check reads it: a rule that asks a person. */
export function callPolicyOf(policy: WaitingPolicy): CallPolicy {
  return {
    rule: policy.rule,
    outcome: 'ask',
    approvals: policy.approvals,
    ...(policy.groups === undefined ? {} : { groups: policy.groups }),
    ...(policy.requesterMayApprove === undefined ? {} : { requesterMayApprove: policy.requesterMayApprove }),
    ...(policy.reason === undefined ? {} : { reason: policy.reason }),
  };
}

/**
 * Whether the decider sent the request that asked for the call and may therefore not approve it (four eyes): the
 * call's rule says whether its requester may approve (`requesterMayApprove`); a call without a rule follows the API's
 * `allowSelfApproval`. Rejecting is always open to a requester.
 */
export function fourEyesForbid(
  decider: Decider,
  call: DecidedCall,
  approving: boolean,
  allowSelfApproval: boolean,
): boolean {
  if (!approving || !call.requestedBy.includes(decider.subject)) return false;
  return call.policy ? call.policy.requesterMayApprove !== true : !allowSelfApproval;
}

/**
 * Why `decider` may not take a decision on `call` (approving: approve, edit or respond; else reject), or undefined
 * when they may: four eyes first ({@link fourEyesForbid}), then the call's rule (its groups, an approval the decider
 * gave already). The decision is taken to be signed by the API, so the groups are trusted.
 */
export function decisionRefusal(
  decider: Decider,
  call: DecidedCall,
  approving: boolean,
  allowSelfApproval: boolean,
): DecisionRefusal | undefined {
  const who = decider.subject;
  if (fourEyesForbid(decider, call, approving, allowSelfApproval)) {
    const rule = call.policy ? ` The approval policy's rule "${call.policy.rule}" keeps it so.` : '';
    return {
      code: 'four_eyes',
      message: `${who} sent the request that asked for this call, and a request's sender may not approve its calls (four eyes).${rule} ${who} may reject it; ask another approver to approve it.`,
    };
  }
  if (!call.policy) return undefined;
  const message = policyRefusal(
    callPolicyOf(call.policy),
    { subject: who, groups: [...(decider.groups ?? [])].sort(), authenticated: true },
    approving,
    call.requestedBy,
    call.policy.approvedBy,
  );
  return message === undefined ? undefined : { code: 'not_permitted', message };
}

/**
 * Whether `principal` may approve `call`: has the role approver, four eyes do not keep them out (`allowSelfApproval`:
 * the API's setting, for calls without a rule), and the call's rule lets them.
 */
export function mayApprove(
  principal: Pick<ApiPrincipal, 'subject' | 'roles' | 'groups'>,
  call: DecidedCall,
  options: { allowSelfApproval?: boolean },
): boolean {
  return (
    principal.roles.has('approver') &&
    decisionRefusal(principal, call, true, options.allowSelfApproval === true) === undefined
  );
}

/**
 * The caller's queue: the calls `principal` may approve ({@link mayApprove}) first, then the others, each part in the
 * order given (oldest first), with how many are theirs.
 */
export function yoursFirst<T extends DecidedCall>(
  principal: Pick<ApiPrincipal, 'subject' | 'roles' | 'groups'>,
  calls: readonly T[],
  options: { allowSelfApproval?: boolean },
): { calls: (T & { mayDecide: boolean })[]; yours: number } {
  const marked = calls.map((c) => ({ ...c, mayDecide: mayApprove(principal, c, options) }));
  const yours = marked.filter((c) => c.mayDecide);
  return { calls: [...yours, ...marked.filter((c) => !c.mayDecide)], yours: yours.length };
}

/** Who may decide a call under `policy`, in words: "members of finance or legal", or "any approver". */
export function whoMayDecide(policy: WaitingPolicy): string {
  const groups = policy.groups;
  if (groups === undefined) return 'any approver';
  if (groups.length === 0) return 'nobody (the rule names no group)';
  return `members of ${groups.length === 1 ? groups[0] : `${groups.slice(0, -1).join(', ')} or ${groups.at(-1)}`}`;
}

/** Where a call's approvals stand under `policy`: "1 of 2 (by alice@example.com)", or "0 of 2". */
export function approvalsSoFar(policy: WaitingPolicy): string {
  const by = policy.approvedBy.length > 0 ? ` (by ${policy.approvedBy.join(', ')})` : '';
  return `${policy.approvedBy.length} of ${policy.approvals}${by}`;
}

/** Where a call's escalation ladder stands: "step 1 of 2", or undefined for a rule without one. */
export function escalationSoFar(policy: WaitingPolicy): string | undefined {
  if (policy.escalationSteps === undefined) return undefined;
  return `step ${policy.escalated ?? 0} of ${policy.escalationSteps}`;
}
