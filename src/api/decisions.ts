/**
 * Deciding tool calls on behalf of an authenticated person: the one path the
 * HTTP API and the inbox page share. The decider is the principal's subject;
 * four eyes keep a turn's requester from approving its calls; each call is
 * named by its effect key as the decider saw it; each decision is signed for
 * the workers (`src/common/decision-signing.ts`).
 */
import { randomUUID } from 'node:crypto';
import type { AgentClient } from '../client/client';
import { signDecision, type DecisionKey } from '../common/decision-signing';
import type { ApprovalDecision, DecisionKind, DecisionResult } from '../contract';
import type { ApiPrincipal } from './tokens';

/** Why a decision that names no calls, or names them both ways, is refused. */
export const NAME_THE_CALLS =
  'Name the calls you decide, either by "toolCallIds" or by "callKeys" (as listed by GET /v1/approvals), not both.';

/** Why a decision was not sent, with the API's stable code. */
export class DecisionProblem extends Error {
  constructor(
    readonly code: 'four_eyes' | 'decision_refused' | 'invalid_request',
    message: string,
  ) {
    super(message);
  }
}

/** What a person decides, naming each call as they saw it. */
export interface DecideRequest {
  decision: DecisionKind;
  /** `edit`: the arguments the one named call runs with instead of the model's. */
  arguments?: Record<string, unknown>;
  /** `respond`: the answer that becomes the one named call's result. */
  response?: string;
  /** The calls, by tool-call id; each must be waiting now. */
  toolCallIds?: string[];
  /**
   * The calls, by effect key (`callKey` of the approvals list): the version the
   * person saw. A key whose call no longer waits is refused, even if another
   * call now waits under the same tool-call id.
   */
  callKeys?: string[];
  reason?: string;
}

/** How decisions are made: who may approve their own requests, and the key that signs. */
export interface DecisionPolicy {
  /**
   * Let whoever sent a turn's messages approve its calls. Default false (four eyes). Rejecting one's own is always
   * allowed.
   */
  allowSelfApproval?: boolean;
  /** Signs every decision; workers holding the key refuse decisions without a valid signature. */
  signingKey?: DecisionKey;
  /**
   * How long to wait for the conversation's worker to answer before the
   * decision is queued instead (sent as a signal, checked against what
   * the list of waiting calls says waits). Default {@link DECISION_WORKER_WAIT_MS}.
   */
  workerWaitMs?: number;
}

/**
 * How long a decision waits for a worker to answer before it is queued: short enough that a person hears back within 5
 * s.
 */
export const DECISION_WORKER_WAIT_MS = 3_000;

/** One call's decision as applied, or as queued. */
export interface CallDecision extends DecisionResult {
  toolCallId: string;
  callKey: string;
  toolName: string;
  arguments: unknown;
  /**
   * True when no worker answered: the decision waits, signed, in the
   * conversation's history and applies when a worker runs it, if the call
   * still waits then (else it is listed in the state's `refusedDecisions`).
   */
  queued: boolean;
}

/** What {@link decideCalls} did. */
export interface DecisionOutcome {
  decidedBy: string;
  /** True when no worker answered and the decisions were queued (see {@link CallDecision.queued}). */
  queued: boolean;
  results: CallDecision[];
}

/**
 * Decides the named calls of one conversation as `principal`. Reads the
 * conversation's pending approvals once, refuses (changing nothing) when a
 * named call is not waiting or when four eyes forbid it, then sends one
 * decision per call, naming its effect key. When no worker answers within
 * `policy.workerWaitMs`, the calls waiting are read from PostgreSQL, the same
 * checks apply, and each decision is sent as a signal that waits for a worker
 * (`queued: true`).
 */
export async function decideCalls(
  client: AgentClient,
  principal: ApiPrincipal,
  conversationId: string,
  request: DecideRequest,
  policy: DecisionPolicy,
): Promise<DecisionOutcome> {
  const byId = request.toolCallIds ?? [];
  const byKey = request.callKeys ?? [];
  if (byId.length + byKey.length === 0 || (byId.length > 0 && byKey.length > 0)) {
    throw new DecisionProblem('invalid_request', NAME_THE_CALLS);
  }
  if ((request.decision === 'edit' || request.decision === 'respond') && byId.length + byKey.length !== 1) {
    throw new DecisionProblem(
      'invalid_request',
      `An "${request.decision}" decision names exactly one call (one toolCallIds or callKeys entry).`,
    );
  }
  const { calls: pending, workerAnswered } = await client.waitingCalls({
    conversationId,
    below: false,
    workerWaitMs: policy.workerWaitMs ?? DECISION_WORKER_WAIT_MS,
  });
  const queued = !workerAnswered;
  const named = [
    ...byId.map((id) => ({ name: `tool call "${id}"`, found: pending.find((p) => p.toolCallId === id) })),
    ...byKey.map((key) => ({ name: `call ${key}`, found: pending.find((p) => p.callKey === key) })),
  ];
  const missing = named.filter((n) => !n.found).map((n) => n.name);
  if (missing.length > 0) {
    throw new DecisionProblem(
      'decision_refused',
      `Nothing was decided: ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not waiting for approval in conversation ${conversationId} (decided already, timed out, or never asked). Reload the list of approvals.`,
    );
  }
  const subject = principal.subject;
  // Editing runs the call and responding answers it: both are approvals as far as four eyes go.
  if (request.decision !== 'reject' && !policy.allowSelfApproval) {
    const own = named.filter((n) => n.found!.requestedBy.includes(subject)).map((n) => n.name);
    if (own.length > 0) {
      throw new DecisionProblem(
        'four_eyes',
        `Nothing was decided: ${subject} sent the request that asked for ${own.join(', ')}, and a request's sender may not approve its calls (four eyes). Ask another approver.`,
      );
    }
  }
  const results: CallDecision[] = [];
  for (const { found } of named) {
    const call = found!;
    const decision: ApprovalDecision = {
      decisionId: randomUUID(),
      decision: request.decision,
      toolCallId: call.toolCallId,
      callKey: call.callKey,
      ...(request.reason === undefined ? {} : { reason: request.reason }),
      ...(request.arguments === undefined ? {} : { arguments: request.arguments }),
      ...(request.response === undefined ? {} : { response: request.response }),
      decidedBy: subject,
      sentAt: new Date().toISOString(),
    };
    if (policy.signingKey) decision.signature = signDecision(policy.signingKey, conversationId, decision);
    const result: DecisionResult = queued
      ? {
          decisionId: await client.signalDecision(conversationId, decision),
          applied: false,
          toolCallIds: [call.toolCallId],
        }
      : await client.decide(conversationId, decision);
    results.push({
      ...result,
      toolCallId: call.toolCallId,
      callKey: call.callKey,
      toolName: call.toolName,
      arguments: call.arguments,
      queued,
    });
  }
  return { decidedBy: subject, queued, results };
}
