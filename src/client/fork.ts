/**
 * Forking a conversation: a new conversation (a workflow of its own) whose
 * transcript is a copy of the source's up to a message or the start of a
 * turn, started idle from that copy as continue-as-new would start it, with
 * its lineage in its input (`forkedFrom`). The source is not touched.
 * docs/operating.md, "Fork", says what a fork keeps and what it answers.
 */
import { randomUUID } from 'node:crypto';
import { isGrpcServiceError, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { WorkflowIdReusePolicy, WorkflowNotFoundError } from '@temporalio/common';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { InvalidConversationInputError, UnstorableTextError } from '../common/errors';
import {
  CONVERSATION_WORKFLOW_TYPE,
  describeInvalidInput,
  describeRefusedByProviders,
  type CarriedConversation,
  type ConversationInput,
  type ForkOrigin,
} from '../contract';
import { describeUnstorableText } from '../contract/text';
import { callInstanceKey } from '../core/effect-keys';
import { copyForFork, removeForkCopy, type ForkCopy } from '../db/fork';
import { ForkPointError, ForkTargetExistsError, type ForkAt } from '../db/fork-point';
import type { ClientContext } from './context';

export { ForkPointError, ForkTargetExistsError, type ForkAt } from '../db/fork-point';

/** Options of `AgentClient.fork`. */
export interface ForkOptions {
  /** The fork's conversation id; `fork-<uuid>` when unset. It must not have been used. */
  conversationId?: string;
  /**
   * Start options of the fork, over the source's (read from the start of its
   * current run): e.g. another `model`. `carried`, `forkedFrom` and `calledBy`
   * are the fork's own and may not be given.
   */
  input?: ConversationInput;
}

/** A fork, as `AgentClient.fork` returns it. */
export interface ForkResult {
  /** The new conversation: send it messages as to any other. */
  conversationId: string;
  /** Where it came from. */
  forkedFrom: ForkOrigin;
  /** Messages the fork starts with (its transcript's seqs 0..messageCount-1). */
  messageCount: number;
  /**
   * The calls the copy answered that had no result at the fork point: `ran`
   * (the source ran it: its result was copied) or `not_run` (answered with the
   * fork's outcome; in the source the call goes on as before).
   */
  answeredCalls: ForkCopy['answered'];
}

/** Forks a conversation, as `AgentClient.fork` does. */
export async function fork(
  context: ClientContext,
  sourceId: string,
  at: ForkAt,
  options: ForkOptions = {},
): Promise<ForkResult> {
  if (!context.databaseUrl) {
    throw new Error(
      'Forking copies the transcript in PostgreSQL, and this client has no databaseUrl. Pass databaseUrl to AgentClient.connect.',
    );
  }
  checkForkPointShape(at);
  const targetId = options.conversationId ?? `fork-${randomUUID()}`;
  const unstorable = describeUnstorableText("The fork's conversation id", targetId);
  if (unstorable) throw new UnstorableTextError(`${unstorable}. Nothing was forked.`);
  checkForkInput(options.input);
  const source = await startInput(context, sourceId);
  if (source.calledBy) {
    throw new ForkPointError(
      `Conversation ${sourceId} runs an agent called as a tool by ${source.calledBy.conversationId}; fork the conversation that called it instead.`,
    );
  }
  if (await workflowExists(context, targetId)) {
    throw new ForkTargetExistsError(
      `Conversation ${targetId} exists already; a fork starts a new conversation. Choose another id, or leave it out for a new one.`,
    );
  }
  const { carried: _carried, forkedFrom: _origin, ...inherited } = source;
  // The source's settings with the fork's over them: together they must be a request the provider takes.
  const refused = describeRefusedByProviders({ ...inherited, ...options.input });
  if (refused.length > 0) {
    throw new InvalidConversationInputError(
      `Invalid input for the fork (the source's, with options.input over it): ${refused.join('; ')}. Nothing was forked; give options.input what to change.`,
    );
  }
  const pool = await context.database();
  const copy = await copyForFork(pool, context.tables, sourceId, targetId, at, callInstanceKey);
  const forkedFrom: ForkOrigin = { conversationId: sourceId, seq: copy.forkSeq };
  const input: ConversationInput = { ...inherited, ...options.input, forkedFrom };
  input.carried = startingPoint(copy, input.agent);
  try {
    await context.temporal.workflow.start(CONVERSATION_WORKFLOW_TYPE, {
      workflowId: targetId,
      taskQueue: context.taskQueue,
      args: [input],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      workflowTaskTimeout: context.workflowTaskTimeout,
    });
  } catch (err) {
    // No run of the fork started: its copy goes, so the same fork may be asked for again.
    await removeForkCopy(pool, context.tables, targetId);
    if (err instanceof WorkflowExecutionAlreadyStartedError) {
      throw new ForkTargetExistsError(
        `Conversation ${targetId} was started meanwhile; a fork starts a new conversation. Choose another id, or leave it out for a new one.`,
      );
    }
    throw err;
  }
  return { conversationId: targetId, forkedFrom, messageCount: copy.nextSeq, answeredCalls: copy.answered };
}

/**
 * What the fork's first run starts from, as a run continued as new would:
 * idle, every copied message stored and settled, the turns so far counted
 * (its next turn is numbered after them), nothing spent yet.
 */
function startingPoint(copy: ForkCopy, inputAgent: string | undefined): CarriedConversation {
  return {
    nextSeq: copy.nextSeq,
    steps: 0,
    transcriptRepairs: 0,
    phase: 'idle',
    recentTurns: [],
    receivedMessageIds: [],
    decisions: [],
    inbox: [],
    ending: false,
    runs: 0,
    turns: copy.turns,
    ...(copy.agent !== undefined && copy.agent !== inputAgent ? { agent: copy.agent } : {}),
  };
}

/** Refuses a fork point that is neither `{ seq }` nor `{ turn }` with an integer (the range is checked on the copy). */
function checkForkPointShape(at: unknown): asserts at is ForkAt {
  const a = at as Record<string, unknown> | null;
  const keys = typeof a === 'object' && a !== null ? Object.keys(a) : [];
  const ok = keys.length === 1 && (keys[0] === 'seq' || keys[0] === 'turn') && Number.isInteger(a![keys[0]]);
  if (!ok) {
    throw new ForkPointError(
      `A fork point is {"seq": <integer>} (keep the messages through that seq) or {"turn": <integer>} (keep what comes before that turn, turns numbered from 1), got ${JSON.stringify(at)}.`,
    );
  }
}

/** Refuses start options a fork cannot take. */
function checkForkInput(input: ConversationInput | undefined): void {
  if (input === undefined) return;
  const problems = describeInvalidInput(input, { providers: true });
  for (const field of ['carried', 'forkedFrom', 'calledBy'] as const)
    if (input[field] !== undefined) problems.push(`${field} is set by the fork itself, never by its caller`);
  if (problems.length > 0)
    throw new InvalidConversationInputError(`Invalid input for the fork: ${problems.join('; ')}. Nothing was forked.`);
}

/** The input the source's current run started with (a run continued as new starts with what it carries). */
async function startInput(context: ClientContext, conversationId: string): Promise<ConversationInput> {
  const { temporal } = context;
  let first;
  try {
    const { history } = await temporal.workflowService.getWorkflowExecutionHistory({
      namespace: temporal.options.namespace,
      execution: { workflowId: conversationId },
      maximumPageSize: 1,
    });
    first = history?.events?.[0]?.workflowExecutionStartedEventAttributes;
  } catch (err) {
    if (isGrpcServiceError(err) && err.code === 5)
      throw new WorkflowNotFoundError(`No conversation ${conversationId} to fork.`, conversationId, undefined);
    throw err;
  }
  if (!first) throw new WorkflowNotFoundError(`No conversation ${conversationId} to fork.`, conversationId, undefined);
  const input = await decodeFromPayloadsAtIndex<ConversationInput | undefined>(
    temporal.options.loadedDataConverter,
    0,
    first.input?.payloads,
  );
  return input ?? {};
}

/** True when a workflow with this id exists (running or closed, within the namespace's retention). */
async function workflowExists(context: ClientContext, workflowId: string): Promise<boolean> {
  try {
    await context.temporal.workflow.getHandle(workflowId).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}
