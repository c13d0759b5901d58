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

const summarising = {
  systemPrompt: 'You look orders up.',
  model: { contextWindow: WINDOW, contextOverflow: 'summarize' as const },
  budget: { conversationTokens: 10_000_000 },
};

interface UsageRow {
  summary: string;
  usage: { promptTokens: number; completionTokens: number } | null;
  cost_usd: number | null;
}

const summaryRows = async (id: string) =>
  (
    await h.pool.query<UsageRow>(
      'SELECT summary, usage, cost_usd FROM durable_agent.context_summaries WHERE conversation_id = $1',
      [id],
    )
  ).rows;

/**
 * Every summary request the server answered is in the conversation's usage once (beside its answers), and in the
 * budget's ledger once, under a key of its own.
 */
async function expectSummariesCountedOnce(id: string, summaryRequests: RecordedRequest[]): Promise<void> {
  const rows = await summaryRows(id);
  const sum = (list: { usage: UsageRow['usage'] }[], k: 'promptTokens' | 'completionTokens') =>
    list.reduce((n, r) => n + (r.usage?.[k] ?? 0), 0);
  expect(sum(rows, 'promptTokens')).toBe(summaryRequests.reduce((n, r) => n + (r.promptTokens ?? 0), 0));
  const { rows: answers } = await h.pool.query<{ usage: UsageRow['usage'] }>(
    'SELECT usage FROM durable_agent.model_responses WHERE conversation_id = $1',
    [id],
  );
  const state = await h.client.state(id);
  expect(state.usage.promptTokens).toBe(sum(answers, 'promptTokens') + sum(rows, 'promptTokens'));
  expect(state.usage.completionTokens).toBe(sum(answers, 'completionTokens') + sum(rows, 'completionTokens'));
  const { rows: ledger } = await h.pool.query<{ tokens: string }>(
    "SELECT tokens FROM durable_agent.budget_spend WHERE conversation_id = $1 AND response_key LIKE '%/summary/%'",
    [id],
  );
  expect(ledger).toHaveLength(summaryRequests.length);
  expect(ledger.reduce((n, r) => n + Number(r.tokens), 0)).toBe(
    sum(rows, 'promptTokens') + sum(rows, 'completionTokens'),
  );
}

/**
 * Runs the orders conversation with turns left out (the default) until a model call leaves turns out: the turn it is
 * in, what the conversation spent before it, and its estimate (the prompt's tokens, counted: it has a budget).
 */
async function firstElision(
  id: string,
  budget: { conversationTokens: number },
): Promise<{ elidedAt: number; spentBefore: number; estimate: number }> {
  for (let order = 1; order <= 12; order++) {
    const { turn } = await h.client.ask(id, `Look up order ${order}`, {
      input: { systemPrompt: 'You look orders up.', model: { contextWindow: WINDOW }, budget },
    });
    const { rows } = await h.pool.query<{
      usage: { promptTokens: number; completionTokens: number };
      prompt_estimate: number;
      context_budget: { elided: number };
    }>(
      `SELECT r.usage, r.prompt_estimate, r.context_budget FROM durable_agent.model_responses r
         JOIN durable_agent.conversation_messages m ON m.ref_key = r.response_key
        WHERE m.conversation_id = $1 ORDER BY m.seq`,
      [id],
    );
    const first = rows.findIndex((r) => r.context_budget.elided > 0);
    if (first >= 0) {
      return {
        elidedAt: order,
        spentBefore: rows.slice(0, first).reduce((n, r) => n + r.usage.promptTokens + r.usage.completionTokens, 0),
        estimate: rows[first].prompt_estimate,
      };
    }
    expect(turn.outcome).toBe('answered');
  }
  throw new Error('no model call left turns out');
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

  it('a summary request that spent tokens and wrote nothing is counted once; that call leaves the turns out', async () => {
    const id = h.newConversationId('summary-empty');
    const firstRequest = h.model.requests.length;
    let summaries = 0;
    // The first summary request is cut by its token limit before any text (a reasoning model that spent them all
    // thinking): it is billed, and no summary comes of it.
    h.model.setResponder((r) =>
      isSummaryRequest(r) && ++summaries === 1
        ? { content: '', reasoningContent: 'Weighing which orders matter. '.repeat(20), finishReason: 'length' }
        : respond(r),
    );
    try {
      for (let order = 1; order <= 8; order++) {
        const { turn } = await h.client.ask(id, `Look up order ${order}`, { input: summarising });
        expect(turn.outcome).toBe('answered');
      }
    } finally {
      h.model.setResponder(respond);
    }
    const requests = h.model.requests.slice(firstRequest);
    const summaryRequests = requests.filter(isSummaryRequest);
    expect(summaryRequests.length).toBeGreaterThan(1);
    // The call whose summary request wrote nothing left the earlier turns out instead.
    const empty = requests.indexOf(summaryRequests[0]);
    expect(
      messagesOf(requests[empty + 1]).some((m) => m.role === 'system' && m.content.startsWith('[Context note:')),
    ).toBe(true);
    await expectSummariesCountedOnce(id, summaryRequests);
    // What it spent is kept in a row of its own with no summary, never sent.
    expect((await summaryRows(id)).filter((r) => r.summary === '')).toHaveLength(1);
  });

  it('a summary written by a call that then failed for good is counted once, by the next call of the conversation', async () => {
    const id = h.newConversationId('summary-orphan');
    const firstRequest = h.model.requests.length;
    let summaries = 0;
    let refuseNext = false;
    // The request the first summary is written for is refused (a 400): that model call fails for good, its turn fails.
    h.model.setResponder((r) => {
      if (isSummaryRequest(r)) refuseNext ||= ++summaries === 1;
      else if (refuseNext) {
        refuseNext = false;
        return { kind: 'http_error', status: 400 };
      }
      return respond(r);
    });
    const outcomes: string[] = [];
    try {
      for (let order = 1; order <= 8; order++) {
        const { turn } = await h.client.ask(id, `Look up order ${order}`, { input: summarising });
        outcomes.push(turn.outcome);
      }
    } finally {
      h.model.setResponder(respond);
    }
    expect(outcomes.filter((o) => o === 'failed')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'answered')).toHaveLength(7);
    const requests = h.model.requests.slice(firstRequest).filter((r) => r.reply?.kind !== 'http_error');
    const summaryRequests = requests.filter(isSummaryRequest);
    expect(summaryRequests.length).toBeGreaterThan(0);
    // Each request answered left one row; the one written by the failed call is in the usage through a later call.
    expect(await summaryRows(id)).toHaveLength(summaryRequests.length);
    await expectSummariesCountedOnce(id, summaryRequests);
  });

  it('a summary that the budget has no room for, with the call it is written for, is not asked for: the turn ends budget_exceeded', async () => {
    // Measured on the same conversation with turns left out: what was spent before the first call that leaves turns
    // out, and that call's estimate.
    const measured = h.newConversationId('summary-budget-measure');
    const { elidedAt, spentBefore, estimate } = await firstElision(measured, { conversationTokens: 10_000_000 });
    // Room for that call (left as it is, with turns out), not for a summary before it.
    const budget = { conversationTokens: spentBefore + estimate + 10 };
    const roomy = h.newConversationId('summary-budget-elide');
    expect((await firstElision(roomy, budget)).elidedAt).toBe(elidedAt);

    const id = h.newConversationId('summary-budget');
    const firstRequest = h.model.requests.length;
    const outcomes: string[] = [];
    let error: string | undefined;
    for (let order = 1; order <= elidedAt; order++) {
      const { turn } = await h.client.ask(id, `Look up order ${order}`, {
        input: { ...summarising, budget },
      });
      outcomes.push(turn.outcome);
      error = turn.error;
    }
    expect(outcomes).toEqual([...Array<string>(elidedAt - 1).fill('answered'), 'budget_exceeded']);
    expect(error).toMatch(
      /^The summary of earlier turns was not asked for: The conversation .* used \d+ tokens and this call needs about \d+ with the model call it is written for \(\d+ of it for that call\); the budget is \d+ \(budget\.conversationTokens\)\. This model call was not made\./,
    );
    expect(h.model.requests.slice(firstRequest).filter((r) => isSummaryRequest(r))).toHaveLength(0);
    expect(await summaryRows(id)).toHaveLength(0);
    const { rows: held } = await h.pool.query(
      "SELECT 1 FROM durable_agent.budget_spend WHERE conversation_id = $1 AND response_key LIKE '%/summary/%'",
      [id],
    );
    expect(held).toHaveLength(0);
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
