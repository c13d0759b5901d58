/**
 * A person's decision on calls waiting for approval: what may be decided
 * ({@link DecisionKind}), the decision itself ({@link ApprovalDecision}),
 * what it did or why it was refused, and the checks that say what is wrong
 * with one. Pure and workflow-safe.
 */
import { describeBadGrant, type GrantRequest } from './grants';
import { DECISION_FIELD_MAX_CHARS, EDITED_ARGUMENTS_MAX_BYTES } from './limits';
import { describeUnstorableFields } from './text';

/**
 * What a person may decide on a call waiting for approval: run it
 * (`approve`), not run it (`reject`), run it with other arguments (`edit`),
 * or answer it in the tool's place without running it (`respond`). Each tool
 * says which it allows (`Tool.decisions`).
 */
export type DecisionKind = 'approve' | 'reject' | 'edit' | 'respond';

/**
 * The decisions a call allows when its tool says nothing: all four, but `respond` only for idempotent tools (a model
 * reads a response as the tool's success).
 */
export function defaultDecisions(idempotent: boolean | undefined): DecisionKind[] {
  return idempotent === false ? ['approve', 'reject', 'edit'] : ['approve', 'reject', 'edit', 'respond'];
}

/** A person's decision on tool calls awaiting approval. Usable as a signal payload or an update argument. */
export interface ApprovalDecision {
  /** Client-chosen id: a decision is applied at most once per id. */
  decisionId: string;
  decision: DecisionKind;
  /**
   * `edit` only: the arguments the call runs with instead of the model's (a
   * JSON object, checked against the tool's schema before anything runs).
   * Names one call (`toolCallId` or `callKey`).
   */
  arguments?: Record<string, unknown>;
  /** `respond` only: the person's answer, stored as the call's result; the tool does not run. Names one call. */
  response?: string;
  /** The call to decide; every call awaiting approval when unset. */
  toolCallId?: string;
  /**
   * The effect key of the call meant (`callKey` of a pending approval).
   * Providers reuse tool-call ids across responses, so a decision made for
   * an earlier call could otherwise land on a later call with the same id:
   * with `callKey`, a decision whose call is no longer the one waiting under
   * that id is refused. With no `toolCallId`, it names the one call to decide.
   */
  callKey?: string;
  /** Why; sent to the model with a rejection. */
  reason?: string;
  /** Who decided, for the records. */
  decidedBy?: string;
  /**
   * When the person decided (ISO 8601, the sender's clock). A decision counts
   * when it was sent before the call's approval deadline and reaches the
   * conversation while the call still waits, even if no worker ran at the
   * deadline to handle it. `AgentClient` stamps it; when absent, the time the
   * conversation handles the decision is used instead.
   */
  sentAt?: string;
  /**
   * The API's signature over this decision and its conversation
   * (`<keyId>.<HMAC-SHA256, base64url>`, see `src/common/decision-signing.ts`).
   * A worker that holds decision keys checks it before applying the decision:
   * a valid signature makes `decidedBy` authenticated; without one the decision
   * is refused (or, where signatures are not required, recorded as unauthenticated).
   */
  signature?: string;
  /**
   * The groups of the person deciding, as the HTTP API read them from their token: an approval policy's rule may let
   * only some groups decide a call. Covered by the signature; the workflow trusts them only when it is valid.
   */
  deciderGroups?: string[];
  /**
   * `approve` of one call only: also let later calls of the same tool in this conversation (under the same approval
   * policy rule) run without asking, within these limits. Covered by the signature.
   */
  grant?: GrantRequest;
}

/** What a decision did. */
export interface DecisionResult {
  decisionId: string;
  /** False when this decision id was already applied (nothing changed now). */
  applied: boolean;
  /** The calls the decision settled or released. */
  toolCallIds: string[];
  /**
   * Set when an approval counted but the call still waits: how many more different people must approve it (its
   * approval policy's rule needs several).
   */
  approvalsStillNeeded?: number;
}

/** A decision signal that changed nothing, as shown in the state. */
export interface RefusedDecision {
  /** The decision's id, when it had a usable one. */
  decisionId?: string;
  toolCallId?: string;
  /** What was wrong, in words meant for the sender. */
  problem: string;
}

/**
 * Describes what is wrong with an approval decision payload; undefined when
 * its shape is valid (whether its call is pending is checked separately).
 */
export function describeBadDecision(decision: unknown): string | undefined {
  if (typeof decision !== 'object' || decision === null) {
    return 'expected an object like {"decisionId": "d-1", "decision": "approve", "toolCallId": "call_..."}';
  }
  const d = decision as Record<string, unknown>;
  if (typeof d.decisionId !== 'string' || d.decisionId === '') return '"decisionId" must be a non-empty string';
  if (d.decision !== 'approve' && d.decision !== 'reject' && d.decision !== 'edit' && d.decision !== 'respond') {
    return '"decision" must be "approve", "reject", "edit" or "respond"';
  }
  const oneCall = d.toolCallId !== undefined || d.callKey !== undefined;
  if (d.decision === 'edit') {
    if (typeof d.arguments !== 'object' || d.arguments === null || Array.isArray(d.arguments)) {
      return '"edit" needs "arguments": the JSON object the call runs with instead, e.g. {"order_id": "ord_1001", "amount_cents": 12000}';
    }
    if (!oneCall) return '"edit" decides one call: name it with "toolCallId" or "callKey"';
  } else if (d.arguments !== undefined) return '"arguments" go with an "edit" decision only';
  if (d.decision === 'respond') {
    if (typeof d.response !== 'string' || d.response.trim() === '')
      return '"respond" needs "response": the text that becomes the call\'s result';
    if (!oneCall) return '"respond" decides one call: name it with "toolCallId" or "callKey"';
  } else if (d.response !== undefined) return '"response" goes with a "respond" decision only';
  if (d.toolCallId !== undefined && (typeof d.toolCallId !== 'string' || d.toolCallId === '')) {
    return '"toolCallId", when given, must be a non-empty string (omit it to decide every pending call)';
  }
  if (d.callKey !== undefined && (typeof d.callKey !== 'string' || d.callKey === '')) {
    return '"callKey", when given, must be a non-empty string (the callKey of a pending approval)';
  }
  if (d.reason !== undefined && typeof d.reason !== 'string') return '"reason", when given, must be a string';
  if (d.decidedBy !== undefined && typeof d.decidedBy !== 'string') return '"decidedBy", when given, must be a string';
  if (d.sentAt !== undefined && (typeof d.sentAt !== 'string' || Number.isNaN(Date.parse(d.sentAt)))) {
    return '"sentAt", when given, must be an ISO 8601 time like "2026-11-22T10:15:00.000Z"';
  }
  if (d.signature !== undefined && typeof d.signature !== 'string') return '"signature", when given, must be a string';
  if (
    d.deciderGroups !== undefined &&
    (!Array.isArray(d.deciderGroups) ||
      d.deciderGroups.length > 100 ||
      d.deciderGroups.some((g) => typeof g !== 'string' || g === '' || g.length > 128 || g.includes('\u0000')))
  ) {
    return '"deciderGroups", when given, must be a list of at most 100 group names (1 to 128 characters each)';
  }
  if (d.grant !== undefined) {
    if (d.decision !== 'approve') return '"grant" goes with an "approve" decision only';
    if (!oneCall) return '"grant" goes with a decision on one call: name it with "toolCallId" or "callKey"';
    const problem = describeBadGrant(d.grant);
    if (problem) return problem;
  }
  return undefined;
}

/**
 * Describes which field of a decision is longer than {@link DECISION_FIELD_MAX_CHARS}
 * allows; undefined when none is. (A rejection's reason reaches the model and
 * the transcript, so it is bounded like a message.)
 */
export function describeOversizedDecision(decision: ApprovalDecision): string | undefined {
  for (const [field, max] of Object.entries(DECISION_FIELD_MAX_CHARS)) {
    const value = (decision as unknown as Record<string, unknown>)[field];
    if (typeof value === 'string' && value.length > max)
      return `"${field}" is ${value.length} characters; it may have at most ${max}`;
  }
  if (decision.arguments !== undefined) {
    const bytes = new TextEncoder().encode(JSON.stringify(decision.arguments)).length;
    if (bytes > EDITED_ARGUMENTS_MAX_BYTES)
      return `"arguments" are ${bytes} bytes of JSON; they may have at most ${EDITED_ARGUMENTS_MAX_BYTES}`;
  }
  return undefined;
}

/** Says which field of a decision holds a character PostgreSQL cannot store; undefined when none does. */
export function describeUnstorableDecision(decision: ApprovalDecision): string | undefined {
  return (
    describeUnstorableFields(decision, [
      'reason',
      'decisionId',
      'toolCallId',
      'callKey',
      'decidedBy',
      'sentAt',
      'signature',
      'response',
    ]) ??
    (decision.arguments === undefined
      ? undefined
      : describeUnstorableFields({ arguments: JSON.stringify(decision.arguments) }, ['arguments']))
  );
}
