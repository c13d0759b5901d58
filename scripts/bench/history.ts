/**
 * What one turn leaves in Temporal's history: events and encoded bytes per
 * step, and where a step's time goes (from the events' server timestamps):
 * how long workflow tasks and activities wait to be picked up and how long
 * they run.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { historyEventSizes } from '../../test/support/history';
import { quantile } from './measure';

const EventType = temporal.api.enums.v1.EventType;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Median / p90 / max of a list of durations, ms. */
export interface Spread {
  count: number;
  p50: number;
  p90: number;
  max: number;
}

/** History of one turn. */
export interface HistoryFigures {
  workflowId: string;
  steps: number;
  events: number;
  bytes: number;
  /** Events of the whole history ÷ steps (the user message and final answer included). */
  eventsPerStep: number;
  /** Encoded bytes of the whole history ÷ steps. */
  bytesPerStep: number;
  /** Median events from one model activity scheduled to the next (a tool step only). */
  eventsPerToolStep: number;
  /** Median bytes from one model activity scheduled to the next. */
  bytesPerToolStep: number;
  workflowTasksPerStep: number;
  activitiesPerStep: number;
  /** Local activities per step (their markers). */
  localActivitiesPerStep: number;
  /** Where the time goes, from the events' timestamps. */
  anatomy: {
    /** Workflow task scheduled → picked up by the worker. */
    workflowTaskScheduleToStart: Spread;
    /** Workflow task picked up → completed (the worker ran the workflow code). */
    workflowTaskStartToClose: Spread;
    /** Per activity type: scheduled → started, and started → completed. */
    activities: Record<string, { scheduleToStart: Spread; startToClose: Spread }>;
    /** Activity completed → the next workflow task picked up: what a step waits between its activities. */
    activityCompletedToNextTaskStart: Spread;
    /** Schedule → start of every workflow task, in order (ms): shows where back-to-back tasks begin to wait. */
    workflowTaskWaits: number[];
  };
}

/** An event's server time, ms since the epoch. */
export function eventTimeMs(event: HistoryEvent): number {
  const t = event.eventTime;
  return Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;
}

function spread(values: number[]): Spread {
  const r = (v: number): number => Math.round(v * 10) / 10;
  return {
    count: values.length,
    p50: r(quantile(values, 0.5)),
    p90: r(quantile(values, 0.9)),
    max: r(values.length ? Math.max(...values) : NaN),
  };
}

/**
 * Reads a workflow's history and describes it per step; `isStepStart`
 * recognises the activity type that opens a step (the model call).
 */
export async function historyFigures(
  client: Client,
  workflowId: string,
  steps: number,
  isStepStart: (activityType: string) => boolean,
): Promise<HistoryFigures> {
  const sized = await historyEventSizes(client, workflowId);
  const byId = new Map<number, HistoryEvent>();
  for (const { event } of sized) byId.set(Number(event.eventId), event);

  const stepBytes: number[] = [];
  const stepEvents: number[] = [];
  for (const { event, bytes } of sized) {
    const type = event.activityTaskScheduledEventAttributes?.activityType?.name;
    if (type && isStepStart(type)) {
      stepBytes.push(0);
      stepEvents.push(0);
    }
    if (stepBytes.length > 0) {
      stepBytes[stepBytes.length - 1] += bytes;
      stepEvents[stepEvents.length - 1]++;
    }
  }
  // The last "step" is the final answer (model call and what follows); only tool steps are medians.
  const toolSteps = { bytes: stepBytes.slice(0, -1), events: stepEvents.slice(0, -1) };

  const wftWaits: number[] = [];
  const wftRuns: number[] = [];
  const activities: Record<string, { wait: number[]; run: number[] }> = {};
  const completedToNext: number[] = [];
  let lastActivityCompletedAt: number | undefined;
  let workflowTasks = 0;
  let activityCount = 0;
  let localActivityCount = 0;
  for (const { event } of sized) {
    switch (event.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED: {
        const scheduled = byId.get(Number(event.workflowTaskStartedEventAttributes?.scheduledEventId));
        if (scheduled) wftWaits.push(eventTimeMs(event) - eventTimeMs(scheduled));
        if (lastActivityCompletedAt !== undefined) completedToNext.push(eventTimeMs(event) - lastActivityCompletedAt);
        lastActivityCompletedAt = undefined;
        break;
      }
      case EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED: {
        workflowTasks++;
        const started = byId.get(Number(event.workflowTaskCompletedEventAttributes?.startedEventId));
        if (started) wftRuns.push(eventTimeMs(event) - eventTimeMs(started));
        break;
      }
      case EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: {
        activityCount++;
        const a = event.activityTaskCompletedEventAttributes;
        const scheduled = byId.get(Number(a?.scheduledEventId));
        const started = byId.get(Number(a?.startedEventId));
        const type = scheduled?.activityTaskScheduledEventAttributes?.activityType?.name ?? '?';
        const entry = (activities[type] ??= { wait: [], run: [] });
        if (scheduled && started) {
          entry.wait.push(eventTimeMs(started) - eventTimeMs(scheduled));
          entry.run.push(eventTimeMs(event) - eventTimeMs(started));
        }
        lastActivityCompletedAt ??= eventTimeMs(event);
        break;
      }
      case EventType.EVENT_TYPE_MARKER_RECORDED:
        // Local activities (and patches) leave markers; a local activity's is named "core_local_activity".
        if (event.markerRecordedEventAttributes?.markerName === 'core_local_activity') localActivityCount++;
        break;
      default:
        break;
    }
  }
  const bytes = sized.reduce((n, s) => n + s.bytes, 0);
  return {
    workflowId,
    steps,
    events: sized.length,
    bytes,
    eventsPerStep: sized.length / steps,
    bytesPerStep: bytes / steps,
    eventsPerToolStep: quantile(toolSteps.events, 0.5),
    bytesPerToolStep: quantile(toolSteps.bytes, 0.5),
    workflowTasksPerStep: workflowTasks / steps,
    activitiesPerStep: activityCount / steps,
    localActivitiesPerStep: localActivityCount / steps,
    anatomy: {
      workflowTaskScheduleToStart: spread(wftWaits),
      workflowTaskStartToClose: spread(wftRuns),
      activities: Object.fromEntries(
        Object.entries(activities).map(([type, v]) => [
          type,
          { scheduleToStart: spread(v.wait), startToClose: spread(v.run) },
        ]),
      ),
      activityCompletedToNextTaskStart: spread(completedToNext),
      workflowTaskWaits: wftWaits.map((v) => Math.round(v * 10) / 10),
    },
  };
}
