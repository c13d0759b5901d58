/**
 * `temporal workflow reset` as operators run it, for tests: where in a conversation's history to reset to, and the
 * reset itself through the real Temporal CLI.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { temporal } from '@temporalio/proto';
import { findTemporalCli } from '../../src/app/temporal-server';
import type { Harness } from './harness';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const run = promisify(execFile);
const { EventType } = (await import('@temporalio/proto')).temporal.api.enums.v1;

/** The history of the conversation's current run. */
export async function historyOf(h: Harness, id: string): Promise<HistoryEvent[]> {
  return (await h.temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
}

/** The workflow task that scheduled the `nth` (1-based) model call of the run: where an operator resets to. */
export function taskSchedulingModelCall(events: HistoryEvent[], nth: number): number {
  const scheduled = events.filter(
    (e) =>
      e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
      e.activityTaskScheduledEventAttributes?.activityType?.name?.endsWith('callModel') === true,
  )[nth - 1];
  if (!scheduled) throw new Error(`the history has no model call number ${nth}`);
  const task = events
    .filter(
      (e) =>
        e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED && Number(e.eventId) < Number(scheduled.eventId),
    )
    .at(-1);
  return Number(task!.eventId);
}

/** The last completed workflow task of the run. */
export function lastTask(events: HistoryEvent[]): number {
  return Number(events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).at(-1)!.eventId);
}

/**
 * Resets the conversation's current run to the workflow task that completed at `eventId`, with the Temporal CLI as an
 * operator does (`reapplyExclude: 'All'`: no signal or update received after that point is applied again); returns
 * the new run's id.
 */
export async function resetTo(
  h: Harness,
  id: string,
  eventId: number,
  options: { reapplyExclude?: 'All' | 'Signal' | 'Update' } = {},
): Promise<string> {
  const cli = findTemporalCli(process.env.TEMPORAL_CLI_PATH);
  if (!cli) throw new Error('the temporal CLI is missing: run scripts/ensure-temporal-cli.sh');
  const before = (await h.temporal.workflow.getHandle(id).describe()).runId;
  const { stdout } = await run(
    cli,
    [
      'workflow',
      'reset',
      '--workflow-id',
      id,
      '--event-id',
      String(eventId),
      '--reason',
      'an operator goes back',
      ...(options.reapplyExclude ? ['--reapply-exclude', options.reapplyExclude] : []),
    ],
    { env: { ...process.env, ...h.temporalEnv, TEMPORAL_NAMESPACE: h.namespace } },
  );
  if (!stdout.includes(`Resetting workflow ${id} to event ID ${eventId}`))
    throw new Error(`the reset of ${id} printed something else: ${stdout}`);
  const runId = (await h.temporal.workflow.getHandle(id).describe()).runId;
  if (runId === before) throw new Error(`the reset of ${id} left its run ${runId} current`);
  return runId;
}

/** Waits until the conversation's current run is idle with `turns` turns answered (60 s at most). */
export async function waitForTurns(h: Harness, id: string, turns: number): Promise<void> {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    const state = await h.client.state(id).catch(() => undefined);
    if (state && state.status === 'idle' && state.recentTurns.length >= turns) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`conversation ${id} did not answer ${turns} turns within 60 s`);
}

/**
 * Waits until a call of the conversation waits for a person and is shown (30 s at most). The status says
 * `awaiting_approval` as soon as the call waits, but the state lists the call (and a decision can name it) only once
 * the message that asked for it is written, which on a busy machine comes noticeably later.
 */
export async function waitForApproval(h: Harness, id: string): Promise<void> {
  for (const deadline = Date.now() + 30_000; (await h.client.state(id)).pendingApprovals.length === 0;) {
    if (Date.now() > deadline) throw new Error(`conversation ${id} never waited for approval`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
