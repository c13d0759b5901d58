import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backofficeTools } from '../../src/demo/tools';
import { tool } from '../../src/tools/tool';
import { pairingProblemsOf } from '../support/pairing';
import { historyEventSizes } from '../support/history';
import { startHarness, type Harness } from '../support/harness';

// Long conversations continue as new between turns, carrying their state and
// their deduplication memory; history per run stays small.

const TURNS = 60;
const TOOL_STEPS_PER_TURN = 4;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    tools: [
      ...backofficeTools(),
      tool({
        name: 'count_step',
        description: 'Counts a step.',
        parameters: z.object({ n: z.number() }),
        execute: ({ n }) => `step ${n} done`,
      }),
    ],
  });
});
afterAll(async () => {
  await h?.stop();
});

async function runsOf(id: string) {
  const runs: { runId: string; status: string; events: number; bytes: number }[] = [];
  for await (const execution of h.temporal.workflow.list({ query: `WorkflowId = '${id}'` })) {
    const sizes = await historyEventSizes(h.temporal, id, execution.runId);
    runs.push({
      runId: execution.runId,
      status: execution.status.name,
      events: sizes.length,
      bytes: sizes.reduce((s, e) => s + e.bytes, 0),
    });
  }
  return runs;
}

const transcriptIsValid = async (id: string) => {
  const stored = await h.client.transcript(id);
  expect(stored.map((m) => m.seq)).toEqual(stored.map((_, i) => i));
  expect(pairingProblemsOf(stored.map((m) => m.message))).toEqual([]);
  return stored.length;
};

describe('continue-as-new between turns', () => {
  it(`a conversation of ${TURNS * (TOOL_STEPS_PER_TURN + 1)} steps completes across runs, each run's history well under the limits`, async () => {
    const id = h.newConversationId('long-run');
    h.model.setResponder((request) => {
      const messages = (request.body as { messages: { role: string }[] }).messages;
      if (!JSON.stringify(messages[1] ?? {}).includes('long-run')) return { content: 'unexpected' };
      const sinceUser = messages.length - 1 - messages.map((m) => m.role).lastIndexOf('user');
      const done = Math.floor(sinceUser / 2);
      return done < TOOL_STEPS_PER_TURN
        ? { toolCalls: [{ name: 'count_step', arguments: { n: done + 1 } }] }
        : { content: `turn done after ${done} tools` };
    });
    try {
      for (let turn = 0; turn < TURNS; turn++) {
        const { turn: record } = await h.client.ask(id, `long-run turn ${turn}`, {
          input: { systemPrompt: 'Count steps.', continueAsNewAfterEvents: 1_000, maxSteps: 10 },
          messageId: `long-run-${turn}`,
        });
        expect(record.outcome).toBe('answered');
      }
      // A message id from the first run is still remembered: resending it changes nothing.
      await h.client.sendMessage(id, 'long-run turn 0', { messageId: 'long-run-0' });
    } finally {
      h.model.setResponder(undefined);
    }
    const state = await h.client.state(id);
    expect(state.steps).toBe(TURNS * (TOOL_STEPS_PER_TURN + 1));
    expect(state.runs).toBeGreaterThan(3);
    expect(state.queuedMessages).toBe(0);
    expect(state.transcriptRepairs).toBe(0);
    const count = await transcriptIsValid(id);
    expect(count).toBe(1 + TURNS * (2 + 2 * TOOL_STEPS_PER_TURN));
    expect(state.messageCount).toBe(count);

    const runs = await runsOf(id);
    console.log(
      `continue-as-new: ${state.steps} steps in ${runs.length} runs; history per run: ` +
        runs.map((r) => `${r.events} events/${(r.bytes / 1024).toFixed(0)} KiB`).join(', '),
    );
    expect(runs.length).toBe(state.runs);
    expect(runs.filter((r) => r.status === 'CONTINUED_AS_NEW')).toHaveLength(runs.length - 1);
    for (const run of runs) {
      // Temporal warns at 10,240 events or 10 MiB per run.
      expect(run.events).toBeLessThan(1_500);
      expect(run.bytes).toBeLessThan(2 * 1024 * 1024);
    }
    h.expectOnlyValidModelRequests();
  });

  it('decisions already applied stay deduplicated in later runs, and messages sent during the switch are answered', async () => {
    const id = h.newConversationId('can-dedup');
    const bigRefund = (callId: string) => ({
      toolCalls: [
        { id: callId, name: 'issue_refund', arguments: { order_id: 'ord_2001', amount_cents: 10_050, reason: 'x' } },
      ],
    });
    h.model.enqueue(bigRefund('call_first'), { content: 'Done one.' });
    // 'queue' so the third message, sent right after the last decision, waits for the
    // second turn instead of interrupting it wherever that turn happens to be.
    const input = { continueAsNewAfterEvents: 30, onNewMessage: 'queue' as const };
    const first = await h.client.sendMessage(id, 'can-dedup first', { input });
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    expect((await h.client.decide(id, { decisionId: 'd-first', decision: 'reject' })).applied).toBe(true);
    await h.client.waitForTurn(id, first);
    await expect.poll(async () => (await h.client.state(id)).runs, { timeout: 20_000 }).toBeGreaterThan(1);

    h.model.enqueue(bigRefund('call_second'), { content: 'Done two.' }, { content: 'Right after.' });
    const second = await h.client.sendMessage(id, 'can-dedup second');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    const replayed = await h.client.decide(id, { decisionId: 'd-first', decision: 'approve' });
    expect(replayed).toEqual({ decisionId: 'd-first', applied: false, toolCallIds: ['call_first'] });
    expect((await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_second']);
    await h.client.decide(id, { decisionId: 'd-second', decision: 'reject' });
    // Sent while the turn ends and the workflow continues as new.
    const third = await h.client.sendMessage(id, 'can-dedup third');
    expect((await h.client.waitForTurn(id, second)).outcome).toBe('answered');
    expect((await h.client.waitForTurn(id, third)).outcome).toBe('answered');
    const stored = (await h.client.transcript(id)).map((m) => m.message);
    expect(stored.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'can-dedup first',
      'can-dedup second',
      'can-dedup third',
    ]);
    await transcriptIsValid(id);
    h.expectOnlyValidModelRequests();
  });
});
