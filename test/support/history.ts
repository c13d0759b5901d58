/** Measuring workflow history, event by event, in the bytes Temporal stores. */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { conversationActivityType } from '../../src/contract/activities';

/** Encoded size of every event of a workflow's history. */
export async function historyEventSizes(
  client: Client,
  workflowId: string,
  runId?: string,
): Promise<{ event: temporal.api.history.v1.IHistoryEvent; bytes: number }[]> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  return (history.events ?? []).map((event) => ({
    event,
    bytes: temporal.api.history.v1.HistoryEvent.encode(event).finish().length,
  }));
}

/**
 * History bytes added by each step, a step being everything from one
 * `callModel` activity being scheduled up to the next one.
 */
export async function historyBytesPerStep(client: Client, workflowId: string): Promise<number[]> {
  const steps: number[] = [];
  for (const { event, bytes } of await historyEventSizes(client, workflowId)) {
    if (event.activityTaskScheduledEventAttributes?.activityType?.name === conversationActivityType('callModel'))
      steps.push(0);
    if (steps.length > 0) steps[steps.length - 1] += bytes;
  }
  return steps;
}

/** The patch ids a conversation's latest run recorded (markers of `patched()`), in order. */
export async function recordedPatches(client: Client, workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).flatMap((event) => {
    const data = event.markerRecordedEventAttributes?.details?.['patch-data']?.payloads?.[0]?.data;
    return data ? [(JSON.parse(Buffer.from(data).toString()) as { id: string }).id] : [];
  });
}
