/**
 * Deciding tool calls on behalf of an authenticated person: the one path the
 * HTTP API, the inbox page and the chat share. The decider is the principal's
 * subject, with the groups their token gave them; four eyes keep a turn's
 * requester from approving its calls, and a call's approval policy rule
 * says who may decide it (`who-decides.ts`: checked here as a courtesy, the
 * workflow checks again); each call is named by its effect key as the
 * decider saw it; each decision is signed for the workers
 * (`src/common/decision-signing.ts`), groups and a standing grant included.
 */
import { randomUUID } from 'node:crypto';
import type { AgentClient } from '../client/client';
import { signDecision, type DecisionKey } from '../common/decision-signing';
import type { ApprovalDecision, DecisionKind, DecisionResult, GrantRequest, WaitingPolicy } from '../contract';
import type { ApiPrincipal } from './tokens';
import { decisionRefusal, fourEyesForbid } from './who-decides';

/** Why a decision that names no calls, or names them both ways, is refused. */
export const NAME_THE_CALLS =
  'Name the calls you decide, either by "toolCallIds" or by "callKeys" (as listed by GET /v1/approvals), not both.';

/**
 * Why a decision was not sent, with the API's stable code: `four_eyes` (the requester approving), `not_permitted` (the
 * call's approval policy rule does not let this person decide it), `decision_refused`, `invalid_request`.
 */
export class DecisionProblem extends Error {
  constructor(
    readonly code: 'four_eyes' | 'not_permitted' | 'decision_refused' | 'invalid_request',
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
  /**
   * `approve` of exactly one call: also give a standing grant, so later calls of the same tool in the conversation
   * (under the same approval policy rule) run without asking, within these limits.
   */
  grant?: GrantRequest;
}

/** How decisions are made: who may approve their own requests, and the key that signs. */
export interface DecisionPolicy {
  /**
   * Let whoever sent a turn's messages approve its calls. Default false (four eyes). Rejecting one's own is always
   * allowed. A call an approval policy's rule made wait follows its rule instead (`requesterMayApprove`).
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
   * Set when an approval policy's rule made the call wait: the rule, who may decide it, and its approvals as they stood
   * before this decision (an approval that is not the last one needed leaves the call waiting for the others).
   */
  policy?: WaitingPolicy;
  /**
   * True when no worker answered: the decision waits, signed, in the
   * conversation's history and applies when a worker runs it, if the call
   * still waits then (else it is listed in the state's `refusedDecisions`).
   */
  queued: boolean;
  /**
   * The standing grant asked for with this approval: its id is the decision's. Given when the approval applies (queued:
   * when a worker applies it); the state's `grants` shows it with its use.
   */
  grant?: GrantRequest & { id: string };
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
 * named call is not waiting, when four eyes forbid it (`four_eyes`) or when
 * its approval policy rule does not let `principal` take this decision
 * (`not_permitted`: not in its groups, approved it already), then sends one
 * decision per call, naming its effect key, with the principal's groups
 * (signed with the rest). When no worker answers within
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
  if (request.grant !== undefined && (request.decision !== 'approve' || byId.length + byKey.length !== 1)) {
    throw new DecisionProblem(
      'invalid_request',
      'A grant goes with an "approve" decision naming exactly one call (one toolCallIds or callKeys entry). Nothing was decided.',
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
  // Editing runs the call and responding answers it: both are approvals as far as four eyes and rules go.
  const approving = request.decision !== 'reject';
  const allowSelfApproval = policy.allowSelfApproval === true;
  const own = named.filter((n) => fourEyesForbid(principal, n.found!, approving, allowSelfApproval)).map((n) => n.name);
  if (own.length > 0) {
    throw new DecisionProblem(
      'four_eyes',
      `Nothing was decided: ${subject} sent the request that asked for ${own.join(', ')}, and a request's sender may not approve its calls (four eyes). Ask another approver.`,
    );
  }
  const ruled = named.flatMap((n) => {
    const refusal = decisionRefusal(principal, n.found!, approving, allowSelfApproval);
    return refusal ? [`${n.name} (${n.found!.toolName}): ${refusal.message}`] : [];
  });
  if (ruled.length > 0) throw new DecisionProblem('not_permitted', `Nothing was decided. ${ruled.join(' ')}`);
  if (request.grant !== undefined) {
    const refusal = grantRefusal(named[0].name, named[0].found!);
    if (refusal) throw new DecisionProblem('decision_refused', refusal);
  }
  // The groups go with (and are signed with) every decision on a call a rule made wait, and every decision of someone
  // who has groups; otherwise the decision keeps the signing format workers of earlier releases check.
  const groups = [...principal.groups].sort();
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
      ...(groups.length > 0 || call.policy ? { deciderGroups: groups } : {}),
      ...(request.grant === undefined ? {} : { grant: request.grant }),
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
      ...(call.policy ? { policy: call.policy } : {}),
      queued,
      ...(request.grant === undefined ? {} : { grant: { id: decision.decisionId, ...request.grant } }),
    });
  }
  return { decidedBy: subject, queued, results };
}

/**
 * Why a grant cannot go with the approval of `call`, as the API sees it before sending anything: its rule needs several
 * people (a grant would let one approve later calls alone). The workflow checks again, and also refuses a grant on a
 * call that runs an agent.
 */
function grantRefusal(name: string, call: { toolName: string; policy?: WaitingPolicy }): string | undefined {
  if (!call.policy || call.policy.approvals <= 1) return undefined;
  return (
    `Nothing was decided: ${name} (${call.toolName}) waits under the approval policy's rule "${call.policy.rule}", which needs ${call.policy.approvals} different people to approve it, ` +
    'and a grant would let one person approve its later calls alone. Approve it without a grant.'
  );
}
