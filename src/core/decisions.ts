/**
 * A person's decision on waiting calls: checked against the calls (shape,
 * size, ids, kind, deadline), verified by an activity, checked again (time
 * passed), applied once per decision id, and recorded. Pure.
 */
import type { DecisionRecord, VerifyDecisionInput } from '../contract/activities';
import {
  describeBadDecision,
  describeOversizedDecision,
  describeUnstorableDecision,
  type ApprovalDecision,
  type DecisionResult,
} from '../contract/decisions';
import { REFUSED_DECISIONS_KEPT } from '../contract/limits';
import { refuse } from './problems';
import type { CoreState } from './state';
import type { DecisionStep, PendingDecision } from './steps';
import { decisionRecordSummary, verifySummary, whoDecided } from './summaries';
import { turnOrigin } from './origin';
import { approvedBy } from './batch';
import { giveGrant, grantRefusal } from './grants';
import { approvalsNeeded, policyRefusal } from '../contract/policies';

/** A decision arrived (signal or update): refused at once, or to verify. */
export function receiveDecision(s: CoreState, decision: ApprovalDecision, via: 'signal' | 'update'): DecisionStep {
  const checked = checkDecision(s, decision);
  if ('refusal' in checked) return refused(s, decision, via, checked.refusal);
  s.verifying++;
  const scope = checked.ids.map((id) => s.batch?.get(id)?.key ?? '');
  return {
    kind: 'verify',
    input: verificationInput(s, decision, checked.ids),
    summary: verifySummary(),
    pending: { decision, via, scope },
  };
}

/**
 * A decision's verification ended, with a verdict or none (its activity failed): its calls' deadline may pass again.
 */
export function verificationEnded(s: CoreState): void {
  s.verifying = Math.max(s.verifying - 1, 0);
}

/** A decision was verified: checked again, then applied (and recorded when applied now), or refused. */
export function decisionVerified(
  s: CoreState,
  pending: PendingDecision,
  verdict: { refusal?: string; authenticated?: boolean },
): DecisionStep {
  const { decision, via, scope } = pending;
  if (verdict.refusal) return refused(s, decision, via, verdict.refusal);
  const now = checkDecision(s, decision, scope);
  if ('refusal' in now) return refused(s, decision, via, now.refusal);
  const outsider = s.decisions.has(decision.decisionId)
    ? undefined
    : policyCheck(s, decision, now.ids, verdict.authenticated);
  if (outsider) return refused(s, decision, via, `${outsider} Nothing was decided (conversation ${s.id}).`);
  const { result, record } = applyDecision(s, decision, now.ids, via, verdict.authenticated);
  if (!record) return { kind: 'answered', result };
  const calls = record.toolCallIds.map((id) => ({ id, name: s.batch?.get(id)?.name ?? 'tool' }));
  const summary = decisionRecordSummary(record.decision, calls, whoDecided(record.decidedBy, record.authenticated));
  return { kind: 'record', record, summary, result };
}

/**
 * Why the decision may not apply to a call of `ids` under its approval policy's rule (who may decide, four eyes, the
 * same person twice), or undefined. Calls without a rule (and every call planned before policies) have no such check.
 */
function policyCheck(
  s: CoreState,
  decision: ApprovalDecision,
  ids: readonly string[],
  authenticated: boolean | undefined,
): string | undefined {
  const approving = decision.decision !== 'reject';
  for (const id of ids) {
    const call = s.batch?.get(id);
    const problem = policyRefusal(
      call?.policy,
      { subject: decision.decidedBy, groups: decision.deciderGroups, authenticated },
      approving,
      s.turn.requesters,
      call ? approvedBy(call) : [],
    );
    if (problem) return ids.length > 1 ? `Tool call "${id}" (${call?.name}): ${problem}` : problem;
  }
  return undefined;
}

/** A refusal: a signal gets no answer, so it is kept in the state for its sender; an update's caller gets it. */
function refused(s: CoreState, decision: unknown, via: 'signal' | 'update', problem: string): DecisionStep {
  if (via === 'signal') refuseDecision(s, decision, problem);
  return { kind: 'refused', problem };
}

/**
 * Checks a decision against the pending calls without applying it. Returns
 * the calls it decides, or why it is refused. A decision id already applied
 * returns that decision's calls (applying it again changes nothing).
 *
 * `scope`: the call instances it was checked against before its verification.
 * Checked again after it, it decides those calls only: a turn that ended
 * meanwhile may have left calls of a later batch waiting under the same ids,
 * which nobody decided on.
 */
export function checkDecision(
  s: CoreState,
  decision: ApprovalDecision,
  scope?: readonly string[],
): { ids: string[] } | { refusal: string } {
  const problem =
    describeBadDecision(decision) ?? describeOversizedDecision(decision) ?? describeUnstorableDecision(decision);
  if (problem) return { refusal: problem };
  const earlier = s.decisions.get(decision.decisionId);
  if (earlier) return { ids: earlier.toolCallIds };
  const batch = s.batch;
  if (!batch) {
    return {
      refusal: decision.toolCallId
        ? `No tool call "${decision.toolCallId}" is pending in conversation ${s.id}.`
        : `No tool call is waiting for approval in conversation ${s.id}.`,
    };
  }
  const checked = batch.checkDecision(decision.toolCallId, decision.callKey);
  if (!('ids' in checked)) return { refusal: `${checked.message} (conversation ${s.id})` };
  const grantProblem = grantRefusal(s, decision, checked.ids);
  if (grantProblem) return { refusal: `${grantProblem} Nothing was decided (conversation ${s.id}).` };
  const kindRefused = batch.refusedKind(checked.ids, decision.decision);
  if (kindRefused)
    return { refusal: `${kindRefused} Nothing was decided; the call still waits (conversation ${s.id}).` };
  // It counts when sent before the deadline and arriving while the call still waits.
  const sentAt = decision.sentAt === undefined ? s.env.now() : Date.parse(decision.sentAt);
  const timely = batch.inTime(checked.ids, sentAt, s.limits.approvalTimeoutMs, decision.sentAt !== undefined);
  if (!('ids' in timely)) return { refusal: timely.message };
  if (!scope) return timely;
  const kept = timely.ids.filter((id) => scope.includes(batch.get(id)?.key ?? ''));
  if (kept.length === timely.ids.length || !s.env.allows('decision-keeps-its-calls')) return timely;
  if (kept.length > 0) return { ids: kept };
  return {
    refusal:
      `The calls this decision was for (${scope.join(', ')}) no longer wait: their turn ended while the decision was being verified, ` +
      `and the calls waiting now (${timely.ids.join(', ')}) are others. Nothing was decided; decide the waiting calls by their ids and keys (conversation ${s.id}).`,
  };
}

/**
 * What the decision's verification activity checks: its signature, and for an `edit` that the new arguments fit the
 * call's tool.
 */
function verificationInput(s: CoreState, decision: ApprovalDecision, ids: readonly string[]): VerifyDecisionInput {
  const call = decision.decision === 'edit' ? s.batch?.get(ids[0]) : undefined;
  const toolset = s.turn.toolset;
  const edit = call
    ? {
        toolName: call.name,
        ...(toolset ? { toolset } : {}),
        ...(s.kept.agent !== undefined ? { agent: s.kept.agent } : {}),
        toolCallId: call.id,
        ...turnOrigin(s),
      }
    : undefined;
  return { conversationId: s.id, decision, ...(edit ? { edit } : {}) };
}

/**
 * Applies a checked decision, once per decision id: approved calls become
 * ready, rejected ones settle as `rejected`. Returns what it did, and the
 * record to store when it was applied now.
 */
export function applyDecision(
  s: CoreState,
  decision: ApprovalDecision,
  ids: string[],
  via: 'signal' | 'update',
  authenticated?: boolean,
): { result: DecisionResult; record?: DecisionRecord } {
  const earlier = s.decisions.get(decision.decisionId);
  if (earlier) return { result: { ...earlier, applied: false } };
  const decidedAt = s.env.now();
  const approved = decision.decision === 'approve' || decision.decision === 'edit';
  const edited = decision.decision === 'edit' && decision.arguments ? JSON.stringify(decision.arguments) : undefined;
  const modelArguments = edited === undefined ? undefined : s.batch?.get(ids[0])?.arguments;
  const signed = authenticated === undefined ? {} : { authenticated };
  s.batch?.decide(ids, {
    decisionId: decision.decisionId,
    approved,
    ...(decision.decision === 'edit' ? { kind: 'edit' as const, arguments: edited } : {}),
    ...(decision.decision === 'respond' ? { kind: 'respond' as const, response: decision.response } : {}),
    reason: decision.reason,
    decidedBy: decision.decidedBy,
    ...signed,
    decidedAt,
  });
  const stillNeeded = Math.max(
    0,
    ...ids.map((id) => {
      const call = s.batch?.get(id);
      return call?.phase === 'awaiting_approval' ? approvalsNeeded(call.policy) - approvedBy(call).length : 0;
    }),
  );
  const result: DecisionResult = {
    decisionId: decision.decisionId,
    applied: true,
    toolCallIds: ids,
    ...(stillNeeded > 0 ? { approvalsStillNeeded: stillNeeded } : {}),
  };
  s.decisions.set(decision.decisionId, result);
  const record: DecisionRecord = {
    conversationId: s.id,
    decisionId: decision.decisionId,
    decision: decision.decision,
    toolCallIds: ids,
    callKeys: ids.map((id) => s.batch?.get(id)?.key ?? ''),
    reason: decision.reason,
    decidedBy: decision.decidedBy,
    decidedAt,
    via,
    ...(edited !== undefined ? { arguments: edited, modelArguments } : {}),
    ...(decision.decision === 'respond' ? { response: decision.response } : {}),
    ...signed,
    ...policyFields(s, decision, ids),
    ...(decision.signature !== undefined ? { signedDecision: decision } : {}),
    ...grantFields(s, decision, ids, authenticated),
  };
  return { result, record };
}

/** The grant an approval gave with it, given now (kept in the state), for its record. */
function grantFields(
  s: CoreState,
  decision: ApprovalDecision,
  ids: readonly string[],
  authenticated: boolean | undefined,
): Pick<DecisionRecord, 'grant'> {
  const call = decision.grant && ids.length === 1 ? s.batch?.get(ids[0]) : undefined;
  if (!call || call.phase === 'awaiting_approval') return {};
  const grant = giveGrant(s, decision, call, authenticated);
  return grant ? { grant: { ...grant } } : {};
}

/** What a decision's record says about the approval policy its calls were under: the rule, the groups, N of M. */
function policyFields(
  s: CoreState,
  decision: ApprovalDecision,
  ids: readonly string[],
): Pick<DecisionRecord, 'rule' | 'deciderGroups' | 'callStillWaits'> {
  const calls = ids.flatMap((id) => s.batch?.get(id) ?? []);
  const rule = calls.find((c) => c.policy)?.policy?.rule;
  if (rule === undefined) return {};
  const waiting = calls.some((c) => c.phase === 'awaiting_approval');
  return {
    rule,
    ...(decision.deciderGroups ? { deciderGroups: [...decision.deciderGroups] } : {}),
    ...(waiting ? { callStillWaits: true } : {}),
  };
}

/** A decision signal was refused: a signal gets no answer, so the refusal is kept in the state for its sender. */
export function refuseDecision(s: CoreState, decision: unknown, problem: string): void {
  const fields = (typeof decision === 'object' && decision !== null ? decision : {}) as Record<string, unknown>;
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  s.kept.refusedDecisions.push({ decisionId: text(fields.decisionId), toolCallId: text(fields.toolCallId), problem });
  if (s.kept.refusedDecisions.length > REFUSED_DECISIONS_KEPT) s.kept.refusedDecisions.shift();
  refuse(s, 'decision signal', problem);
}
