/**
 * The plan the workflow gets for each tool call of an answer: a handoff, an
 * agent run as a tool, a tool with its approval, timeout and attempts, or a
 * call that cannot run and why. Tool guardrails may block a call or make it
 * wait for a person.
 */
import {
  DEFAULT_MAX_PARALLEL_TOOL_CALLS,
  TOOL_ARGUMENTS_MAX_BYTES,
  type AssistantMessage,
  type ToolCallPlan,
} from '../../contract/activities';
import { defaultDecisions, type DecisionKind } from '../../contract';
import type { GuardrailResult } from '../../contract/guardrail-results';
import type { ToolCall } from '../../contract/messages';
import { TOOL_DEFAULTS } from '../../contract/tool-defaults';
import type { AgentTool } from '../../tools/agents';
import type { ToolCallContext } from '../../tools/call-context';
import type { Guardrail } from '../../tools/guardrails';
import type { ToolRegistry } from '../../tools/registry';
import type { Tool } from '../../tools/tool';
import { toolVerdict } from '../guardrails';
import { checkToolCall } from '../tool-calls';
import { agentCallArguments } from './agent-calls';
import { approvalAsked, type CallContexts } from './call-checks';
import type { ToolOffer } from './offer';
import { planHandoffCall } from './handoffs';
import { planComeBack, planEventWait } from './event-wait-plan';
import type { ApprovalPolicy } from '../../policies/approval-policy';
import { evaluatePolicy } from '../../policies/evaluate';
import type { CallPolicy } from '../../contract/policies';

/** The tool guardrails that check a call of `tool`. */
export type ToolGuards = (tool: Tool) => Extract<Guardrail, { on: 'tool' }>[];

/** A call's plan, with what its tool guardrails said for the turn's record (taken out before the workflow gets it). */
export type PlanWithGuardrails = ToolCallPlan & { guardrails?: GuardrailResult[] };

/** A plan per tool call of `message`; calls past the worker's limit per response are not run. */
export async function planToolCalls(
  registry: ToolRegistry,
  maxParallelToolCalls: number | undefined,
  offer: ToolOffer,
  message: AssistantMessage,
  guards: ToolGuards,
  contexts: CallContexts,
  policy?: ApprovalPolicy,
): Promise<PlanWithGuardrails[]> {
  const calls = message.tool_calls ?? [];
  const limit = maxParallelToolCalls ?? DEFAULT_MAX_PARALLEL_TOOL_CALLS;
  const plans = calls.map((call, index) =>
    index < limit
      ? planToolCall(registry, offer, call, guards, contexts(call.id), calls, policy)
      : unrunnable(call, {
          reason: 'too_many_calls',
          message:
            `The response asked for ${calls.length} tool calls; this worker runs at most ${limit} per response ` +
            '(AGENT_MAX_PARALLEL_TOOL_CALLS). This call was not run: ask for it again in a later step.',
        }),
  );
  return Promise.all(plans);
}

/** The size of a call's arguments in bytes, when over {@link TOOL_ARGUMENTS_MAX_BYTES} (such a call is not run). */
export function argumentsOverLimit(call: ToolCall): number | undefined {
  const bytes = Buffer.byteLength(call.function.arguments, 'utf8');
  return bytes > TOOL_ARGUMENTS_MAX_BYTES ? bytes : undefined;
}

/** The plan of one call; its tool guardrails may block it or make it wait for a person. */
async function planToolCall(
  registry: ToolRegistry,
  offer: ToolOffer,
  call: ToolCall,
  guards: ToolGuards,
  context: ReturnType<CallContexts>,
  calls: readonly ToolCall[],
  policy: ApprovalPolicy | undefined,
): Promise<PlanWithGuardrails> {
  const handoff = offer.handoff(call.function.name);
  if (handoff) return planHandoffCall(handoff, call, calls, offer.handoff, context);
  const allowed = offer.allowed;
  const bytes = argumentsOverLimit(call);
  const asTool = offer.agentTool(call.function.name);
  if (asTool && bytes === undefined) return planAgentCall(asTool, call, context, policy);
  if (bytes !== undefined) {
    return unrunnable(call, {
      reason: 'invalid_arguments',
      message: `The arguments are ${bytes} bytes; a tool call's arguments may be at most ${TOOL_ARGUMENTS_MAX_BYTES} bytes. Ask for less at once, or refer to data by an id the tool can look up.`,
    });
  }
  const checked = checkToolCall(registry, allowed, call.function.name, call.function.arguments);
  if (!checked.ok) return unrunnable(call, { reason: checked.reason, message: checked.message });
  const { tool, args } = checked;
  const waiting = planEventWait(tool, args);
  if (waiting && 'problem' in waiting)
    return unrunnable(call, { reason: 'invalid_arguments', message: waiting.problem });
  const later = planComeBack(tool, args, Date.now());
  if (later && 'problem' in later) return unrunnable(call, { reason: 'invalid_arguments', message: later.problem });
  const ruled = await evaluatePolicy(policy, { toolName: tool.name, args, context });
  const asked = ruled ? ruled.outcome === 'ask' : await approvalAsked(tool.needsApproval, args, context, tool.name);
  const checks = guards(tool);
  const verdict =
    checks.length > 0
      ? await toolVerdict(checks, { toolName: tool.name, arguments: args }, context)
      : { action: 'allow' as const, results: [] };
  const needsApproval = ruled?.outcome !== 'deny' && (asked || verdict.action === 'require_approval');
  return {
    ...('results' in verdict && verdict.results.length > 0 ? { guardrails: verdict.results } : {}),
    toolCallId: call.id,
    name: tool.name,
    ...(verdict.action === 'block' ? { blocked: { guardrail: verdict.guardrail, reason: verdict.reason } } : {}),
    needsApproval,
    ...(ruled ? { policy: asAsked(ruled, needsApproval) } : {}),
    ...(needsApproval
      ? { decisions: decisionsUnder(ruled, [...(tool.decisions ?? defaultDecisions(tool.idempotent))]) }
      : {}),
    idempotent: tool.idempotent !== false,
    timeoutMs: tool.timeoutMs ?? TOOL_DEFAULTS.timeoutMs,
    maxAttempts: tool.idempotent === false ? 1 : (tool.maxAttempts ?? TOOL_DEFAULTS.maxAttempts),
    ...(waiting ? { wait: waiting.wait } : {}),
    ...(later ? { comeBack: later.comeBack } : {}),
  };
}

/**
 * The plan of a call of an agent as a tool: its arguments checked, the task
 * its `inputBuilder` made (recorded here, fixed from then on), whether a
 * person approves it first. Never idempotent: the agent's conversation runs
 * once, and one cut off (terminated, timed out) may have done part of its work.
 */
async function planAgentCall(
  asTool: AgentTool,
  call: ToolCall,
  context: ToolCallContext,
  policy: ApprovalPolicy | undefined,
): Promise<ToolCallPlan> {
  const checked = await agentCallArguments(asTool, call.function.arguments, context);
  if (!checked.ok) return unrunnable(call, { reason: 'invalid_arguments', message: checked.message });
  const ruled = await evaluatePolicy(policy, { toolName: call.function.name, args: checked.args, context });
  const needsApproval = ruled
    ? ruled.outcome === 'ask'
    : await approvalAsked(asTool.needsApproval, checked.args, context, asTool.toolName);
  return {
    toolCallId: call.id,
    name: call.function.name,
    subAgent: asTool.agent,
    ...(checked.task !== undefined ? { task: checked.task } : {}),
    needsApproval,
    ...(ruled ? { policy: ruled } : {}),
    ...(needsApproval ? { decisions: ['approve' as const, 'reject' as const] } : {}),
    idempotent: false,
    timeoutMs: asTool.timeoutMs ?? 0,
    maxAttempts: 1,
  };
}

/**
 * The rule's verdict as the plan carries it: an `allow` that a tool guardrail turned into a question asks any
 * approver, under the rule's name.
 */
function asAsked(ruled: CallPolicy, needsApproval: boolean): CallPolicy {
  return ruled.outcome === 'allow' && needsApproval ? { rule: ruled.rule, outcome: 'ask' } : ruled;
}

/** What may be decided on a call under a rule: several approvals are counted for the call as asked, so no edit or answer. */
function decisionsUnder(ruled: CallPolicy | undefined, decisions: DecisionKind[]): DecisionKind[] {
  if ((ruled?.approvals ?? 1) <= 1) return decisions;
  return decisions.filter((d) => d === 'approve' || d === 'reject');
}

/** The plan of a call that cannot run: the workflow settles it as `tool_failed` with the problem's words. */
function unrunnable(call: ToolCall, problem: NonNullable<ToolCallPlan['problem']>): ToolCallPlan {
  return {
    toolCallId: call.id,
    name: call.function.name,
    problem,
    needsApproval: false,
    idempotent: true,
    timeoutMs: TOOL_DEFAULTS.timeoutMs,
    maxAttempts: 1,
  };
}
