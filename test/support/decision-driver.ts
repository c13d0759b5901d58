import type { ApprovalDecision } from '../../src/contract';
import type { BatchCall } from '../../src/core/batch';
import type { ConversationCore, DecisionStep, PendingDecision } from '../../src/core/conversation';

/** What a decision did: refused, or applied (now, or before under the same id). */
export type Decided = { refusal: string } | { applied: boolean; ids: string[] };

/** What the decision side of the core driver works with (the driver itself). */
export interface DecisionEdge {
  readonly core: ConversationCore;
  readonly stage: string;
  readonly calls: readonly BatchCall[];
  clock: number;
  /** Decisions whose verification is in flight, oldest first. */
  readonly verifying: PendingDecision[];
  publish(): void;
  advance(): void;
}

/**
 * A decision signal (or update), as the core's decision steps say, like the
 * workflow's handler: received, verified, checked again, applied. With
 * `verified: false` its verification stays in flight until {@link verdict}.
 */
export function decide(
  d: DecisionEdge,
  decision: unknown,
  via: 'signal' | 'update' = 'signal',
  options: { verified?: boolean } = {},
): Decided | { verifying: true } {
  const step = d.core.receiveDecision(decision as ApprovalDecision, via);
  if (step.kind !== 'verify') return answer(step);
  if (options.verified !== false) return conclude(d, step.pending);
  d.verifying.push(step.pending);
  return { verifying: true };
}

/** The oldest decision in verification gets its verdict (valid). */
export function verdict(d: DecisionEdge): Decided {
  const pending = d.verifying.shift();
  if (!pending) throw new Error('no decision is being verified');
  return conclude(d, pending);
}

/** The approval deadline's timer fires (a decision in verification holds it until its verdict). */
export function deadlinePasses(d: DecisionEdge): void {
  if (d.stage !== 'calls' || !d.calls.some((c) => d.core.awaitsApproval(c))) return;
  d.clock = Math.max(d.clock, ...d.calls.map((c) => c.requestedAt + deadlineOf(d)));
  if (!d.core.decisionsVerifying()) resumeDeadline(d);
  d.advance();
}

function conclude(d: DecisionEdge, pending: PendingDecision): Decided {
  d.core.verificationEnded();
  const step = d.core.decisionVerified(pending, { authenticated: false });
  if (step.kind === 'record') d.publish();
  resumeDeadline(d);
  if (step.kind !== 'refused') d.advance();
  return answer(step);
}

function answer(step: DecisionStep): Decided {
  if (step.kind === 'refused') return { refusal: step.problem };
  if (step.kind === 'verify') throw new Error('a decision still to verify has no answer');
  return { applied: step.result.applied, ids: step.result.toolCallIds };
}

/**
 * A deadline that passed while a decision was verified settles once no verification is left, as the workflow's wait
 * does.
 */
function resumeDeadline(d: DecisionEdge): void {
  if (d.stage !== 'calls' || d.core.decisionsVerifying()) return;
  const due = d.calls.find((c) => d.core.awaitsApproval(c) && d.clock >= c.requestedAt + deadlineOf(d));
  if (due && d.core.approvalDeadlinePassed(due)) d.publish();
}

/** How long a call may wait for its decision: the conversation's own limit, as the core reads it. */
function deadlineOf(d: DecisionEdge): number {
  return d.core.s.limits.approvalTimeoutMs;
}
