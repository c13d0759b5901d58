import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roundUsd } from '../../src/core/pricing';
import { backofficeTools } from '../../src/demo/tools';
import type { ReasoningEntry } from '../../src/db/reasoning-store';
import { slowExportTool } from '../support/slow-export';
import { countInputTokens } from '../../src/testing/responses-plan';
import type { ScriptedToolCall } from '../../src/testing/types';
import { startHarness, type Harness } from '../support/harness';

// Responses the model did not finish (failed, content-filtered) and a Temporal workflow cancel, on the Responses API:
// a billed response is the call's answer, its usage counted once, its note saying what happened; a cancelled workflow
// leaves every function_call answered once and every stored reasoning item paired with its call.

const PRICES = { 'scripted-model': { input: 2, output: 8 } };

const { tool: slowExport, seen: slow } = slowExportTool();

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ tools: [...backofficeTools(), slowExport], modelApi: 'responses', modelPrices: PRICES });
});
afterAll(async () => {
  await h?.stop();
});

const refund = (id: string): ScriptedToolCall => ({
  id,
  name: 'issue_refund',
  arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'damaged' },
});
/** What each model call of a conversation with a budget spent, in tokens, oldest first (the budget's ledger). */
const spentByCall = async (id: string): Promise<number[]> =>
  (
    await h.pool.query<{ tokens: string }>(
      'SELECT tokens FROM durable_agent.budget_spend WHERE conversation_id = $1 AND spent ORDER BY created_at',
      [id],
    )
  ).rows.map((r) => Number(r.tokens));
/** The reasoning `model_responses.reasoning` keeps for the conversation's answers, in transcript order. */
const storedReasoning = async (id: string) =>
  (
    await h.pool.query<{ reasoning: ReasoningEntry[] | null; message: { tool_calls?: { id: string }[] } }>(
      `SELECT r.reasoning, m.message FROM durable_agent.model_responses r
         JOIN durable_agent.conversation_messages m ON m.ref_key = r.response_key
        WHERE m.conversation_id = $1 AND m.role = 'assistant' ORDER BY m.seq`,
      [id],
    )
  ).rows;
const refundsOf = async (cents: number) =>
  (await h.pool.query('SELECT 1 FROM public.refunds WHERE order_id = $1 AND amount_cents = $2', ['ord_2001', cents]))
    .rowCount;

describe('a Responses answer the model did not finish', () => {
  it('failed with usage: the answer is what it wrote and a note; its usage counted once in the turn and the budget; not retried', async () => {
    const id = h.newConversationId('rs-failed');
    const before = h.model.requests.length;
    h.model.enqueue({
      reasoningContent: 'Refund it.',
      content: 'Let me refund',
      toolCalls: [refund('call_f1')],
      responseError: { code: 'server_error', message: 'The model had an error while generating.' },
    });
    const { turn, answer } = await h.client.ask(id, 'RS-FAILED refund ord_2001', {
      input: { budget: { turnTokens: 1_000_000 } },
    });
    expect(turn.outcome).toBe('answered');
    expect(answer).toBe(
      "Let me refund\n\n[The model's response failed (server_error: The model had an error while generating.); its usage was counted and it was not retried. Its 1 tool call(s) were not run. Send the message again to retry.]",
    );
    // One request: a billed failure is not retried (a retry would bill it again), and its call never ran.
    expect(h.requestsFor('RS-FAILED')).toHaveLength(1);
    expect(h.model.requests.length - before).toBe(1);
    expect(await refundsOf(12_000)).toBe(0);
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual(['user', 'assistant']);

    // The usage the server reported, counted once: in the turn, the conversation, its cost and the budget's ledger.
    const promptTokens = countInputTokens(h.model.requests[before].body as Record<string, unknown>);
    expect(promptTokens).toBeGreaterThan(0);
    const state = await h.client.state(id);
    const usage = state.recentTurns[0].usage!;
    expect(usage.promptTokens).toBe(promptTokens);
    expect(usage.completionTokens).toBeGreaterThan(0);
    expect(usage.costUsd).toBe(roundUsd((usage.promptTokens * 2 + usage.completionTokens * 8) / 1e6));
    expect(state.usage).toMatchObject({ promptTokens: usage.promptTokens, completionTokens: usage.completionTokens });
    expect(await spentByCall(id)).toEqual([usage.promptTokens + usage.completionTokens]);
    // Nothing of its reasoning is kept: the call it led to is not in the transcript.
    expect((await storedReasoning(id)).map((r) => r.reasoning ?? [])).toEqual([[]]);

    // The conversation goes on, on a transcript the API accepts.
    h.model.enqueue({ content: 'Refunded now.' });
    expect((await h.client.ask(id, 'RS-FAILED again')).answer).toBe('Refunded now.');
    h.expectOnlyValidModelRequests();
  });

  it('content-filtered: what it wrote is kept with a note, its calls are not run, its usage counted once', async () => {
    const id = h.newConversationId('rs-filtered');
    h.model.enqueue({
      reasoningContent: 'Hmm.',
      content: 'Here is how to',
      toolCalls: [refund('call_cf1')],
      finishReason: 'content_filter',
    });
    const { turn, answer } = await h.client.ask(id, 'RS-FILTERED something', {
      input: { budget: { turnTokens: 1_000_000 } },
    });
    expect(turn.outcome).toBe('answered');
    expect(answer).toBe(
      "Here is how to\n\n[The model's response is incomplete: the provider's content filter stopped it (content_filter); what it wrote before is kept and its usage was counted. Its 1 tool call(s) were not run. Rephrase the message and send it again to go on.]",
    );
    expect(h.requestsFor('RS-FILTERED')).toHaveLength(1);
    expect(await refundsOf(12_000)).toBe(0);
    const usage = (await h.client.state(id)).recentTurns[0].usage!;
    expect(usage.promptTokens).toBeGreaterThan(0);
    expect(await spentByCall(id)).toEqual([usage.promptTokens + usage.completionTokens]);
    h.expectOnlyValidModelRequests();
  });
});

describe('a Temporal workflow cancel on the Responses API', () => {
  it('while one call waits for approval and another runs: each function_call answered once, the reasoning paired', async () => {
    slow.started = false;
    const id = h.newConversationId('rs-wf-cancel');
    h.model.enqueue({
      reasoningContent: 'Refund it, find her, then export.',
      toolCalls: [
        refund('call_wc1'),
        { id: 'call_wc2', name: 'find_customer', arguments: { query: 'Ada' } },
        { id: 'call_wc3', name: 'slow_export', arguments: {} },
      ],
    });
    await h.client.sendMessage(id, 'RS-WF-CANCEL refund, find and export');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    await expect
      .poll(async () => (await h.client.state(id)).runningToolCalls, { timeout: 20_000 })
      .toEqual(['call_wc3']);
    await expect.poll(() => slow.started).toBe(true);

    const handle = h.temporal.workflow.getHandle(id);
    await handle.cancel();
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect((await handle.describe()).status.name).toBe('CANCELLED');

    const messages = (await h.client.transcript(id)).map((m) => m.message);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'tool']);
    const calls = (messages[1] as { tool_calls: { id: string }[] }).tool_calls.map((c) => c.id);
    expect(calls).toEqual(['call_wc1', 'call_wc2', 'call_wc3']);
    const answers = messages.filter((m) => m.role === 'tool').map((m) => (m as { tool_call_id: string }).tool_call_id);
    for (const call of calls) expect(answers.filter((a) => a === call)).toHaveLength(1);
    const kindOf = (callId: string) =>
      JSON.parse(
        (
          messages.find((m) => m.role === 'tool' && (m as { tool_call_id: string }).tool_call_id === callId) as {
            content: string;
          }
        ).content,
      ).kind;
    expect(kindOf('call_wc1')).toBe('cancelled');
    expect(kindOf('call_wc3')).toBe('interrupted');
    expect(await refundsOf(12_000)).toBe(0);

    // The reasoning stays with the answer, before its first call, a call the stored answer has.
    const [answer] = await storedReasoning(id);
    expect(answer.reasoning).toHaveLength(1);
    const [entry] = answer.reasoning!;
    expect(entry.item.encrypted_content).toMatch(/^gAAAAA/);
    expect(entry.before).toMatchObject({ type: 'function_call', callId: 'call_wc1' });
    expect(answer.message.tool_calls?.map((c) => c.id)).toContain((entry.before as { callId: string }).callId);
    h.expectOnlyValidModelRequests();
  });

  it('while the model call is in flight: the call is dropped and nothing unpaired is stored', async () => {
    const id = h.newConversationId('rs-wf-cancel-model');
    h.model.enqueue({ kind: 'hang' });
    await h.client.sendMessage(id, 'RS-WF-CANCEL-MODEL think');
    await expect.poll(() => h.requestsFor('RS-WF-CANCEL-MODEL').length, { timeout: 20_000 }).toBe(1);
    const handle = h.temporal.workflow.getHandle(id);
    await handle.cancel();
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual(['user']);
    expect(await storedReasoning(id)).toEqual([]);
    h.expectOnlyValidModelRequests();
  });
});
