/**
 * What an approval policy decided about one tool call, as its plan carries it
 * to the workflow: the rule that matched, its outcome, and for a call that
 * asks a person who may decide it and how many must approve. Types and pure
 * checks only; workflow-safe.
 *
 * Rules are declared beside tools (`approvalPolicy()`, src/policies); the
 * model activity evaluates them when it plans the call, so the workflow only
 * applies what the plan says (see docs/approval-policies.md).
 */

/** What a rule does with a call it matches: ask a person, run it without asking, or refuse it without asking. */
export type PolicyOutcome = 'ask' | 'allow' | 'deny';

/** The outcomes a rule may have. */
export const POLICY_OUTCOMES: readonly PolicyOutcome[] = ['ask', 'allow', 'deny'];

/**
 * One step of a waiting call's escalation ladder: `afterMs` after the call was asked for, while nobody decided it,
 * remind (a `call.escalated` notification) and/or let more groups decide it.
 */
export interface EscalationStep {
  /** Milliseconds after the model asked for the call; each step's later than the one before. */
  afterMs: number;
  /** Send a reminder (every step is announced as `call.escalated`; `remind` says it is one). */
  remind?: boolean;
  /** Groups that may decide the call from this step on, besides the rule's. */
  addGroups?: string[];
}

/** The most steps an escalation ladder may have. */
export const MAX_ESCALATION_STEPS = 10;

/** The policy's verdict on one call, fixed when the call is planned. */
export interface CallPolicy {
  /** The name of the rule that matched. */
  rule: string;
  outcome: PolicyOutcome;
  /**
   * `ask`: the groups whose members may decide the call (any of them); absent: any approver. Groups come from the
   * decider's token (`groups` of a static token, the groups claim of an OIDC token).
   */
  groups?: string[];
  /** `ask`: how many different people must approve it (N of M); default 1. A rejection by one decides it. */
  approvals?: number;
  /**
   * `ask`: whether a person who sent the turn's messages may approve its calls (and count towards `approvals`). Default
   * false (four eyes). Rejecting is always open to them.
   */
  requesterMayApprove?: boolean;
  /** Why, in the rule's words: what the model reads for a `deny`, what approvers see for an `ask`. */
  reason?: string;
  /** `ask`: what happens while nobody decides it, step by step, before the approval deadline's outcome. */
  escalation?: EscalationStep[];
}

/** The most approvals a rule may ask for one call. */
export const MAX_POLICY_APPROVALS = 10;

/** A rule's name: recorded as who decided an allowed or denied call (`rule:<name>`). */
export const POLICY_RULE_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

/** A group's name, as tokens carry it. */
export const POLICY_GROUP_NAME = /^[A-Za-z0-9_.:@/-]{1,128}$/;

/** Who decided a call a rule allowed or denied, as records and the transcript name it. */
export function ruleDecider(rule: string): string {
  return `rule:${rule}`;
}

/** The decision id of a rule's outcome on one call instance: stable, so a retried write records it once. */
export function ruleDecisionId(callKey: string): string {
  return `rule/${callKey}`;
}

/** The argument at a dotted path of a call's arguments (an exact key first), or undefined. */
export function argumentAt(args: unknown, path: string): unknown {
  if (typeof args !== 'object' || args === null) return undefined;
  const record = args as Record<string, unknown>;
  if (Object.hasOwn(record, path)) return record[path];
  let v: unknown = args;
  for (const part of path.split('.')) {
    if (typeof v !== 'object' || v === null || !Object.hasOwn(v, part)) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** How many approvals a call under `policy` needs (1 without a policy). */
export function approvalsNeeded(policy: CallPolicy | undefined): number {
  return policy?.outcome === 'ask' ? (policy.approvals ?? 1) : 1;
}

/**
 * Why `decider` may not make this decision on a call under `policy`, or undefined when they may. `decider`: who
 * decides and the groups their token gave them, `authenticated` when a signature proved both; `requesters`: who sent the
 * turn's messages; `approvedBy`: who approved the call so far (N of M).
 */
export function policyRefusal(
  policy: CallPolicy | undefined,
  decider: { subject?: string; groups?: readonly string[]; authenticated?: boolean },
  approving: boolean,
  requesters: readonly string[],
  approvedBy: readonly string[] = [],
): string | undefined {
  if (!policy || policy.outcome !== 'ask') return undefined;
  const who = decider.subject ?? 'an unnamed sender';
  const ownRequest = decider.subject !== undefined && requesters.includes(decider.subject);
  // A requester may always reject their own call, as without a policy.
  if (!approving && ownRequest) return undefined;
  const restricted = policy.groups !== undefined || approvalsNeeded(policy) > 1;
  if (restricted && decider.authenticated !== true) {
    return (
      `The approval policy's rule "${policy.rule}" decides who may decide this call, and this decision's sender is not proven: ` +
      "decide it through the HTTP API (which signs decisions), with a worker that holds the API's decision keys."
    );
  }
  if (policy.groups !== undefined && !policy.groups.some((g) => decider.groups?.includes(g))) {
    const theirs = decider.groups && decider.groups.length > 0 ? decider.groups.join(', ') : 'none';
    return (
      `${who} may not decide this call: the approval policy's rule "${policy.rule}" lets members of ${policy.groups.join(', ')} decide it, ` +
      `and ${who}'s groups are ${theirs}. Ask a member of ${policy.groups.join(' or ')}.`
    );
  }
  if (!approving) return undefined;
  if (ownRequest && policy.requesterMayApprove !== true) {
    return (
      `${who} sent the request that asked for this call, and the approval policy's rule "${policy.rule}" does not let a request's sender approve its calls (four eyes). ` +
      `${who} may reject it; another person must approve it.`
    );
  }
  if (decider.subject !== undefined && approvedBy.includes(decider.subject)) {
    const needed = approvalsNeeded(policy);
    return (
      `${who} approved this call already; the approval policy's rule "${policy.rule}" needs ${needed} different people, ` +
      `and ${needed - approvedBy.length} more must approve it.`
    );
  }
  return undefined;
}
