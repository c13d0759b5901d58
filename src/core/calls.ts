/**
 * One call of the open batch: its wait for a person and its deadline, its
 * start, and the outcome its result or failure gives it (with the rules for a
 * run cut off or a worker lost). Pure.
 */
import type { EscalationRecord, ToolCallInput, ToolCallResult } from '../contract/activities';
import type { BatchCall } from './batch';
import type { ToolFailure } from './edge';
import { effectUnknownContent, toolFailedContent, type OutcomeKind } from './outcomes';
import type { CoreState } from './state';
import type { ActivityRun, CallRun, CallStep } from './steps';
import { approvalTimerSummary, escalationTimerSummary } from './summaries';
import { toolCallSummary } from './call-summary';
import { UNKNOWN_EFFECTS_KEPT } from '../contract/limits';
import { isOpen, subAgentStart } from './agents';
import { eventWaitRun } from './event-waits';
import { settleComeBackCall } from './comebacks';

/** Why a run whose worker was lost, and whose attempt another worker failed, did not report back. */
const WORKER_LOST = 'its worker stopped while it ran (lost, and its attempt failed by another worker)';

/** What the call does next: wait for a person, start, or nothing (it is settled or runs already). */
export function nextCallStep(s: CoreState, call: BatchCall): CallStep {
  if (call.phase === 'awaiting_approval') {
    const timeoutMs = Math.max(s.limits.approvalTimeoutMs - (s.env.now() - call.requestedAt), 1);
    const next = nextEscalationAt(call);
    const escalation =
      next !== undefined && next < call.requestedAt + s.limits.approvalTimeoutMs
        ? {
            inMs: Math.max(next - s.env.now(), 1),
            summary: escalationTimerSummary(call.name, call.id, (call.escalated ?? 0) + 1),
          }
        : undefined;
    return {
      kind: 'waitForPerson',
      timeoutMs,
      summary: approvalTimerSummary(call.name, call.id),
      ...(escalation ? { escalation } : {}),
    };
  }
  return call.phase === 'ready' ? { kind: 'start' } : { kind: 'none' };
}

/** When the next step of a waiting call's escalation ladder is due (workflow ms), or undefined when none is left. */
function nextEscalationAt(call: BatchCall): number | undefined {
  const step = call.policy?.escalation?.[call.escalated ?? 0];
  return step === undefined ? undefined : call.requestedAt + step.afterMs;
}

/**
 * The call waited until its escalation step was due and nobody decided it: the step is taken (its groups may decide
 * from now on). Returns what to record, or undefined when the call no longer waits.
 */
export function escalate(s: CoreState, call: BatchCall): EscalationRecord | undefined {
  const taken = s.batch?.escalate(call.id);
  if (!taken || !call.policy) return undefined;
  const next = nextEscalationAt(call);
  const deadlineAt = call.requestedAt + s.limits.approvalTimeoutMs;
  return {
    conversationId: s.id,
    callKey: call.key,
    toolCallId: call.id,
    toolName: call.name,
    rule: call.policy.rule,
    step: taken.step,
    remind: taken.remind,
    addedGroups: taken.addedGroups,
    ...(call.policy.groups ? { groups: [...call.policy.groups] } : {}),
    escalatedAt: s.env.now(),
    ...(next !== undefined && next < deadlineAt ? { nextEscalationAt: next } : {}),
    deadlineAt,
  };
}

/**
 * The call's approval deadline passed and no decision being verified can
 * still apply to it: when it still waits, every call of the batch still
 * waiting settles as `approval_timeout`. Returns true when some did.
 */
export function approvalDeadlinePassed(s: CoreState, call: BatchCall): boolean {
  if (call.phase !== 'awaiting_approval') return false;
  return (s.batch?.timeOutApprovals() ?? []).length > 0;
}

/** The call's activity is being scheduled: from now on a stop settles it as `interrupted`. Returns how it runs. */
export function startCall(s: CoreState, call: BatchCall): CallRun {
  s.batch?.markRunning(call.id);
  s.turn.callNumbers.set(call.id, s.turn.callNumbers.size + 1);
  if (call.subAgent !== undefined) return { kind: 'startAgent', start: subAgentStart(s, call) };
  if (call.wait) {
    call.waitStartedAt = s.env.now();
    return eventWaitRun(s, call, call.wait);
  }
  if (call.comeBack) {
    settleComeBackCall(s, call, call.comeBack);
    return { kind: 'done' };
  }
  return { kind: 'runTool', request: toolCallInput(s, call), summary: toolCallSummary(s, call) };
}

/** The tool activity's input: the call, with the arguments a person's edit gave it. */
function toolCallInput(s: CoreState, call: BatchCall): ToolCallInput {
  const edited = call.decision?.kind === 'edit' ? call.decision.arguments : undefined;
  return {
    conversationId: s.id,
    toolCallId: call.id,
    name: call.name,
    arguments: edited ?? call.arguments,
    idempotencyKey: call.key,
    ...(s.turn.toolset ? { toolset: s.turn.toolset } : {}),
    ...(edited !== undefined
      ? {
          edited: {
            ...(call.decision?.decidedBy ? { by: call.decision.decidedBy } : {}),
            modelArguments: call.arguments,
          },
        }
      : {}),
  };
}

/** The tool reported its result. */
export function callSucceeded(s: CoreState, call: BatchCall, result: ToolCallResult): void {
  if (!isOpen(s, call)) return;
  s.batch!.settle(call.id, {
    kind: 'ok',
    content: result.content,
    storedResultKey: result.storedResultKey,
    ...(result.fromLedger ? { fromLedger: true } : {}),
  });
}

/**
 * The call's activity (or child conversation) failed. An idempotent tool whose
 * worker stopped while it ran, maybe after its effect applied, runs once more
 * under the same key (`rerun` false: this was its first run): the ledger
 * reports the effect, or applies it once. Otherwise it settles: a tool that
 * is not idempotent whose run was cut off as `effect_unknown` (kept for
 * operators), any other failure as `tool_failed`.
 */
export function callFailed(
  s: CoreState,
  call: BatchCall,
  failure: ToolFailure,
  rerun: boolean,
): ActivityRun | { kind: 'settled'; outcome?: OutcomeKind } {
  // Asked whenever the fact is there, as the run recorded before this rule moved here asked.
  const cutOff = failure.workerLost && s.env.allows('worker-lost-is-cut-off') ? WORKER_LOST : failure.cutOff;
  if (
    !rerun &&
    call.subAgent === undefined &&
    call.idempotent !== false &&
    failure.workerStopped &&
    s.env.allows('idempotent-call-runs-again-after-lost-worker')
  ) {
    return { kind: 'runTool', request: toolCallInput(s, call), summary: toolCallSummary(s, call), attempts: 1 };
  }
  if (!isOpen(s, call)) return { kind: 'settled' };
  if (call.idempotent === false && cutOff) {
    s.batch!.settle(call.id, { kind: 'effect_unknown', content: effectUnknownContent(cutOff) });
    noteUnknownEffect(s, call, cutOff);
    return { kind: 'settled', outcome: 'effect_unknown' };
  }
  s.batch!.settle(call.id, { kind: 'tool_failed', content: toolFailedContent(failure.message, failure.reason) });
  return { kind: 'settled', outcome: 'tool_failed' };
}

/** Keeps a call whose effect is unknown for operators: the state lists it, the search attribute counts it. */
function noteUnknownEffect(s: CoreState, call: BatchCall, why: string): void {
  const unknown = s.kept.unknownEffects;
  unknown.count++;
  unknown.recent.push({
    toolCallId: call.id,
    callKey: call.key,
    toolName: call.name,
    why,
    settledAt: new Date(s.env.now()).toISOString(),
  });
  if (unknown.recent.length > UNKNOWN_EFFECTS_KEPT) unknown.recent.shift();
  s.env.log.warn('A tool that is not idempotent did not report back; its effect is unknown', {
    conversationId: s.id,
    toolCallId: call.id,
    callKey: call.key,
    tool: call.name,
    why,
  });
}
