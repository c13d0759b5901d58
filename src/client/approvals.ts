/**
 * Approvals: the tool calls waiting for a person (one list, narrowed by
 * options), how many conversations wait and for how long, and deciding
 * calls (an update that answers, or a signal that waits for a worker).
 */
import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { DecisionRefusedError, UnstorableTextError } from '../common/errors';
import {
  decisionSignal,
  decisionUpdate,
  describeBadDecision,
  describeOversizedDecision,
  describeUnstorableDecision,
  type ApprovalDecision,
  type ConversationState,
  type DecisionResult,
  type WaitingCall,
} from '../contract';
import { APPROVAL_AGE_THRESHOLDS } from '../contract/metrics';
import { parseJsonOrText } from '../contract/text';
import { readWaitingCalls } from '../db/approval-store';
import type { ClientContext } from './context';
import { NoWorkerAnsweredError, queryState } from './state-query';

/** Conversation ids one visibility query checks at most (`WorkflowId IN (...)`). */
const IDS_PER_VISIBILITY_QUERY = 100;

/** Which calls `AgentClient.waitingCalls` lists; every field narrows the list, none is needed. */
export interface WaitingCallQuery {
  /**
   * Only calls of this conversation and those waiting below it, in the
   * agents it called as tools (from the list in PostgreSQL: below a
   * top-level conversation only; from its worker: at any depth).
   */
  conversationId?: string;
  /**
   * With `conversationId`: `false` leaves out the calls waiting below it (each is decided in its own conversation).
   * Default `true`.
   */
  below?: boolean;
  /** Only calls of this tool. */
  tool?: string;
  /** Only calls of turns this subject sent messages in. */
  requester?: string;
  /** Only calls waiting at least this long. */
  minAgeMs?: number;
  /**
   * With `conversationId`: ask the conversation's worker (a state query),
   * waiting at most this long, for the calls as the conversation holds them
   * now. When no worker answers in time and the conversation runs, the list
   * in PostgreSQL answers instead: what the conversation last wrote, which
   * is what a decision sent now as a signal meets when a worker runs again.
   * Unset: the list in PostgreSQL, with no worker needed.
   */
  workerWaitMs?: number;
}

/** The calls `AgentClient.waitingCalls` found, and where from. */
export interface WaitingCalls {
  /**
   * Oldest first when read from PostgreSQL; in the conversation's order when its worker answered. Their time is a
   * `Date`.
   */
  calls: WaitingCall<Date>[];
  /** True when the conversation's worker answered (`workerWaitMs`); false when the list in PostgreSQL did. */
  workerAnswered: boolean;
}

/** A decision as a caller gives it; the id is generated when unset. */
export type DecisionInput = Omit<ApprovalDecision, 'decisionId'> & { decisionId?: string };

/** The calls waiting for a person, as `AgentClient.waitingCalls` lists them. */
export async function waitingCalls(context: ClientContext, query: WaitingCallQuery = {}): Promise<WaitingCalls> {
  const { conversationId, workerWaitMs } = query;
  if (workerWaitMs === undefined) return { calls: await listedCalls(context, query), workerAnswered: false };
  if (conversationId === undefined)
    throw new TypeError("waitingCalls: workerWaitMs asks one conversation's worker; name it with conversationId.");
  let state: ConversationState;
  try {
    state = await queryState(context, conversationId, { timeoutMs: workerWaitMs });
  } catch (err) {
    if (!(err instanceof NoWorkerAnsweredError)) throw err;
    const execution = await context.temporal.workflow.getHandle(conversationId).describe();
    if (execution.status.name !== 'RUNNING') throw err;
    return { calls: await listedCalls(context, query), workerAnswered: false };
  }
  const now = Date.now();
  return {
    calls: callsInState(state, query.below ?? true).filter((call) => matches(call, query, now)),
    workerAnswered: true,
  };
}

/**
 * The listed calls in PostgreSQL, of conversations still running (one visibility list per hundred), narrowed by
 * `query`.
 */
async function listedCalls(context: ClientContext, query: WaitingCallQuery): Promise<WaitingCall<Date>[]> {
  const now = Date.now();
  const calls = await readWaitingCalls(await context.database(), context.tables, {
    conversationId: query.conversationId,
    toolName: query.tool,
    requestedBy: query.requester,
    requestedBefore: query.minAgeMs === undefined ? undefined : new Date(now - query.minAgeMs),
  });
  const own = query.conversationId !== undefined && query.below === false;
  const running = await runningConversations(
    context,
    calls.map((c) => c.conversationId),
  );
  const listed = calls
    .filter((call) => running.has(call.conversationId) && (!own || call.conversationId === query.conversationId))
    .map((call) => ({ ...call, arguments: parseJsonOrText(call.arguments), ageMs: now - call.requestedAt.getTime() }));
  const unlisted = await unlistedCalls(context, query, listed);
  return unlisted.length === 0
    ? listed
    : [...listed, ...unlisted].sort((a, b) => a.requestedAt.getTime() - b.requestedAt.getTime());
}

/** Conversations {@link unlistedCalls} asks at most per list, and how long it waits for each one's worker. */
const UNLISTED_CONVERSATIONS = 50;
const UNLISTED_STATE_WAIT_MS = 3_000;

/**
 * The calls conversations wait on that PostgreSQL does not list, read from their state: after a reset to a point
 * where a call waited with nothing reapplied (`--reapply-exclude All`), the decision the abandoned run recorded took
 * the call out of the list, and the new run asked for nothing new; or PostgreSQL refused the list. Found through the
 * `PendingApprovals` search attribute: running conversations on this task queue that wait and have no listed call
 * (their own, or below them). None where the namespace lacks that attribute, or where no worker answers in time.
 */
async function unlistedCalls(
  context: ClientContext,
  query: WaitingCallQuery,
  listed: readonly WaitingCall<Date>[],
): Promise<WaitingCall<Date>[]> {
  const seen = new Set(listed.flatMap((c) => [c.conversationId, c.rootConversationId]));
  if (query.conversationId !== undefined && seen.has(query.conversationId)) return [];
  const names = await context.searchAttributeNamesInUse();
  if (!names.pendingApprovals) return [];
  const one =
    query.conversationId === undefined ? '' : ` AND WorkflowId = '${query.conversationId.replace(/'/g, "''")}'`;
  const ids: string[] = [];
  for await (const execution of context.temporal.workflow.list({
    query: `${names.pendingApprovals} > 0 AND ExecutionStatus = 'Running' AND ${context.taskQueueClause()}${one}`,
  })) {
    if (!seen.has(execution.workflowId)) ids.push(execution.workflowId);
    if (ids.length >= UNLISTED_CONVERSATIONS) break;
  }
  const now = Date.now();
  const states = await Promise.all(
    ids.map((id) => queryState(context, id, { timeoutMs: UNLISTED_STATE_WAIT_MS }).catch(() => undefined)),
  );
  // Each conversation's own calls: one below another is found in its own conversation.
  return states.flatMap((state) =>
    state
      ? callsInState(state, false)
          .filter((call) => matches(call, query, now))
          .map((call) => ({ ...call, ageMs: now - call.requestedAt.getTime() }))
      : [],
  );
}

/**
 * The calls a conversation's state shows waiting: its own and, with `below`, those in the agents it called as tools.
 */
function callsInState(state: ConversationState, below: boolean): WaitingCall<Date>[] {
  const caller = state.calledBy;
  const root = caller?.rootConversationId ?? state.conversationId;
  // The same path the conversation lists its own calls under (src/core/agents.ts, agentPath).
  const path = caller
    ? [...caller.path.slice(0, -1), state.agent ?? caller.path[caller.path.length - 1]]
    : state.agent === undefined
      ? []
      : [state.agent];
  const own = state.pendingApprovals.map((call) => ({
    ...call,
    conversationId: state.conversationId,
    rootConversationId: root,
    agentPath: path,
  }));
  const calls = below
    ? [...own, ...(state.waitingBelow ?? []).map((call) => ({ ...call, rootConversationId: root }))]
    : own;
  return calls.map((call) => ({ ...call, requestedAt: new Date(call.requestedAt) }));
}

/** Whether a call read from a conversation's state passes the filters the list in PostgreSQL applies. */
function matches(call: WaitingCall<Date>, query: WaitingCallQuery, now: number): boolean {
  return (
    (query.tool === undefined || call.toolName === query.tool) &&
    (query.requester === undefined || call.requestedBy.includes(query.requester)) &&
    (query.minAgeMs === undefined || call.requestedAt.getTime() <= now - query.minAgeMs)
  );
}

/** How many conversations wait for a person, by age, as `AgentClient.approvalBacklog` counts them. */
export async function approvalBacklog(
  context: ClientContext,
  thresholds: readonly { waited: string; ms: number }[] = APPROVAL_AGE_THRESHOLDS,
): Promise<{ waited: string; conversations: number }[]> {
  const names = await context.searchAttributeNamesInUse();
  const now = Date.now();
  if (names.pendingApprovals && names.awaitingApprovalSince) {
    // A conversation counts the calls waiting inside the agents it called as tools: those child workflows are left out.
    const waiting = `${names.pendingApprovals} > 0 AND ExecutionStatus = 'Running' AND ParentWorkflowId IS NULL AND ${context.taskQueueClause()}`;
    const figures = [{ waited: 'any', query: waiting }].concat(
      thresholds.map((t) => ({
        waited: t.waited,
        query: `${waiting} AND ${names.awaitingApprovalSince} <= '${new Date(now - t.ms).toISOString()}'`,
      })),
    );
    return Promise.all(
      figures.map(async (f) => ({
        waited: f.waited,
        conversations: (await context.temporal.workflow.count(f.query)).count,
      })),
    );
  }
  const calls = await readWaitingCalls(await context.database(), context.tables);
  const running = await runningConversations(
    context,
    [...new Set(calls.flatMap((c) => [c.conversationId, c.rootConversationId]))],
    { ownQueue: true },
  );
  const oldest = new Map<string, number>();
  for (const call of calls)
    if (
      running.has(call.conversationId) &&
      running.has(call.rootConversationId) &&
      !oldest.has(call.rootConversationId)
    )
      oldest.set(call.rootConversationId, call.requestedAt.getTime());
  const since = [...oldest.values()];
  return [{ waited: 'any', conversations: since.length }].concat(
    thresholds.map((t) => ({ waited: t.waited, conversations: since.filter((at) => at <= now - t.ms).length })),
  );
}

/**
 * Of these conversations, those Temporal's visibility says are running
 * (on this client's task queue, with `ownQueue`), with the start of their
 * current run: one list per hundred ids (`WorkflowId IN (...)`, system
 * attributes only).
 */
async function runningConversations(
  context: ClientContext,
  ids: readonly string[],
  options: { ownQueue?: boolean } = {},
): Promise<Map<string, Date>> {
  const running = new Map<string, Date>();
  const unique = [...new Set(ids)];
  // An id a query cannot quote plainly is asked about on its own.
  const plain = unique.filter((id) => !/['"\\]/.test(id));
  for (const id of unique.filter((i) => !plain.includes(i))) {
    const execution = await context.temporal.workflow
      .getHandle(id)
      .describe()
      .catch(() => undefined);
    if (execution?.status.name === 'RUNNING' && (!options.ownQueue || execution.taskQueue === context.taskQueue))
      running.set(id, execution.startTime);
  }
  const queue = options.ownQueue ? ` AND ${context.taskQueueClause()}` : '';
  for (let i = 0; i < plain.length; i += IDS_PER_VISIBILITY_QUERY) {
    const list = plain
      .slice(i, i + IDS_PER_VISIBILITY_QUERY)
      .map((id) => `'${id}'`)
      .join(', ');
    for await (const execution of context.temporal.workflow.list({
      query: `ExecutionStatus = 'Running' AND WorkflowId IN (${list})${queue}`,
    })) {
      running.set(execution.workflowId, execution.startTime);
    }
  }
  return running;
}

/** Applies a decision as an update, as `AgentClient.decide` does. */
export async function decide(
  context: ClientContext,
  conversationId: string,
  decision: DecisionInput,
): Promise<DecisionResult> {
  const full = completeDecision(decision);
  try {
    return await context.temporal.workflow.getHandle(conversationId).executeUpdate(decisionUpdate, { args: [full] });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError && err.cause) throw new DecisionRefusedError(err.cause.message);
    throw err;
  }
}

/** Sends a decision as a signal, as `AgentClient.signalDecision` does; returns its id. */
export async function signalDecision(
  context: ClientContext,
  conversationId: string,
  decision: DecisionInput,
): Promise<string> {
  const full = completeDecision(decision);
  await context.temporal.workflow.getHandle(conversationId).signal(decisionSignal, full);
  return full.decisionId;
}

/** The decision with its id and time, checked: a `TypeError` or {@link UnstorableTextError} before anything is sent. */
function completeDecision(decision: DecisionInput): ApprovalDecision {
  const full: ApprovalDecision = {
    ...decision,
    decisionId: decision.decisionId ?? randomUUID(),
    sentAt: decision.sentAt ?? new Date().toISOString(),
  };
  const problem = describeBadDecision(full) ?? describeOversizedDecision(full);
  if (problem) throw new TypeError(`Invalid decision: ${problem}.`);
  const unstorable = describeUnstorableDecision(full);
  if (unstorable) throw new UnstorableTextError(`Invalid decision: ${unstorable}. Nothing was sent.`);
  return full;
}
