import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentDetails } from '../../src/core/summaries';
import { startHarness, type Harness } from '../support/harness';

// An operator reading a conversation in the Temporal UI or with `temporal
// workflow show` sees what each activity and timer is for (summaries fixed
// when they are scheduled) and what the workflow does now (its current
// details), without opening a payload.

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const summaryOf = (event: temporal.api.history.v1.IHistoryEvent): string | undefined =>
  event.userMetadata?.summary ? defaultPayloadConverter.fromPayload<string>(event.userMetadata.summary) : undefined;

const details = async (id: string): Promise<string> =>
  ((await h.temporal.workflow.getHandle(id).query('__temporal_workflow_metadata')) as { currentDetails?: string })
    .currentDetails ?? '';

describe('a history people can read', () => {
  it('names each model call, tool call, store, decision and approval timer, and says what the conversation waits for', async () => {
    const id = h.newConversationId('readable');
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_find', name: 'find_customer', arguments: { query: 'Ada' } },
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 10_500, reason: 'damaged' },
          },
        ],
      },
      { content: 'Found Ada and refunded the order.' },
    );
    const messageId = await h.client.sendMessage(id, 'Find Ada and refund ord_1001');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    await expect
      .poll(() => details(id), { timeout: 10_000 })
      .toMatch(/^\*\*Waiting for approval\*\* in turn 1: issue_refund \(call_refund\) since \d{4}-\d\d-\d\dT/);

    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_refund', decidedBy: 'ops@example.com' });
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');

    // This worker checks no signatures: the name is the sender's word, and the summaries say so.
    expect(await details(id)).toBe(
      '**Idle**, turn 1\n\n**Last calls**: find_customer (call_find): ok; issue_refund (call_refund): ok, approved by ops@example.com (unauthenticated)',
    );
    const { events } = await h.temporal.workflow.getHandle(id).fetchHistory();
    const activities = (events ?? []).filter((e) => e.activityTaskScheduledEventAttributes).map(summaryOf);
    // The user's message travels with the first model call, the tool results with the second; the
    // assistant's calls are stored before anyone is asked to decide on them; the last model call stores its answer.
    expect(activities).toEqual([
      "model call 1 of turn 1 (the worker's default model)",
      'store message 1',
      'find_customer, call 1 of turn 1',
      "verify a decision's signature",
      'record: approve issue_refund (call_refund) by ops@example.com (unauthenticated)',
      'issue_refund, call 2 of turn 1, approved by ops@example.com (unauthenticated)',
      "model call 2 of turn 1 (the worker's default model)",
      // A turn that waited for a person announces its end (turn.ended_after_wait).
      'turn 1 answered after 1 call waited for a person',
    ]);
    const timers = (events ?? []).filter((e) => e.timerStartedEventAttributes).map(summaryOf);
    expect(timers).toContain('approval deadline: issue_refund (call_refund)');
  });

  it('the details say which results came from the ledger and who rejected what', () => {
    const text = currentDetails({ status: 'Idle', turn: 4, waiting: [] }, [
      { name: 'issue_refund', id: 'call_1', outcome: 'ok', fromLedger: true, decidedBy: 'alice', approved: true },
      { name: 'issue_refund', id: 'call_2', outcome: 'rejected', decidedBy: 'bob', approved: false },
      { name: 'find_customer', id: 'call_3', outcome: 'tool_failed' },
    ]);
    expect(text).toBe(
      '**Idle**, turn 4\n\n**Last calls**: issue_refund (call_1): ok, from ledger, approved by alice; issue_refund (call_2): rejected by bob; find_customer (call_3): tool_failed',
    );
  });
});
