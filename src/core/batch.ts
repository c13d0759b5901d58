/**
 * The tool calls of one assistant message, from the moment the model asks
 * for them until each has exactly one outcome. Pure and deterministic: the
 * workflow keeps its state in a ToolCallBatch, and property tests drive the
 * same class with random events.
 *
 * A call leaves the batch's pending set only with an outcome; an outcome,
 * once set, never changes (a finished result is kept whatever ends the turn).
 */
import {
  approvalTimeoutContent,
  cancelledContent,
  interruptedContent,
  rejectedContent,
  respondedContent,
  toolFailedContent,
  guardrailBlockedContent,
  ruleDeniedContent,
  eventWaitStoppedContent,
  type OutcomeKind,
  type ToolFailureReason,
} from './outcomes';
import { TOOL_DEFAULTS } from '../contract/tool-defaults';
import type { ToolCallPlan } from '../contract/activities';
import type { DecisionKind } from '../contract/decisions';
import type { PendingApproval, WaitingPolicy } from '../contract/waiting-calls';
import { callInstanceKey } from './effect-keys';
import { parseJsonOrText } from '../contract/text';
import type { ToolCall } from '../contract/messages';
import { approvalsNeeded, ruleDecider, ruleDecisionId, type CallPolicy } from '../contract/policies';
import type { EventWaitPlan } from '../contract/events';
import type { ComeBackPlan } from '../contract/comebacks';

/** Where a call stands. */
export type CallPhase = 'awaiting_approval' | 'ready' | 'running' | 'settled';

/** A person's decision on one call. */
export interface CallDecision {
  decisionId: string;
  approved: boolean;
  /** `edit` and `respond`: how it was approved or answered. */
  kind?: 'edit' | 'respond';
  /** `edit`: the arguments it runs with (JSON text). */
  arguments?: string;
  /** `respond`: the person's answer. */
  response?: string;
  reason?: string;
  decidedBy?: string;
  /** Whether `decidedBy` was proven by a signature (unset: runs that do not check signatures). */
  authenticated?: boolean;
  /** Workflow time, ms since the epoch. */
  decidedAt: number;
  /** The approval policy's rule that decided it, when no person did (or the rule of the grant that did). */
  rule?: string;
  /** The standing grant that let it run without asking (its id), and what it counted against the grant's amount. */
  grant?: string;
  grantAmount?: number;
}

/** The settled result of a call: the tool message content and how it came about. */
export interface CallOutcome {
  kind: OutcomeKind;
  content: string;
  /** Key of the full result stored by the tool activity, for appending by reference. */
  storedResultKey?: string;
  /** The tool found its effect in the ledger (applied by an earlier attempt), so it was not applied again. */
  fromLedger?: boolean;
  /** Key of the model response holding the full answer of an agent called as a tool, for appending by reference. */
  storedAnswerKey?: string;
}

/** One call of the batch. */
export interface BatchCall {
  /** The provider's tool call id: pairs the tool message with the call, nothing else. */
  id: string;
  /** Effect key of this call instance (see `effect-keys.ts`): the tool's idempotency key. */
  key: string;
  name: string;
  /** Raw JSON arguments, as the model sent them. */
  arguments: string;
  needsApproval: boolean;
  /** Start-to-close timeout of one attempt of its activity. */
  timeoutMs: number;
  /** Attempts of its activity before it settles as failed. */
  maxAttempts: number;
  /**
   * False for a tool that may apply its effect again when run again: a run
   * that timed out or lost its worker settles as `effect_unknown`, not
   * `tool_failed`. Unset for calls made before tools declared it.
   */
  idempotent?: boolean;
  /** Workflow time the model asked for it, ms since the epoch. */
  requestedAt: number;
  /** Set for a call of an agent as a tool: the agent it runs in a child conversation. */
  subAgent?: string;
  /** Its task, when its plan made one from the arguments (else the `input` argument). */
  task?: string;
  /** What a person may decide on it (absent: approve or reject). */
  decisions?: DecisionKind[];
  phase: CallPhase;
  decision?: CallDecision;
  outcome?: CallOutcome;
  /** Why it cannot run (unknown tool, invalid arguments): settled at once as `tool_failed`. */
  problem?: { reason: ToolFailureReason; message: string };
  /** The tool guardrail that blocked it: settled at once as `guardrail_blocked`. */
  blocked?: { guardrail: string; reason: string };
  /** The approval policy's verdict on it: `deny` settled it as rejected, `allow` let it run, `ask` names who decides. */
  policy?: CallPolicy;
  /** Approvals counted so far of a call whose rule needs several people (each a different person). */
  approvals?: CallDecision[];
  /** Steps of its rule's escalation ladder taken while it waited (their groups are in `policy.groups`). */
  escalated?: number;
  /** Set for a call of a `waitForEvent()` tool: the event it waits for once it starts (no activity runs it). */
  wait?: EventWaitPlan;
  /** Workflow time such a call started waiting. */
  waitStartedAt?: number;
  /** Set for a call of the `comeBackLater()` tool: when the conversation comes back (settled when it starts). */
  comeBack?: ComeBackPlan;
}

/** What the model asked for, as the batch receives it. */
export interface RequestedCall {
  id: string;
  /** Effect key of this call instance. */
  key: string;
  name: string;
  arguments: string;
  needsApproval: boolean;
  idempotent?: boolean;
  /** The agent the call runs, for a call of an agent as a tool. */
  subAgent?: string;
  /** Its task, when its plan made one. */
  task?: string;
  decisions?: DecisionKind[];
  /** Default {@link TOOL_DEFAULTS}. */
  timeoutMs?: number;
  /** Default {@link TOOL_DEFAULTS}. */
  maxAttempts?: number;
  problem?: { reason: ToolFailureReason; message: string };
  blocked?: { guardrail: string; reason: string };
  policy?: CallPolicy;
  wait?: EventWaitPlan;
  comeBack?: ComeBackPlan;
}

/** Why a decision was refused, in words for its sender. */
export interface DecisionRefusal {
  message: string;
}

/** The batch's state, as plain data (for queries and continue-as-new). */
export interface BatchSnapshot {
  calls: BatchCall[];
}

/** The tool calls of one assistant message and their outcomes. */
export class ToolCallBatch {
  private readonly calls: BatchCall[];

  constructor(requested: readonly RequestedCall[], now: number) {
    this.calls = requested.map((r) => ({
      id: r.id,
      key: r.key,
      name: r.name,
      arguments: r.arguments,
      needsApproval: r.needsApproval && !r.problem && !r.blocked,
      timeoutMs: r.timeoutMs ?? TOOL_DEFAULTS.timeoutMs,
      maxAttempts: r.maxAttempts ?? TOOL_DEFAULTS.maxAttempts,
      ...(r.idempotent !== undefined ? { idempotent: r.idempotent } : {}),
      requestedAt: now,
      ...(r.subAgent !== undefined ? { subAgent: r.subAgent } : {}),
      ...(r.task !== undefined ? { task: r.task } : {}),
      ...(r.decisions !== undefined ? { decisions: [...r.decisions] } : {}),
      phase: 'ready' as CallPhase,
      problem: r.problem,
      ...(r.blocked && !r.problem ? { blocked: { ...r.blocked } } : {}),
      ...(r.policy && !r.problem ? { policy: { ...r.policy } } : {}),
      ...(r.wait ? { wait: { ...r.wait } } : {}),
      ...(r.comeBack ? { comeBack: { ...r.comeBack } } : {}),
    }));
    for (const call of this.calls) {
      if (call.problem)
        this.settle(call.id, {
          kind: 'tool_failed',
          content: toolFailedContent(call.problem.message, call.problem.reason),
        });
      else if (call.blocked)
        this.settle(call.id, {
          kind: 'guardrail_blocked',
          content: guardrailBlockedContent(call.blocked.guardrail, call.blocked.reason),
        });
      else if (call.policy?.outcome === 'deny') {
        call.decision = ruleDecision(call, call.policy, false, now);
        this.settle(call.id, { kind: 'rejected', content: ruleDeniedContent(call.policy.rule, call.policy.reason) });
      } else if (call.needsApproval) call.phase = 'awaiting_approval';
      else if (call.policy?.outcome === 'allow') call.decision = ruleDecision(call, call.policy, true, now);
    }
  }

  /**
   * The calls decided without anyone asked: allowed or denied by an approval policy's rule, or covered by a standing
   * grant, with their decisions.
   */
  ruled(): BatchCall[] {
    return this.calls.filter(
      (c) =>
        c.decision !== undefined &&
        (c.decision.grant !== undefined ||
          (c.decision.rule !== undefined && c.decision.decidedBy?.startsWith('rule:'))),
    );
  }

  /** A standing grant covers a waiting call: it is decided by the grant and ready to run. */
  coverByGrant(id: string, decision: CallDecision): void {
    const call = this.get(id);
    if (!call || call.phase !== 'awaiting_approval') return;
    call.decision = { ...decision };
    call.phase = 'ready';
  }

  /** Rebuilds a batch from {@link snapshot}. */
  static fromSnapshot(snapshot: BatchSnapshot): ToolCallBatch {
    const batch = new ToolCallBatch([], 0);
    batch.calls.push(...snapshot.calls.map((c) => ({ ...c })));
    return batch;
  }

  /** Plain-data copy of the state. */
  snapshot(): BatchSnapshot {
    return {
      calls: this.calls.map((c) => ({
        ...c,
        decision: c.decision && { ...c.decision },
        outcome: c.outcome && { ...c.outcome },
      })),
    };
  }

  /** Every call, in the model's order. */
  all(): readonly BatchCall[] {
    return this.calls;
  }

  /** The call with this id. */
  get(id: string): BatchCall | undefined {
    return this.calls.find((c) => c.id === id);
  }

  /** Calls waiting for a person's decision. */
  awaitingApproval(): BatchCall[] {
    return this.calls.filter((c) => c.phase === 'awaiting_approval');
  }

  /** True when every call has its outcome. */
  isSettled(): boolean {
    return this.calls.every((c) => c.phase === 'settled');
  }

  /**
   * Checks a decision without applying it: for one call (`toolCallId`) or
   * every call awaiting approval (no id). Returns the ids it would decide, or why not.
   */
  checkDecision(toolCallId: string | undefined, callKey?: string): { ids: string[] } | DecisionRefusal {
    if (callKey !== undefined) {
      const meant = this.calls.find((c) => c.key === callKey);
      if (!meant || (toolCallId !== undefined && meant.id !== toolCallId)) {
        const waiting = toolCallId === undefined ? undefined : this.get(toolCallId);
        return {
          message: waiting
            ? `Tool call "${toolCallId}" waiting now is a different call (key ${waiting.key}) from the one decided (key ${callKey}); providers reuse ids, so the decision is refused.`
            : `No tool call with key ${callKey} is pending in this conversation.`,
        };
      }
      return this.checkDecision(meant.id);
    }
    if (toolCallId === undefined) {
      const ids = this.awaitingApproval().map((c) => c.id);
      if (ids.length === 0) return { message: 'No tool call is waiting for approval.' };
      return { ids };
    }
    const call = this.get(toolCallId);
    if (!call) return { message: `No tool call "${toolCallId}" is pending in this conversation.` };
    if (call.phase === 'settled') {
      return { message: `Tool call "${toolCallId}" (${call.name}) is already settled (${call.outcome?.kind}).` };
    }
    if (call.phase !== 'awaiting_approval') {
      const earlier = call.decision;
      if (earlier) {
        const by = earlier.decidedBy ? ` by ${earlier.decidedBy}` : '';
        return {
          message: `Tool call "${toolCallId}" (${call.name}) was already ${earlier.approved ? 'approved' : 'rejected'}${by} (decision ${earlier.decisionId}); it is ${call.phase} now.`,
        };
      }
      return { message: `Tool call "${toolCallId}" (${call.name}) does not need approval; it is ${call.phase}.` };
    }
    return { ids: [toolCallId] };
  }

  /**
   * The calls of `ids` whose approval deadline (`requestedAt + timeoutMs`) is
   * after `sentAt`, or why none is. By the sender's stamp when it has one
   * (`stamped`), so a decision sent in time while no worker ran still counts,
   * whichever of the deadline's timer and the decision is handled first.
   */
  inTime(
    ids: readonly string[],
    sentAt: number,
    timeoutMs: number,
    stamped: boolean,
  ): { ids: string[] } | DecisionRefusal {
    const inTime = ids.filter((id) => sentAt < (this.get(id)?.requestedAt ?? 0) + timeoutMs);
    if (inTime.length > 0) return { ids: inTime };
    const deadline = new Date((this.get(ids[0])?.requestedAt ?? 0) + timeoutMs).toISOString();
    const when = stamped ? `was sent (${new Date(sentAt).toISOString()})` : 'came';
    return {
      message: `The decision ${when} after the approval deadline (${deadline}); the call settles as approval_timeout.`,
    };
  }

  /**
   * Applies a decision to the given calls: approved (or edited) calls become
   * ready, rejected calls settle as `rejected`, answered ones as `responded`.
   */
  decide(ids: readonly string[], decision: CallDecision): void {
    for (const id of ids) {
      const call = this.get(id);
      if (!call || call.phase !== 'awaiting_approval') continue;
      if (decision.approved && !decision.kind && approvalsNeeded(call.policy) > 1) {
        // N of M: each approval counts once per person; the call runs with the last one it needs.
        call.approvals = [...(call.approvals ?? []), { ...decision }];
        if (call.approvals.length < approvalsNeeded(call.policy)) continue;
      }
      call.decision = { ...decision };
      if (decision.kind === 'respond')
        this.settle(id, { kind: 'responded', content: respondedContent(decision.response ?? '', decision.decidedBy) });
      else if (decision.approved) call.phase = 'ready';
      else this.settle(id, { kind: 'rejected', content: rejectedContent(decision.reason) });
    }
  }

  /** Why `kind` may not be decided on the calls of `ids`, or undefined when it may (approve and reject always may). */
  refusedKind(ids: readonly string[], kind: DecisionKind): string | undefined {
    if (kind === 'approve' || kind === 'reject') return undefined;
    const call = ids.map((id) => this.get(id)).find((c) => c && !(c.decisions ?? ['approve', 'reject']).includes(kind));
    if (!call) return undefined;
    return `Tool call "${call.id}" (${call.name}) does not allow "${kind}": its tool allows ${(call.decisions ?? ['approve', 'reject']).join(', ')}.`;
  }

  /**
   * Takes the next step of a waiting call's escalation ladder: the groups it adds may decide the call from now on.
   * Returns the step, or undefined when the call no longer waits or has no step left.
   */
  escalate(id: string): { step: number; remind: boolean; addedGroups: string[] } | undefined {
    const call = this.get(id);
    const ladder = call?.policy?.escalation ?? [];
    const taken = call?.escalated ?? 0;
    if (!call || call.phase !== 'awaiting_approval' || taken >= ladder.length || !call.policy) return undefined;
    const next = ladder[taken];
    const added = (next.addGroups ?? []).filter((g) => !(call.policy!.groups ?? []).includes(g));
    if (added.length > 0 && call.policy.groups)
      call.policy = { ...call.policy, groups: [...call.policy.groups, ...added] };
    call.escalated = taken + 1;
    return { step: taken + 1, remind: next.remind === true, addedGroups: added };
  }

  /** Marks a ready call as running (its activity is scheduled). */
  markRunning(id: string): void {
    const call = this.get(id);
    if (call?.phase === 'ready') call.phase = 'running';
  }

  /** Gives a call its outcome. Returns false, changing nothing, when it already had one. */
  settle(id: string, outcome: CallOutcome): boolean {
    const call = this.get(id);
    if (!call || call.phase === 'settled') return false;
    call.outcome = { ...outcome };
    call.phase = 'settled';
    return true;
  }

  /** Settles every call still awaiting approval as `approval_timeout`. */
  timeOutApprovals(): string[] {
    const ids = this.awaitingApproval().map((c) => c.id);
    for (const id of ids) this.settle(id, { kind: 'approval_timeout', content: approvalTimeoutContent() });
    return ids;
  }

  /**
   * Ends the batch early (turn cancelled or interrupted): running calls become
   * `interrupted` (effect unknown), calls that never started `cancelled`.
   * Finished outcomes are kept.
   */
  interrupt(why: string): void {
    for (const call of this.calls) {
      // A call waiting for an event ran nothing: it stopped waiting.
      if (call.phase === 'running' && call.wait)
        this.settle(call.id, { kind: 'cancelled', content: eventWaitStoppedContent(why, call.wait) });
      else if (call.phase === 'running')
        this.settle(call.id, { kind: 'interrupted', content: interruptedContent(why) });
      else if (call.phase !== 'settled') this.settle(call.id, { kind: 'cancelled', content: cancelledContent(why) });
    }
  }

  /** The tool messages that answer the batch, in call order. Throws if a call is unsettled. */
  results(): { toolCallId: string; outcome: CallOutcome }[] {
    return this.calls.map((c) => {
      if (!c.outcome) throw new Error(`Tool call ${c.id} has no outcome yet.`);
      return { toolCallId: c.id, outcome: c.outcome };
    });
  }
}

/**
 * The calls of an assistant message as a batch receives them: each with the
 * effect key of its call instance and its plan. A call without a plan, or
 * with `notRun` set (the turn reached maxSteps), is settled at once as
 * `tool_failed`. `regenerations`: the conversation's regenerated turns so far (in the keys once there is one).
 */
export function requestedCalls(
  conversationId: string,
  assistantSeq: number,
  calls: readonly ToolCall[],
  plans: readonly ToolCallPlan[],
  notRun?: { reason: ToolFailureReason; message: string },
  regenerations = 0,
): RequestedCall[] {
  const planOf = new Map(plans.map((plan) => [plan.toolCallId, plan]));
  return calls.map((call, index) => {
    const plan = planOf.get(call.id);
    const noPlan = { reason: 'error' as const, message: `The worker returned no plan for tool call ${call.id}.` };
    return {
      id: call.id,
      key: callInstanceKey(conversationId, assistantSeq, index, regenerations),
      idempotent: plan?.idempotent ?? true,
      ...(plan?.subAgent !== undefined ? { subAgent: plan.subAgent } : {}),
      ...(plan?.task !== undefined ? { task: plan.task } : {}),
      ...(plan?.decisions !== undefined ? { decisions: plan.decisions } : {}),
      name: call.function.name,
      arguments: call.function.arguments,
      needsApproval: plan?.needsApproval ?? true,
      timeoutMs: plan?.timeoutMs,
      maxAttempts: plan?.maxAttempts,
      problem: notRun ?? (plan ? plan.problem : noPlan),
      ...(plan?.blocked ? { blocked: plan.blocked } : {}),
      ...(plan?.policy ? { policy: plan.policy } : {}),
      ...(plan?.wait ? { wait: plan.wait } : {}),
      ...(plan?.comeBack ? { comeBack: plan.comeBack } : {}),
    };
  });
}

/** The decision an approval policy's rule made on a call, recorded as a person's would be (by `rule:<name>`). */
function ruleDecision(call: BatchCall, policy: CallPolicy, approved: boolean, now: number): CallDecision {
  return {
    decisionId: ruleDecisionId(call.key),
    approved,
    ...(policy.reason !== undefined ? { reason: policy.reason } : {}),
    decidedBy: ruleDecider(policy.rule),
    decidedAt: now,
    rule: policy.rule,
  };
}

/** Who approved a call so far, when its rule needs several people. */
export function approvedBy(call: BatchCall): string[] {
  return (call.approvals ?? []).flatMap((a) => (a.decidedBy !== undefined ? [a.decidedBy] : []));
}

/** A call waiting for a person, as the state shows it (arguments parsed when they are JSON). */
export function describePendingApproval(
  call: BatchCall,
  now: number,
  requestedBy: readonly string[] = [],
): PendingApproval {
  return {
    toolCallId: call.id,
    toolName: call.name,
    arguments: parseJsonOrText(call.arguments),
    requestedAt: new Date(call.requestedAt).toISOString(),
    ageMs: now - call.requestedAt,
    callKey: call.key,
    requestedBy: [...requestedBy],
    ...(call.decisions ? { decisions: [...call.decisions] } : {}),
    ...(call.policy?.outcome === 'ask' ? { policy: waitingPolicy(call, call.policy) } : {}),
  };
}

/** Who may decide a waiting call under its rule, and the approvals it has. */
export function waitingPolicy(call: BatchCall, policy: CallPolicy): WaitingPolicy {
  return {
    rule: policy.rule,
    ...(policy.groups ? { groups: [...policy.groups] } : {}),
    approvals: approvalsNeeded(policy),
    approvedBy: approvedBy(call),
    ...(policy.requesterMayApprove ? { requesterMayApprove: true } : {}),
    ...(policy.reason !== undefined ? { reason: policy.reason } : {}),
    ...(policy.escalation ? { escalated: call.escalated ?? 0, escalationSteps: policy.escalation.length } : {}),
  };
}
