import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessageTooLargeError } from '../../src/client';
import { TOOL_ARGUMENTS_MAX_BYTES } from '../../src/contract/activities';
import { USER_MESSAGE_MAX_BYTES } from '../../src/contract';
import type { ChatMessage } from '../../src/contract/messages';
import { countPromptTokens } from '../../src/testing/context-window';
import { fitToContext } from '../../src/activities/context-budget';
import { readModelCallState } from '../../src/db/transcript-store';
import { tool } from '../../src/tools/tool';
import { startHarness, type Harness } from '../support/harness';

// The context budget against the scripted model server with a real context window (it answers
// OpenAI's context_length_exceeded 400 when a request is over it), and the size limits where
// messages enter.

const report = (chars: number, tag: string) => {
  const line = `${tag} order ord_2001 shipped to Lisbon, status delivered, amount 129.90 EUR, carrier CTT;`;
  return line.repeat(Math.ceil(chars / line.length)).slice(0, chars);
};

let h: Harness;
let requestedChars = 0;
beforeAll(async () => {
  h = await startHarness({
    inlineResultLimit: 4096,
    tools: [
      tool({
        name: 'export_report',
        description: 'Exports the sales report as text.',
        parameters: z.object({ tag: z.string() }),
        execute: ({ tag }) => report(requestedChars, tag),
      }),
    ],
  });
});
afterAll(async () => {
  await h?.stop();
});

const toolMessages = (body: unknown) =>
  ((body as { messages: ChatMessage[] }).messages ?? []).filter((m) => m.role === 'tool');

describe('the context budget', () => {
  it('a 3 MB tool result is shown to the model truncated, kept whole in storage, and the next turn is answered', async () => {
    h.model.setContextWindow(128_000);
    requestedChars = 3 * 1024 * 1024;
    const id = h.newConversationId('huge');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_r', name: 'export_report', arguments: { tag: 'big' } }] },
      { content: 'The report is very long; here is the gist.' },
      { content: 'Hello!' },
    );
    const first = await h.client.ask(id, 'Export the report');
    expect(first.turn.outcome).toBe('answered');
    const second = await h.client.ask(id, 'hello');
    expect(second).toMatchObject({ turn: { outcome: 'answered' }, answer: 'Hello!' });

    h.expectOnlyValidModelRequests();
    const shown = toolMessages(h.requestsFor('Export the report')[1])[0].content;
    expect(shown).toContain(
      `of ${requestedChars} characters. The full text is stored with the conversation (message 2)`,
    );
    const stored = (await h.client.transcript(id)).find((m) => m.message.role === 'tool')!.message as {
      content: string;
    };
    expect(stored.content).toHaveLength(requestedChars);
    for (const r of h.model.requests.slice(-3)) expect(r.promptTokens).toBeLessThanOrEqual(128_000);
  });

  it('20 turns with a 200 kB result each, against a 100k-token window: every turn answered, none over the window', async () => {
    h.model.setContextWindow(100_000);
    requestedChars = 200_000;
    const id = h.newConversationId('many');
    const firstRequest = h.model.requests.length;
    const started = Date.now();
    for (let turn = 0; turn < 20; turn++) {
      h.model.enqueue(
        { toolCalls: [{ id: `call_${turn}`, name: 'export_report', arguments: { tag: `t${turn}` } }] },
        { content: `Summary of report ${turn}.` },
      );
      const { turn: record } = await h.client.ask(id, `Export report ${turn}`, {
        input: { systemPrompt: 'You summarise reports.', model: { contextWindow: 100_000 } },
      });
      expect(record.outcome).toBe('answered');
    }
    const elapsedMs = Date.now() - started;
    h.expectOnlyValidModelRequests();
    const requests = h.model.requests.slice(firstRequest);
    expect(requests).toHaveLength(40);
    const sent = requests.map((r) => r.promptTokens!);
    expect(Math.max(...sent)).toBeLessThanOrEqual(100_000);

    // What the same requests would have held without the budget: the whole stored transcript up to each call.
    const transcript = (await h.client.transcript(id)).map((m) => m.message);
    // Each message counted once (a request's count is 3 priming tokens plus its messages').
    const perMessage = transcript.map((m) => countPromptTokens({ messages: [m] }) - 3);
    const prefix = perMessage.reduce<number[]>((sums, n) => [...sums, sums[sums.length - 1] + n], [3]);
    const unbudgeted = requests.map((r, i) => {
      // Turn t: its first call sees the system prompt and 4t+1 messages; its second, two more.
      const turn = Math.floor(i / 2);
      return prefix[1 + 4 * turn + 1 + (i % 2 === 0 ? 0 : 2)];
    });
    const over = unbudgeted.filter((t) => t > 100_000).length;
    expect(over).toBeGreaterThan(30);
    const budget = (
      await h.pool.query<{ context_budget: { elided: number; truncated: number[] } }>(
        'SELECT context_budget FROM durable_agent.model_responses WHERE conversation_id = $1 ORDER BY created_at',
        [id],
      )
    ).rows.map((r) => r.context_budget);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const fitStarted = performance.now();
    fitToContext(transcript, { windowTokens: 100_000, replyTokens: 4096 });
    const fitMs = Math.round(performance.now() - fitStarted);
    console.log(
      `context budget, 20 turns x 200 kB results, 100k window: ${requests.length} model calls in ${elapsedMs} ms; ` +
        `prompt tokens sent ${sum(sent)} (max ${Math.max(...sent)}), without the budget ${sum(unbudgeted)} (max ${Math.max(...unbudgeted)}, ` +
        `${over} requests over the window); messages left out per call up to ${Math.max(...budget.map((b) => b.elided))}, ` +
        `results shown truncated ${sum(budget.map((b) => b.truncated.length))}; compaction model calls 0; ` +
        `fitting the whole ${transcript.length}-message transcript took ${fitMs} ms`,
    );
  });

  it('a context_length_exceeded answer makes the worker fit the request tighter and try once more; the turn is answered', async () => {
    h.model.setContextWindow(20_000);
    requestedChars = 200_000;
    const id = h.newConversationId('exceeded');
    const firstRequest = h.model.requests.length;
    h.model.enqueue(
      { toolCalls: [{ id: 'call_x', name: 'export_report', arguments: { tag: 'x' } }] },
      { content: 'Done.' },
    );
    const { turn } = await h.client.ask(id, 'Export a report');
    expect(turn.outcome).toBe('answered');
    const requests = h.model.requests.slice(firstRequest);
    expect(requests.map((r) => (r.valid ? 'ok' : (r.error?.body as { error: { code: string } }).error.code))).toEqual([
      'ok',
      'context_length_exceeded',
      'ok',
    ]);
    expect((requests[1].error?.body as { error: { message: string } }).error.message).toMatch(
      /^This model's maximum context length is 20000 tokens\. However, your messages resulted in \d+ tokens\. Please reduce the length of the messages\.$/,
    );
    expect(requests[2].promptTokens).toBeLessThanOrEqual(20_000);
    const { rows } = await h.pool.query(
      'SELECT context_budget FROM durable_agent.model_responses WHERE conversation_id = $1 ORDER BY created_at',
      [id],
    );
    expect(rows.at(-1).context_budget).toMatchObject({ windowTokens: 15_000, truncated: [2] });
    h.model.setContextWindow(undefined);
  });
});

describe('usage', () => {
  it('is stored with each model response and totalled per turn in the state', async () => {
    h.model.setContextWindow(128_000);
    requestedChars = 1000;
    const id = h.newConversationId('usage');
    const firstRequest = h.model.requests.length;
    h.model.enqueue(
      { toolCalls: [{ id: 'call_u', name: 'export_report', arguments: { tag: 'u' } }] },
      { content: 'Small report.' },
    );
    // A window small enough that the byte bound cannot show the request fits: the worker counts, and stores its
    // estimate.
    await h.client.ask(id, 'Export a small report', { input: { model: { stream: false, contextWindow: 1_000 } } });
    const served = h.model.requests.slice(firstRequest).map((r) => r.promptTokens!);
    const { rows } = await h.pool.query<{
      usage: { promptTokens: number; completionTokens: number };
      prompt_estimate: number;
    }>(
      'SELECT usage, prompt_estimate FROM durable_agent.model_responses WHERE conversation_id = $1 ORDER BY created_at',
      [id],
    );
    expect(rows.map((r) => r.usage.promptTokens)).toEqual(served);
    // The worker's estimate is the provider's count but for the 3 tokens that prime the reply; the ratio calibrates the
    // next call.
    // The first request is so small that its byte bound shows it fits: sent uncounted, no estimate. The second is
    // counted.
    expect(rows.map((r) => r.prompt_estimate)).toEqual([null, served[1] - 3]);
    expect((await readModelCallState(h.pool, h.tables, 'no such response', id)).calibration).toBeCloseTo(
      served[1] / (served[1] - 3),
      10,
    );
    const state = await h.client.state(id);
    expect(state.recentTurns[0].usage).toEqual({
      promptTokens: served[0] + served[1],
      completionTokens: rows[0].usage.completionTokens + rows[1].usage.completionTokens,
    });
    h.model.setContextWindow(undefined);
  });
});

describe('size limits', () => {
  it('a 3 MB user message is refused by the client with the size and the limit; nothing changes; the next message is answered', async () => {
    const id = h.newConversationId('big-message');
    h.model.enqueue({ content: 'First answer.' }, { content: 'Second answer.' });
    await h.client.ask(id, 'hello');
    const before = await h.client.state(id);
    const huge = 'x'.repeat(3 * 1024 * 1024);
    const error = await h.client.sendMessage(id, huge).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(MessageTooLargeError);
    expect((error as Error).message).toBe(
      `The message is ${3 * 1024 * 1024} bytes; a user message may be at most ${USER_MESSAGE_MAX_BYTES} bytes (USER_MESSAGE_MAX_BYTES). ` +
        'Nothing was sent. Put a large document where a tool can read it (a file, a table) and send a short message about it, or split it.',
    );
    const after = await h.client.state(id);
    expect(after.messageCount).toBe(before.messageCount);
    expect(after.queuedMessages).toBe(0);
    const next = await h.client.ask(id, 'still there?');
    expect(next.answer).toBe('Second answer.');
  });
});

describe('a very long model answer', () => {
  it('of 6 MB is stored, crosses workflow history as a preview, and is shown whole to the client', async () => {
    const long = report(6 * 1024 * 1024, 'answer');
    const id = h.newConversationId('long-answer');
    const firstRequest = h.model.requests.length;
    h.model.enqueue({ content: long });
    const { turn, answer } = await h.client.ask(id, 'Write everything down', { timeoutMs: 120_000 });
    expect(turn.outcome).toBe('answered');
    expect(answer).toHaveLength(long.length);
    expect(answer === long).toBe(true);
    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    const bytes = JSON.stringify(history).length;
    expect(bytes).toBeLessThan(200_000);
    expect(h.model.requests.slice(firstRequest).map((r) => r.valid)).toEqual([true]);
  });
});

describe('oversized tool call arguments', () => {
  it('are not run: the call settles as invalid_arguments naming the size and the limit, and the turn goes on', async () => {
    const id = h.newConversationId('big-args');
    const firstRequest = h.model.requests.length;
    h.model.enqueue(
      { toolCalls: [{ id: 'call_big', name: 'export_report', arguments: { tag: 'y'.repeat(300 * 1024) } }] },
      { content: 'I will ask for less.' },
    );
    const { turn, answer } = await h.client.ask(id, 'Export with a huge tag');
    expect(turn.outcome).toBe('answered');
    expect(answer).toBe('I will ask for less.');
    const result = (await h.client.transcript(id)).find((m) => m.message.role === 'tool')!.message as {
      content: string;
    };
    expect(JSON.parse(result.content)).toEqual({
      kind: 'tool_failed',
      reason: 'invalid_arguments',
      error: `The arguments are ${300 * 1024 + 10} bytes; a tool call's arguments may be at most ${TOOL_ARGUMENTS_MAX_BYTES} bytes. Ask for less at once, or refer to data by an id the tool can look up.`,
    });
    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    expect(JSON.stringify(history).length).toBeLessThan(100_000);
    expect(h.model.requests.slice(firstRequest).map((r) => r.valid)).toEqual([true, true]);
  });
});
