/**
 * Approval policies: rules, declared beside tools and agents, that say for
 * each tool call whether a person is asked, and who; or that allow or deny
 * it without asking. The first rule that matches a call decides; a call no
 * rule matches keeps its tool's `needsApproval`.
 *
 * Declared in code (`approvalPolicy([...])` in the plugin's options) or, for
 * `npm start`, as JSON (see `src/policies/policy-file.ts`). Runs in Node, in
 * the model call's activity that plans each call: the workflow gets the
 * verdict in the plan and applies it, never the rules themselves.
 */
import { ConfigError } from '../common/errors';
import {
  MAX_ESCALATION_STEPS,
  MAX_POLICY_APPROVALS,
  POLICY_GROUP_NAME,
  POLICY_OUTCOMES,
  POLICY_RULE_NAME,
  type EscalationStep,
  type PolicyOutcome,
} from '../contract/policies';
import type { ToolCallContext } from '../tools/call-context';

/** A condition on one argument (all the given bounds must hold). */
export interface ArgumentCondition {
  /** Equal to (numbers, strings, booleans). */
  eq?: string | number | boolean;
  /** Not equal to. */
  ne?: string | number | boolean;
  /** Greater than (numbers). */
  gt?: number;
  /** At least (numbers). */
  gte?: number;
  /** Less than (numbers). */
  lt?: number;
  /** At most (numbers). */
  lte?: number;
  /** One of these values. */
  in?: readonly (string | number | boolean)[];
  /** Present (true) or absent (false). */
  exists?: boolean;
}

/** One rule of an approval policy. */
export interface ApprovalRule<Args = Record<string, unknown>> {
  /** Recorded with every outcome it makes (`rule:<name>`); `[A-Za-z0-9_.:-]{1,64}`, unique in the policy. */
  name: string;
  /** What it does with a call it matches. */
  outcome: PolicyOutcome;
  /** The tools (or agents called as tools, by their tool names) it covers; absent: every tool. */
  tools?: readonly string[];
  /** The agents whose calls it covers (the conversation's agent); absent: any agent, and none. */
  agents?: readonly string[];
  /** It covers a turn only when one of these people sent its messages. */
  requestedBy?: readonly string[];
  /**
   * Conditions on the call's arguments, by argument name or dotted path (`"refund.amount_cents"`): all must hold.
   * A call whose argument is missing or of another type does not meet a bound (`gt`, `lt`, …).
   */
  where?: Readonly<Record<string, ArgumentCondition>>;
  /**
   * A predicate over the call's (checked) arguments and its context (conversation, who asked, the agent, earlier
   * messages), which may be async; code only. One that throws or takes longer than 10 s counts as a match for `ask`
   * and `deny` rules and as no match for `allow` (a failing check never lets a call through), and is logged.
   */
  when?: (args: Args, context: ToolCallContext) => boolean | Promise<boolean>;
  /** `ask`: groups whose members may decide (any of them, from the decider's token); absent: any approver. */
  groups?: readonly string[];
  /** `ask`: how many different people must approve (N of M, 1 to 10); default 1. One rejection decides. */
  approvals?: number;
  /** `ask`: whether a sender of the turn's messages may approve (and count); default false (four eyes). */
  requesterMayApprove?: boolean;
  /** Why: what the model reads when the rule denies a call, what approvers see when it asks. */
  reason?: string;
  /**
   * `ask`: while nobody decides the call, steps at times after it was asked for (each later than the one before): a
   * reminder, and/or more groups that may decide it (`addGroups`, for a rule with `groups`). At most 10 steps; steps
   * past the approval deadline never come (the deadline's outcome does).
   */
  escalation?: readonly EscalationStep[];
}

/** A checked list of rules, made by {@link approvalPolicy}. */
export interface ApprovalPolicy {
  readonly kind: 'approval-policy';
  readonly rules: readonly ApprovalRule[];
}

const CONDITION_KEYS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'exists'] as const;
const RULE_KEYS = [
  'name',
  'outcome',
  'tools',
  'agents',
  'requestedBy',
  'where',
  'when',
  'groups',
  'approvals',
  'requesterMayApprove',
  'reason',
  'escalation',
] as const;

/**
 * Checks rules and makes a policy of them. Throws a `ConfigError` naming the rule and what is wrong with it (unknown
 * field, bad name or outcome, groups or approvals on a rule that does not ask, approvals out of range, a condition
 * that is not one).
 */
export function approvalPolicy(rules: readonly ApprovalRule<never>[]): ApprovalPolicy {
  if (!Array.isArray(rules)) throw new ConfigError('An approval policy is a list of rules: [{ name, outcome, … }].');
  const names = new Set<string>();
  rules.forEach((rule, i) => {
    const problem = describeBadRule(rule);
    const where = `Approval policy rule ${i + 1}${typeof rule?.name === 'string' ? ` ("${rule.name}")` : ''}`;
    if (problem) throw new ConfigError(`${where}: ${problem}.`);
    if (names.has(rule.name)) throw new ConfigError(`${where}: another rule has this name; give each its own.`);
    names.add(rule.name);
  });
  return { kind: 'approval-policy', rules: rules.map((r) => ({ ...r })) as ApprovalRule[] };
}

const strings = (v: unknown): v is string[] =>
  Array.isArray(v) && v.length > 0 && v.every((s) => typeof s === 'string' && s !== '');

/** What is wrong with a rule, or undefined. */
function describeBadRule(rule: ApprovalRule<never>): string | undefined {
  if (typeof rule !== 'object' || rule === null) return 'expected an object like {"name": "…", "outcome": "ask"}';
  const unknown = Object.keys(rule).filter((k) => !(RULE_KEYS as readonly string[]).includes(k));
  if (unknown.length > 0)
    return `unknown field ${unknown.map((k) => `"${k}"`).join(', ')} (fields: ${RULE_KEYS.join(', ')})`;
  if (typeof rule.name !== 'string' || !POLICY_RULE_NAME.test(rule.name))
    return '"name" must be 1 to 64 letters, digits or _ . : -';
  if (!POLICY_OUTCOMES.includes(rule.outcome)) return `"outcome" must be one of ${POLICY_OUTCOMES.join(', ')}`;
  for (const field of ['tools', 'agents', 'requestedBy'] as const)
    if (rule[field] !== undefined && !strings(rule[field]))
      return `"${field}", when given, must be a non-empty list of names`;
  if (rule.groups !== undefined) {
    if (!strings(rule.groups) || rule.groups.some((g) => !POLICY_GROUP_NAME.test(g)))
      return '"groups", when given, must be a non-empty list of group names (1 to 128 letters, digits or _ . : @ / -)';
  }
  if (
    rule.approvals !== undefined &&
    (!Number.isInteger(rule.approvals) || rule.approvals < 1 || rule.approvals > MAX_POLICY_APPROVALS)
  )
    return `"approvals" must be a whole number from 1 to ${MAX_POLICY_APPROVALS}`;
  if (rule.outcome !== 'ask') {
    const asking = (['groups', 'approvals', 'requesterMayApprove', 'escalation'] as const).filter(
      (k) => rule[k] !== undefined,
    );
    if (asking.length > 0) return `${asking.map((k) => `"${k}"`).join(', ')} go with "outcome": "ask" only`;
  }
  if (rule.requesterMayApprove !== undefined && typeof rule.requesterMayApprove !== 'boolean')
    return '"requesterMayApprove", when given, must be true or false';
  if (rule.reason !== undefined && (typeof rule.reason !== 'string' || rule.reason.length > 2000))
    return '"reason", when given, must be text of at most 2000 characters';
  if (rule.when !== undefined && typeof rule.when !== 'function') return '"when", when given, must be a function';
  if (rule.escalation !== undefined) {
    const problem = describeBadEscalation(rule.escalation, rule.groups !== undefined);
    if (problem) return problem;
  }
  if (rule.where !== undefined) {
    if (typeof rule.where !== 'object' || rule.where === null || Array.isArray(rule.where))
      return '"where" must be an object of argument names to conditions, e.g. {"amount_cents": {"gt": 100000}}';
    for (const [path, condition] of Object.entries(rule.where)) {
      const problem = describeBadCondition(condition);
      if (problem) return `the condition on "${path}" ${problem}`;
    }
  }
  return undefined;
}

function describeBadEscalation(steps: readonly EscalationStep[], hasGroups: boolean): string | undefined {
  if (!Array.isArray(steps) || steps.length === 0 || steps.length > MAX_ESCALATION_STEPS)
    return `"escalation", when given, must be a list of 1 to ${MAX_ESCALATION_STEPS} steps like {"afterMs": 3600000, "remind": true}`;
  let last = 0;
  for (const [i, step] of steps.entries()) {
    const where = `escalation step ${i + 1}`;
    if (typeof step !== 'object' || step === null)
      return `${where} must be an object like {"afterMs": 3600000, "remind": true}`;
    const unknown = Object.keys(step).filter((k) => !['afterMs', 'remind', 'addGroups'].includes(k));
    if (unknown.length > 0)
      return `${where} has unknown ${unknown.map((k) => `"${k}"`).join(', ')} (afterMs, remind, addGroups)`;
    if (!Number.isInteger(step.afterMs) || step.afterMs < 1 || step.afterMs <= last)
      return `${where}'s "afterMs" must be a whole number of milliseconds after the call was asked for, later than the step before (${last})`;
    last = step.afterMs;
    if (step.remind !== undefined && typeof step.remind !== 'boolean')
      return `${where}'s "remind" must be true or false`;
    if (step.addGroups !== undefined) {
      if (!hasGroups)
        return `${where} adds groups, but the rule names none (any approver may decide already): give the rule "groups"`;
      if (!strings(step.addGroups) || step.addGroups.some((g: string) => !POLICY_GROUP_NAME.test(g)))
        return `${where}'s "addGroups" must be a non-empty list of group names`;
    }
    if (step.remind !== true && step.addGroups === undefined)
      return `${where} does nothing: give it "remind": true or "addGroups"`;
  }
  return undefined;
}

function describeBadCondition(c: ArgumentCondition): string | undefined {
  if (typeof c !== 'object' || c === null || Array.isArray(c)) return 'must be an object like {"gt": 100000}';
  const keys = Object.keys(c);
  if (keys.length === 0) return `is empty: give one of ${CONDITION_KEYS.join(', ')}`;
  const unknown = keys.filter((k) => !(CONDITION_KEYS as readonly string[]).includes(k));
  if (unknown.length > 0)
    return `has unknown ${unknown.map((k) => `"${k}"`).join(', ')} (${CONDITION_KEYS.join(', ')})`;
  for (const k of ['gt', 'gte', 'lt', 'lte'] as const)
    if (c[k] !== undefined && (typeof c[k] !== 'number' || !Number.isFinite(c[k])))
      return `has "${k}" that is not a number`;
  const scalar = (v: unknown) => ['string', 'number', 'boolean'].includes(typeof v);
  if (c.eq !== undefined && !scalar(c.eq)) return 'has "eq" that is not a string, number or boolean';
  if (c.ne !== undefined && !scalar(c.ne)) return 'has "ne" that is not a string, number or boolean';
  if (c.in !== undefined && (!Array.isArray(c.in) || c.in.length === 0 || !c.in.every(scalar)))
    return 'has "in" that is not a non-empty list of strings, numbers or booleans';
  if (c.exists !== undefined && typeof c.exists !== 'boolean') return 'has "exists" that is not true or false';
  return undefined;
}
