import { Worker } from '@temporalio/worker';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { InvalidConversationInputError } from '../../src/common/errors';
import type { ChatMessage } from '../../src/contract/messages';
import { roundUsd } from '../../src/core/pricing';
import type { RecordedRequest, ScriptedReply } from '../../src/testing/types';
import { tool } from '../../src/tools/tool';
import { startHarness, type Harness } from '../support/harness';

// Summaries when the context is full (model.contextOverflow: 'summarize'), against the scripted model server with a
// real context window: the model is sent a summary of the earlier turns in their place, the transcript keeps every
// message, the summary requests' cost is in the state's usage and the budget's ledger, and a replay asks no model.

const PRICES = { 'scripted-model': { input: 2, output: 8 } };
const WINDOW = 3000;
const SUMMARY_INSTRUCTIONS_START = 'You write the summary';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    modelPrices: PRICES,
    tools: [
      tool({
        name: 'lookup_order',
        description: 'Looks an order up.',
        parameters: z.object({ order: z.number() }),
        execute: ({ order }) => `ORD-${order}: ` + 'line item, warehouse A, packed, shipped, delivered; '.repeat(35),
      }),
    ],
  });
  h.model.setContextWindow(WINDOW);
  h.model.setResponder(respond);
});
afterAll(async () => {
  h?.model.setResponder(undefined);
  await h?.stop();
});

const messagesOf = (r: RecordedRequest) => (r.body as { messages: ChatMessage[] }).messages;
const isSummaryRequest = (r: RecordedRequest) =>
  r.valid && String(messagesOf(r)[0]?.content ?? '').startsWith(SUMMARY_INSTRUCTIONS_START);

/**
 * Set by the third summary request: the answering request that follows it fails once with a 500, so the model call
 * that wrote the summary fails after writing it and is retried.
 */
let failNextAnswer = false;
let summariesAnswered = 0;

/**
 * The model: a summary request is answered with the order codes it was shown; a user's "Look up order N" with a
 * call of lookup_order; a tool result with a long answer.
 */
function respond(r: RecordedRequest): ScriptedReply {
  const messages = messagesOf(r);
  if (isSummaryRequest(r)) {
    const codes = [...new Set(String(messages[1].content).match(/ORD-\d+/g) ?? [])];
    failNextAnswer = ++summariesAnswered === 3;
    return { content: `Orders looked up so far: ${codes.join(', ')}.` };
  }
  if (failNextAnswer) {
    failNextAnswer = false;
    return { kind: 'http_error', status: 500 };
  }
  const last = messages.at(-1)!;
  if (last.role === 'user') {
    const order = Number(/order (\d+)/.exec(last.content)?.[1]);
    return { toolCalls: [{ id: `call_o${order}`, name: 'lookup_order', arguments: { order } }] };
  }
  const code = /ORD-\d+/.exec(String(last.content))?.[0];
  return {
    content: `${code} is delivered. ` + 'The parcel went through the Lisbon hub and was signed for. '.repeat(10),
  };
}

describe('summaries when the context is full', () => {
  it('the model sees a summary in place of earlier turns; the transcript keeps everything; the cost is counted; a replay asks no model', async () => {
    const id = h.newConversationId('summaries');
    const firstRequest = h.model.requests.length;
    const input = {
      systemPrompt: 'You look orders up.',
      model: { contextWindow: WINDOW, contextOverflow: 'summarize' as const },
      budget: { conversationTokens: 10_000_000 },
    };
    for (let order = 1; order <= 10; order++) {
      const { turn } = await h.client.ask(id, `Look up order ${order}`, { input });
      expect(turn.outcome).toBe('answered');
    }
    const all = h.model.requests.slice(firstRequest);
    // The call that wrote the third summary failed after writing it: its retry sent the same request, asking for none.
    const failed = all.findIndex((r) => r.reply?.kind === 'http_error');
    expect(failed).toBeGreaterThan(0);
    expect(isSummaryRequest(all[failed - 1])).toBe(true);
    expect(isSummaryRequest(all[failed + 1])).toBe(false);
    expect(messagesOf(all[failed + 1])).toEqual(messagesOf(all[failed]));
    const requests = all.filter((r) => r.reply?.kind !== 'http_error');
    for (const r of requests) expect(r.valid).toBe(true);
    for (const r of requests) expect(r.promptTokens).toBeLessThanOrEqual(WINDOW);
    const summaryRequests = requests.filter(isSummaryRequest);
    const answering = requests.filter((r) => !isSummaryRequest(r));
    expect(answering).toHaveLength(20);
    expect(summaryRequests.length).toBeGreaterThan(0);
    // Summary requests are not streamed and offer no tools.
    for (const r of summaryRequests) expect(r.body).not.toHaveProperty('tools');
    for (const r of summaryRequests) expect((r.body as { stream?: boolean }).stream).not.toBe(true);

    // The model sees the summary (with the facts of the turns it replaces) and not those turns.
    const withSummary = answering.filter((r) =>
      messagesOf(r).some((m) => m.role === 'system' && m.content.startsWith('[Summary of messages')),
    );
    expect(withSummary.length).toBeGreaterThan(summaryRequests.length);
    const last = messagesOf(answering.at(-1)!);
    const note = last.find((m) => m.role === 'system' && m.content.startsWith('[Summary of messages'))!;
    expect(note.content).toMatch(/Orders looked up so far: ORD-1, ORD-2/);
    expect(last[1]).toBe(note);
    expect(last.some((m) => m.role === 'user' && m.content === 'Look up order 1')).toBe(false);
    // Summaries replace whole turns only: every call sent is answered in the same request.
    for (const r of answering) {
      const sent = messagesOf(r);
      const called = sent.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : []));
      const answered = sent.flatMap((m) => (m.role === 'tool' ? [m.tool_call_id] : []));
      expect(answered).toEqual(called);
    }

    // The transcript keeps every message.
    const transcript = await h.client.transcript(id);
    expect(transcript).toHaveLength(1 + 10 * 4);
    expect(transcript.filter((m) => m.message.role === 'user').map((m) => m.message.content)).toEqual(
      Array.from({ length: 10 }, (_, i) => `Look up order ${i + 1}`),
    );

    // The summaries are stored with the range they replace; their cost is in the state's usage and the ledger.
    const { rows: summaries } = await h.pool.query<{
      from_seq: number;
      through_seq: number;
      usage: { promptTokens: number; completionTokens: number };
      cost_usd: number;
    }>('SELECT * FROM durable_agent.context_summaries WHERE conversation_id = $1 ORDER BY through_seq', [id]);
    expect(summaries).toHaveLength(summaryRequests.length);
    for (const s of summaries) {
      expect(s.from_seq).toBe(1);
      expect(transcript[s.through_seq + 1].message.role).toBe('user');
    }
    const { rows: answers } = await h.pool.query<{ usage: { promptTokens: number; completionTokens: number } }>(
      'SELECT usage FROM durable_agent.model_responses WHERE conversation_id = $1',
      [id],
    );
    const total = (rows: { usage: { promptTokens: number; completionTokens: number } }[]) => ({
      promptTokens: rows.reduce((n, r) => n + r.usage.promptTokens, 0),
      completionTokens: rows.reduce((n, r) => n + r.usage.completionTokens, 0),
    });
    const summarised = total(summaries);
    const answered = total(answers);
    expect(summarised.promptTokens).toBe(summaryRequests.reduce((n, r) => n + (r.promptTokens ?? 0), 0));
    const state = await h.client.state(id);
    expect(state.usage.promptTokens).toBe(answered.promptTokens + summarised.promptTokens);
    expect(state.usage.completionTokens).toBe(answered.completionTokens + summarised.completionTokens);
    expect(state.usage.unpricedCalls).toBe(0);
    const cost = (u: { promptTokens: number; completionTokens: number }) =>
      (u.promptTokens * 2 + u.completionTokens * 8) / 1e6;
    expect(state.usage.costUsd).toBeCloseTo(roundUsd(cost(answered) + cost(summarised)), 5);
    const { rows: ledger } = await h.pool.query<{ tokens: string; cost_usd: number }>(
      "SELECT tokens, cost_usd FROM durable_agent.budget_spend WHERE conversation_id = $1 AND response_key LIKE '%/summary/%' AND spent",
      [id],
    );
    expect(ledger).toHaveLength(summaries.length);
    expect(ledger.reduce((n, r) => n + Number(r.tokens), 0)).toBe(
      summarised.promptTokens + summarised.completionTokens,
    );

    // A replay of the conversation's history runs no activity: no model is asked, for a summary or anything else.
    await h.client.end(id);
    await h.temporal.workflow.getHandle(id).result();
    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    const before = h.model.requests.length;
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, id),
    ).resolves.toBeUndefined();
    expect(h.model.requests.length).toBe(before);
  });

  it('elision stays the default: the same conversation without summaries leaves turns out and asks for none', async () => {
    const id = h.newConversationId('elided');
    const firstRequest = h.model.requests.length;
    for (let order = 1; order <= 8; order++) {
      const { turn } = await h.client.ask(id, `Look up order ${order}`, {
        input: { systemPrompt: 'You look orders up.', model: { contextWindow: WINDOW } },
      });
      expect(turn.outcome).toBe('answered');
    }
    const requests = h.model.requests.slice(firstRequest);
    expect(requests.filter(isSummaryRequest)).toHaveLength(0);
    expect(
      messagesOf(requests.at(-1)!).some((m) => m.role === 'system' && m.content.startsWith('[Context note:')),
    ).toBe(true);
    const { rows } = await h.pool.query('SELECT 1 FROM durable_agent.context_summaries WHERE conversation_id = $1', [
      id,
    ]);
    expect(rows).toHaveLength(0);
  });

  it('an unknown contextOverflow is refused, saying what is allowed', async () => {
    const id = h.newConversationId('bad-overflow');
    const bad = { model: { contextOverflow: 'compress' as never } };
    await expect(h.client.sendMessage(id, 'hello', { input: bad })).rejects.toThrow(InvalidConversationInputError);
    await expect(h.client.sendMessage(id, 'hello', { input: bad })).rejects.toThrow(
      /model\.contextOverflow must be "elide" \(leave earlier turns out, the default\) or "summarize"/,
    );
  });
});
