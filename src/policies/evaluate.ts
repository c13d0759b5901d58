/**
 * Which rule of an approval policy a tool call meets, and what the plan
 * carries for it. Runs in the model call's activity, once per planned call.
 */
import { logger } from '../common/logger';
import { argumentAt, type CallPolicy } from '../contract/policies';
import type { ToolCallContext } from '../tools/call-context';
import type { ApprovalPolicy, ApprovalRule, ArgumentCondition } from './approval-policy';

/** How long a rule's `when` may take before it counts as failed. */
export const POLICY_CHECK_TIMEOUT_MS = 10_000;

/** The call a policy is asked about. */
export interface PolicyQuestion {
  /** The name the model called (a tool, or an agent called as a tool). */
  toolName: string;
  /** The checked arguments. */
  args: unknown;
  context: ToolCallContext;
}

/** The verdict of the first rule that matches the call, or undefined when none does (the tool's `needsApproval` holds). */
export async function evaluatePolicy(
  policy: ApprovalPolicy | undefined,
  question: PolicyQuestion,
  timeoutMs = POLICY_CHECK_TIMEOUT_MS,
): Promise<CallPolicy | undefined> {
  for (const rule of policy?.rules ?? []) {
    if (await matches(rule, question, timeoutMs)) return verdictOf(rule);
  }
  return undefined;
}

/** The plan's copy of a rule: what the workflow needs to apply it. */
function verdictOf(rule: ApprovalRule): CallPolicy {
  return {
    rule: rule.name,
    outcome: rule.outcome,
    ...(rule.outcome === 'ask' && rule.groups ? { groups: [...rule.groups] } : {}),
    ...(rule.outcome === 'ask' && rule.approvals !== undefined && rule.approvals > 1
      ? { approvals: rule.approvals }
      : {}),
    ...(rule.outcome === 'ask' && rule.requesterMayApprove ? { requesterMayApprove: true } : {}),
    ...(rule.reason !== undefined ? { reason: rule.reason } : {}),
    ...(rule.outcome === 'ask' && rule.escalation
      ? {
          escalation: rule.escalation.map((step) => ({
            afterMs: step.afterMs,
            ...(step.remind ? { remind: true } : {}),
            ...(step.addGroups ? { addGroups: [...step.addGroups] } : {}),
          })),
        }
      : {}),
  };
}

async function matches(rule: ApprovalRule, q: PolicyQuestion, timeoutMs: number): Promise<boolean> {
  if (rule.tools && !rule.tools.includes(q.toolName)) return false;
  if (rule.agents && (q.context.agent === undefined || !rule.agents.includes(q.context.agent))) return false;
  if (rule.requestedBy && !q.context.requestedBy.some((who) => rule.requestedBy!.includes(who))) return false;
  if (rule.where && !Object.entries(rule.where).every(([path, c]) => meets(argumentAt(q.args, path), c))) return false;
  if (!rule.when) return true;
  try {
    const answer = await withinTime((signal) => rule.when!(q.args as never, { ...q.context, signal }), timeoutMs);
    if (typeof answer !== 'boolean')
      throw new Error(`it returned ${JSON.stringify(answer) ?? String(answer)}, not true or false`);
    return answer;
  } catch (err) {
    const counts = rule.outcome !== 'allow';
    logger.warn(
      { rule: rule.name, tool: q.toolName, conversationId: q.context.conversationId, error: (err as Error).message },
      `An approval policy rule's "when" failed: it counts as ${counts ? 'a match' : 'no match'} (a failing check never lets a call through)`,
    );
    return counts;
  }
}

/** Whether `value` meets every bound of `c`. */
function meets(value: unknown, c: ArgumentCondition): boolean {
  if (c.exists !== undefined && (value !== undefined) !== c.exists) return false;
  if (c.eq !== undefined && value !== c.eq) return false;
  if (c.ne !== undefined && value === c.ne) return false;
  if (c.in !== undefined && !c.in.includes(value as never)) return false;
  const n = typeof value === 'number' ? value : undefined;
  if (c.gt !== undefined && !(n !== undefined && n > c.gt)) return false;
  if (c.gte !== undefined && !(n !== undefined && n >= c.gte)) return false;
  if (c.lt !== undefined && !(n !== undefined && n < c.lt)) return false;
  if (c.lte !== undefined && !(n !== undefined && n <= c.lte)) return false;
  return true;
}

/** Runs `check` with an abort signal, rejecting when it takes longer than `timeoutMs`. */
async function withinTime<T>(check: (signal: AbortSignal) => T | Promise<T>, timeoutMs: number): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`it took longer than ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([Promise.resolve().then(() => check(controller.signal)), late]);
  } finally {
    clearTimeout(timer);
  }
}
