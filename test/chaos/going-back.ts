/**
 * Going back, as chaos faults: `temporal workflow reset` of a conversation to
 * a completed workflow task of its current run (the last one, one inside the
 * turn in flight, one anywhere in the run, or the last one while calls wait
 * for a person), and forks of a conversation at a seq or a turn
 * (`AgentClient.fork`). What each did is recorded in the run log, so the
 * checks can tell an abandoned run's effects and reapplied decisions apart.
 */
import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { tsToMs } from '@temporalio/common/lib/time';
import { ForkPointError, type ForkAt } from '../../src/client/client';
import { userMessageSignal } from '../../src/contract/workflow';
import type { ResetKind } from './plan';
import type { Rng } from './random';
import { retrying, type RetryContext } from './retrying';
import type { ForkDone } from './run-log';

const { EventType } = temporal.api.enums.v1;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** What going back needs of the driver's context. */
type GoingBackContext = RetryContext & { log: (line: string) => void };

/**
 * The completed workflow tasks of a run that a reset may go back to: every
 * one, except those while an agent called as a tool ran (a reset there would
 * leave the new run waiting on a child its abandoned run had started).
 */
function resetPoints(events: readonly HistoryEvent[]): HistoryEvent[] {
  const open = new Set<string>();
  const points: HistoryEvent[] = [];
  for (const e of events) {
    const a = e.startChildWorkflowExecutionInitiatedEventAttributes;
    if (a?.workflowId) open.add(a.workflowId);
    const closed =
      e.childWorkflowExecutionCompletedEventAttributes ??
      e.childWorkflowExecutionFailedEventAttributes ??
      e.childWorkflowExecutionCanceledEventAttributes ??
      e.childWorkflowExecutionTerminatedEventAttributes ??
      e.childWorkflowExecutionTimedOutEventAttributes;
    const childId =
      closed?.workflowExecution?.workflowId ?? e.startChildWorkflowExecutionFailedEventAttributes?.workflowId;
    if (childId) open.delete(childId);
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED && open.size === 0) points.push(e);
  }
  return points;
}

/**
 * Resets the conversation's current run to a completed workflow task chosen
 * by `kind`, as an operator would with `temporal workflow reset`; records it.
 * Returns false (recording nothing) when the run has no such task or the
 * reset could not be made.
 */
export async function resetConversation(
  ctx: GoingBackContext,
  conversationId: string,
  kind: ResetKind,
  rng: Rng,
): Promise<boolean> {
  const { client } = ctx;
  try {
    // The run read is the run reset: a run that continued as new meanwhile is closed, and its reset is refused.
    const { runId, status } = await retrying(ctx, () => client.temporal.workflow.getHandle(conversationId).describe());
    if (status.name !== 'RUNNING') return false;
    const history = await retrying(ctx, () => client.temporal.workflow.getHandle(conversationId, runId).fetchHistory());
    const events = history.events ?? [];
    if (events.some((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW)) return false;
    const points = resetPoints(events);
    if (points.length === 0) return false;
    let point: HistoryEvent;
    if (kind === 'last' || kind === 'waiting') point = points[points.length - 1];
    else if (kind === 'mid_turn') {
      // A task of the turn in flight: after the last user message arrived (before a tool ran, or a model call).
      const lastMessage = [...events]
        .reverse()
        .find((e) => e.workflowExecutionSignaledEventAttributes?.signalName === userMessageSignal.name);
      const inTurn = points.filter((p) => Number(p.eventId) > Number(lastMessage?.eventId ?? 0));
      point = rng.pick(inTurn.length > 0 ? inTurn : points);
    } else point = rng.pick(points);
    const requestId = randomUUID(); // the same on every attempt: a retried reset is made once
    const sentAt = Date.now();
    await retrying(ctx, () =>
      client.temporal.workflowService.resetWorkflowExecution({
        namespace: client.temporal.options.namespace,
        workflowExecution: { workflowId: conversationId, runId },
        workflowTaskFinishEventId: point.eventId,
        requestId,
        reason: `chaos: reset (${kind})`,
      }),
    );
    ctx.runLog.resets.push({
      conversationId,
      kind,
      eventId: Number(point.eventId),
      pointAt: point.eventTime ? tsToMs(point.eventTime) : sentAt,
      sentAt,
      doneAt: Date.now(),
    });
    ctx.runLog.faults.reset++;
    ctx.log(`${conversationId}: reset (${kind}) to workflow task ${String(point.eventId)} of ${events.length} events`);
    return true;
  } catch (err) {
    ctx.log(`${conversationId}: reset (${kind}) not made: ${(err as Error).message}`);
    return false;
  }
}

/**
 * Forks the conversation into `forkId` at a seq or a turn chosen with `rng`
 * (or at its last message, `atEnd`), and records it. Returns the fork, or
 * undefined when no fork could be made.
 */
export async function forkConversation(
  ctx: GoingBackContext,
  sourceId: string,
  forkId: string,
  rng: Rng,
  options: { atEnd: boolean; whileWaiting: boolean },
): Promise<ForkDone | undefined> {
  try {
    const stored = await retrying(ctx, () => ctx.client.transcript(sourceId));
    if (stored.length === 0) return undefined;
    const lastSeq = stored[stored.length - 1].seq;
    const turns = stored.filter((m, i) => m.message.role === 'user' && stored[i - 1]?.message.role !== 'user').length;
    const at: ForkAt =
      options.atEnd || turns < 2 || rng.chance(0.5)
        ? { seq: options.atEnd ? lastSeq : rng.int(0, lastSeq) }
        : { turn: rng.int(2, turns) };
    // One attempt: a fork whose answer was lost would find its id taken when tried again.
    const result = await ctx.client.fork(sourceId, at, { conversationId: forkId });
    const done: ForkDone = {
      sourceId,
      forkId,
      at,
      forkSeq: result.forkedFrom.seq,
      answered: result.answeredCalls,
      whileWaiting: options.whileWaiting,
    };
    ctx.runLog.forks.push(done);
    ctx.runLog.faults.fork++;
    ctx.log(`${sourceId}: forked into ${forkId} at ${JSON.stringify(at)} (${result.messageCount} messages)`);
    return done;
  } catch (err) {
    if (!(err instanceof ForkPointError))
      ctx.log(`${sourceId}: fork into ${forkId} not made: ${(err as Error).message}`);
    return undefined;
  }
}
