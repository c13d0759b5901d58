import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { tool } from '../../src/tools/tool';
import { backofficeTools } from '../../src/demo/tools';
import { ActivityErrorType } from '../../src/contract/activities';
import { exportHistoryFixture } from '../support/fixture-export';
import { expectAnswersNextMessage, startHarness, type Harness } from '../support/harness';

// A value PostgreSQL refuses cannot be fixed by a retry, so no write waits on
// one: the activity fails at once as StoreRefused and the workflow settles what
// it was writing (a note in place of a refused message, an effect_unknown for
// a tool whose result is lost, a decision applied without its record), says
// so in lastError, and the conversation answers the next message. Text that
// cannot be stored is replaced before any write (test/integration/unstorable-text.test.ts),
// so these refusals come from CHECK constraints the test adds to the real tables.

const labelMaker = tool({
  name: 'print_label',
  description: 'Prints a shipping label (cannot be undone).',
  parameters: z.object({ order_id: z.string() }),
  idempotent: false,
  async execute({ order_id }) {
    return `REFUSED-RESULT label for ${order_id}`;
  },
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ tools: [...backofficeTools(), labelMaker] });
  await h.pool.query(
    `ALTER TABLE durable_agent.conversation_messages ADD CONSTRAINT test_refuse_message CHECK (message::text NOT LIKE '%REFUSED-MESSAGE%')`,
  );
  await h.pool.query(
    `ALTER TABLE durable_agent.tool_results ADD CONSTRAINT test_refuse_result CHECK (content NOT LIKE 'REFUSED-RESULT%')`,
  );
  await h.pool.query(
    `ALTER TABLE durable_agent.approval_decisions ADD CONSTRAINT test_refuse_reason CHECK (reason IS NULL OR reason NOT LIKE '%REFUSED-REASON%')`,
  );
  await h.pool.query(
    `ALTER TABLE durable_agent.conversation_messages ADD CONSTRAINT test_refuse_all CHECK (conversation_id NOT LIKE 'doomed-%')`,
  );
});
afterAll(async () => {
  await h?.stop();
});

/** The failures of the conversation's activities of `type`, as recorded in its history: attempt and failure type. */
async function activityFailures(
  id: string,
  type: string,
): Promise<{ attempt: number; failureType: string | undefined; nonRetryable: boolean }[]> {
  const history = await h.temporal.workflow.getHandle(id).fetchHistory();
  const scheduled = new Map<string, string>();
  const failures: { attempt: number; failureType: string | undefined; nonRetryable: boolean }[] = [];
  const started = new Map<string, number>();
  for (const event of history.events ?? []) {
    const id = String(event.eventId);
    if (event.activityTaskScheduledEventAttributes)
      scheduled.set(id, event.activityTaskScheduledEventAttributes.activityType?.name ?? '');
    if (event.activityTaskStartedEventAttributes)
      started.set(
        String(event.activityTaskStartedEventAttributes.scheduledEventId),
        event.activityTaskStartedEventAttributes.attempt ?? 0,
      );
    const failed = event.activityTaskFailedEventAttributes;
    if (failed && scheduled.get(String(failed.scheduledEventId)) === type) {
      const info = failed.failure?.applicationFailureInfo;
      failures.push({
        attempt: started.get(String(failed.scheduledEventId)) ?? 0,
        failureType: info?.type ?? undefined,
        nonRetryable: info?.nonRetryable === true,
      });
    }
  }
  return failures;
}

describe('values PostgreSQL refuses', () => {
  it('a message it refuses is stored as a note in its place at once, the model answers, and lastError says which seq', async () => {
    const id = h.newConversationId('refused-message');
    h.model.enqueue({ content: 'Noted.' });
    const { turn, answer } = await h.client.ask(id, 'please store REFUSED-MESSAGE for me');
    expect(turn.outcome).toBe('answered');
    expect(answer).toBe('Noted.');
    const stored = await h.client.transcript(id);
    expect(stored.map((m) => m.message.role)).toEqual(['user', 'assistant']);
    expect(stored[0].message.content).toMatch(
      /^\[This message could not be stored, so its text is lost: PostgreSQL refused to store message 0 of conversation .*test_refuse_message/,
    );
    const state = await h.client.state(id);
    expect(state.lastError).toMatch(
      /^PostgreSQL refused to store message 0, stored a note in their place: .*test_refuse_message/,
    );
    // The model call that carried the write failed once, not retried; the one after the note answered.
    expect(await activityFailures(id, 'durableAgent.callModel')).toEqual([
      { attempt: 1, failureType: ActivityErrorType.StoreRefused, nonRetryable: true },
    ]);
    // The model was asked with the note, never with a gap.
    const asked = h.model.requests.filter((r) =>
      JSON.stringify(r.body).includes('could not be stored, so its text is lost'),
    );
    expect(asked).toHaveLength(1);
    await expectAnswersNextMessage(h, id);
    expect((await h.client.state(id)).lastError).toBeUndefined();
    h.expectOnlyValidModelRequests();
    await h.client.end(id);
    await h.temporal.workflow.getHandle(id).result();
    await exportHistoryFixture(h.temporal, id, 'store-refused-note');
  });

  it('a tool result it refuses settles a tool that is not idempotent as effect_unknown, and the turn answers', async () => {
    const id = h.newConversationId('refused-result');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_label', name: 'print_label', arguments: { order_id: 'ord_1001' } }] },
      { content: 'I could not confirm the label.' },
    );
    const { turn } = await h.client.ask(id, 'print a label for ord_1001');
    expect(turn.outcome).toBe('answered');
    const result = (await h.client.transcript(id)).find((m) => m.message.role === 'tool')?.message;
    const content = JSON.parse((result as { content: string }).content) as { kind: string; error: string };
    expect(content.kind).toBe('effect_unknown');
    expect(content.error).toContain('The tool ran, but PostgreSQL refused to store its result, so the result is lost');
    expect(await activityFailures(id, 'durableAgent.runTool')).toEqual([
      { attempt: 1, failureType: ActivityErrorType.ToolEffectUnknown, nonRetryable: true },
    ]);
    expect((await h.client.state(id)).unknownEffectsCount).toBe(1);
    await expectAnswersNextMessage(h, id);
    h.expectOnlyValidModelRequests();
  });

  it('a decision record it refuses leaves the decision applied, and lastError says only its record is missing', async () => {
    const id = h.newConversationId('refused-record');
    h.model.enqueue({
      toolCalls: [
        {
          id: 'call_big',
          name: 'issue_refund',
          arguments: { order_id: 'ord_2001', amount_cents: 15000, reason: 'late' },
        },
      ],
    });
    await h.client.sendMessage(id, 'refund 150 on ord_2001');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 15_000 }).toBe(1);
    h.model.enqueue({ content: 'The refund was rejected.' });
    await h.client.decide(id, { decision: 'reject', toolCallId: 'call_big', reason: 'REFUSED-REASON: too much' });
    await expect.poll(async () => (await h.client.state(id)).recentTurns.length, { timeout: 15_000 }).toBe(1);
    const state = await h.client.state(id);
    expect(state.recentTurns[0].outcome).toBe('answered');
    expect(state.lastError).toMatch(
      /^PostgreSQL refused the record of decision .* \(reject call_big\); it applied, only its record is missing: .*test_refuse_reason/,
    );
    const rejected = (await h.client.transcript(id)).find((m) => m.message.role === 'tool')?.message as {
      content: string;
    };
    expect(JSON.parse(rejected.content)).toMatchObject({ kind: 'rejected', reason: 'REFUSED-REASON: too much' });
    expect(await activityFailures(id, 'durableAgent.recordDecision')).toEqual([
      { attempt: 1, failureType: ActivityErrorType.StoreRefused, nonRetryable: true },
    ]);
    await expectAnswersNextMessage(h, id);
    h.expectOnlyValidModelRequests();
  });

  it('an assistant message it refuses before a wait for a person gets its note, and the call is listed and decided as usual', async () => {
    const id = h.newConversationId('refused-ask');
    h.model.enqueue({
      toolCalls: [
        {
          id: 'call_big',
          name: 'issue_refund',
          arguments: { order_id: 'ord_2001', amount_cents: 15000, reason: 'REFUSED-MESSAGE' },
        },
      ],
    });
    const messageId = await h.client.sendMessage(id, 'refund 150 on ord_2001');
    await expect
      .poll(async () => (await h.client.waitingCalls({ conversationId: id })).calls.map((a) => a.toolCallId), {
        timeout: 15_000,
      })
      .toEqual(['call_big']);
    const asked = (await h.client.transcript(id))[1].message as { content: string; tool_calls: { id: string }[] };
    expect(asked.content).toMatch(/^\[This message could not be stored/);
    expect(asked.tool_calls.map((c) => c.id)).toEqual(['call_big']);
    expect((await h.client.state(id)).lastError).toMatch(
      /^PostgreSQL refused to store message 1, stored a note in their place/,
    );
    h.model.enqueue({ content: 'Not refunded.' });
    await h.client.decide(id, { decision: 'reject', toolCallId: 'call_big', reason: 'no' });
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    expect((await h.client.waitingCalls({ conversationId: id })).calls).toEqual([]);
    h.expectOnlyValidModelRequests();
  });

  it('when it refuses even the notes, the turn ends failed saying what is missing instead of waiting forever', async () => {
    const id = h.newConversationId('doomed');
    const messageId = await h.client.sendMessage(id, `hello from ${id}`, {
      input: { timeouts: { modelCallAttempts: 2 } },
    });
    const turn = await h.client.waitForTurn(id, messageId, 60_000);
    expect(turn.outcome).toBe('failed');
    expect(turn.error).toContain('PostgreSQL holds 0 messages through seq 0, expected 1');
    const state = await h.client.state(id);
    expect(state.status).toBe('failed');
    expect(state.lastError).toMatch(
      /PostgreSQL holds 0 messages through seq 0, expected 1.* Before that: PostgreSQL refused to store message 0 and the notes in their place .*test_refuse_all/,
    );
    expect(h.requestsFor(id)).toEqual([]);
  });
});
