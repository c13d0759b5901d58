/**
 * What a conversation's current run received, read from its Temporal
 * history and decoded as the client decodes payloads (encrypted
 * conversations too): for what the workflow holds but has not written or
 * applied yet (a user message before its turn's first write, a decision
 * queued while no worker runs).
 */
import type { LoadedDataConverter } from '@temporalio/common';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import type { temporal } from '@temporalio/proto';
import type { AgentClient } from '../client/client';

/** The first argument of each signal named `signalName`, and the run's input, in the order the run received them. */
export async function runSignals(
  client: AgentClient,
  conversationId: string,
  signalName: string,
): Promise<{ input: unknown; signals: unknown[] }> {
  const history = await client.temporal.workflow.getHandle(conversationId).fetchHistory();
  const converter = client.temporal.options.loadedDataConverter;
  let input: unknown;
  const signals: unknown[] = [];
  for (const event of history.events ?? []) {
    const started = event.workflowExecutionStartedEventAttributes;
    if (started) input = await firstOf(converter, started.input);
    const signal = event.workflowExecutionSignaledEventAttributes;
    if (signal?.signalName === signalName) signals.push(await firstOf(converter, signal.input));
  }
  return { input, signals };
}

async function firstOf(
  converter: LoadedDataConverter,
  payloads: temporal.api.common.v1.IPayloads | null | undefined,
): Promise<unknown> {
  const [first] = await decodeArrayFromPayloads(converter, payloads?.payloads);
  return first;
}
