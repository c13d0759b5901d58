import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openReasoning } from '../../src/testing/responses-encrypted';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';
import { effectKeyOf } from '../support/effect-keys';
import type { ResponsesItem } from '../support/model-requests';

// Worker processes on the Responses API (OPENAI_API=responses, the worker's default) killed with SIGKILL: the
// Responses form of the guarantee holds across the crash (each function_call answered once by call_id, each reasoning
// item sent back byte for byte just before the item that followed it), and with `store: false` the reasoning items
// survive a crash and a continue-as-new, read back from PostgreSQL.

/** Activities heartbeat often, so a killed worker's tool or model call is retried within seconds. */
const input = { timeouts: { heartbeatMs: 3_000 } };

let h: Harness;
let worker: WorkerProcess | undefined;
let scratch: string;
/** The crash marker of every worker here: `issue_refund` kills its worker when the file is missing, then writes it. */
let marker: string;

beforeAll(async () => {
  h = await startHarness({ worker: false });
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-responses-crash-'));
  marker = path.join(scratch, 'crash-marker');
});
afterAll(async () => {
  await worker?.stop('SIGKILL');
  await h?.stop();
  fs.rmSync(scratch, { recursive: true, force: true });
});

/**
 * A worker process on the Responses API whose `issue_refund` kills it, while the marker is missing, after its effect
 * committed.
 */
async function startWorker(): Promise<void> {
  worker = await startWorkerProcess(
    h.workerEnv({
      OPENAI_API: 'responses',
      AGENT_TOOLS_MODULE: path.join(__dirname, '..', 'support', 'crash-tools.ts'),
      CRASH_MARKER_FILE: marker,
    }),
  );
}
/** Stops the worker with SIGKILL (or, when it killed itself, waits for its end) and removes its data folder. */
async function kill(): Promise<void> {
  await worker?.stop('SIGKILL');
  worker = undefined;
}
/**
 * Makes the next refund kill its worker: a running worker checks the marker when the tool runs, so it need not be
 * started again (one worker start less per scenario).
 */
async function armCrash(): Promise<void> {
  fs.rmSync(marker, { force: true });
  if (!worker) await startWorker();
}
/** Waits until the refund tool killed its own worker (its marker is written just before) and starts a new one. */
async function restartAfterToolCrash(): Promise<void> {
  await expect.poll(() => fs.existsSync(marker), { timeout: 30_000 }).toBe(true);
  await expect.poll(() => worker!.child.exitCode !== null || worker!.child.signalCode !== null).toBe(true);
  await kill();
  await startWorker();
}

type Item = ResponsesItem;
type Body = { input: Item[] } & Record<string, unknown>;

/** The Responses requests of one conversation (a user message of it carries `text`), in order. */
const requestsFor = (text: string): Body[] =>
  h.model.requests
    .filter((r) => r.path === '/v1/responses')
    .map((r) => r.body as Body)
    .filter((b) => b.input.some((i) => i.role === 'user' && typeof i.content === 'string' && i.content.includes(text)));

/** The input items from the first user message on (the system prompt before it is not under test). */
const conversationItems = (body: Body): Item[] => body.input.slice(body.input.findIndex((i) => i.role === 'user'));
const shape = (items: Item[]) => items.map((i) => [i.type ?? 'message', i.call_id]);

/** The reasoning entries `model_responses.reasoning` keeps for the conversation's answers, in transcript order. */
async function storedReasoning(id: string): Promise<Item[]> {
  const { rows } = await h.pool.query<{ reasoning: { item: Item }[] }>(
    `SELECT r.reasoning FROM durable_agent.model_responses r
       JOIN durable_agent.conversation_messages m ON m.ref_key = r.response_key
      WHERE m.conversation_id = $1 AND r.reasoning IS NOT NULL ORDER BY m.seq`,
    [id],
  );
  return rows.flatMap((r) => r.reasoning.map((e) => e.item));
}

/**
 * A reasoning item sent back as the scripted server issued it: its `encrypted_content` opens only when it is the
 * server's token byte for byte, and the token names the item's own (random) id, the scripted reasoning and the item
 * that followed it in the server's output.
 */
function expectIssued(
  item: Item,
  text: string,
  next: { type: 'message' } | { type: 'function_call'; call_id: string },
) {
  expect(item.type).toBe('reasoning');
  expect(openReasoning(item.encrypted_content)).toEqual({ id: item.id, text, next });
}

/** Every request was valid, went to /v1/responses, and kept nothing at OpenAI. */
function expectStatelessResponsesRequests(): void {
  h.expectOnlyValidModelRequests();
  expect(h.model.requests.map((r) => r.path).filter((p) => p !== '/v1/responses')).toEqual([]);
  for (const r of h.model.requests) {
    expect(r.body).toMatchObject({ store: false, include: ['reasoning.encrypted_content'] });
    expect(r.body).not.toHaveProperty('previous_response_id');
  }
}

const refundsFor = async (id: string, callId: string) =>
  (
    await h.pool.query('SELECT amount_cents FROM refunds WHERE idempotency_key = $1', [
      (await effectKeyOf(h.pool, id, callId))!,
    ])
  ).rows;

describe('SIGKILL of a worker process on the Responses API', () => {
  it('during a tool: one refund, and the next request answers its function_call once, after its reasoning item', async () => {
    const id = h.newConversationId('responses-kill-tool');
    const text = 'RESPONSES-KILL-TOOL refund 15 on ord_2001';
    const reasoning = 'A small refund on ord_2001; no approval needed.';
    h.model.enqueue(
      {
        reasoningContent: reasoning,
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 1_500, reason: 'crash test' },
          },
        ],
      },
      { content: 'Refunded 15.00.' },
    );
    await armCrash();
    const messageId = await h.client.sendMessage(id, text, { input });
    await restartAfterToolCrash();
    expect((await h.client.waitForTurn(id, messageId, 60_000)).outcome).toBe('answered');

    expect(await refundsFor(id, 'call_refund')).toEqual([{ amount_cents: 1_500 }]);
    const key = (await effectKeyOf(h.pool, id, 'call_refund'))!;
    const ledger = await h.pool.query('SELECT result FROM durable_agent.tool_ledger WHERE idempotency_key = $1', [key]);
    expect(ledger.rows).toHaveLength(1);

    const requests = requestsFor(text);
    expect(requests).toHaveLength(2);
    const items = conversationItems(requests[1]);
    expect(shape(items)).toEqual([
      ['message', undefined],
      ['reasoning', undefined],
      ['function_call', 'call_refund'],
      ['function_call_output', 'call_refund'],
    ]);
    // The output is the result the ledger recorded before the crash, not a second refund's.
    expect(JSON.parse(items[3].output!)).toEqual(ledger.rows[0].result);
    expectIssued(items[1], reasoning, { type: 'function_call', call_id: 'call_refund' });
    expect(await storedReasoning(id)).toEqual([items[1]]);
    expectStatelessResponsesRequests();
  });

  it('with store false, the reasoning items survive a crash during a tool, a continue-as-new and a crash during the next model call', async () => {
    const id = h.newConversationId('responses-kill-can');
    const text = 'RESPONSES-KILL-CAN who is Ada, then refund 13 on ord_1002';
    const thoughts = ['Look Ada up first.', 'Ada owns ord_1002; refund it.', 'The refund is done; tell her.'];
    h.model.enqueue(
      {
        reasoningContent: thoughts[0],
        toolCalls: [{ id: 'call_find', name: 'find_customer', arguments: { query: 'Ada' } }],
      },
      {
        reasoningContent: thoughts[1],
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1002', amount_cents: 1_300, reason: 'crash and continue-as-new' },
          },
        ],
      },
      { reasoningContent: thoughts[2], content: 'Refunded 13.00 to Ada.' },
    );
    await armCrash();
    const messageId = await h.client.sendMessage(id, text, { input: { ...input, continueAsNewAfterEvents: 10 } });
    // Killed while the refund runs: the second answer's reasoning is stored and not yet sent back.
    await restartAfterToolCrash();
    expect((await h.client.waitForTurn(id, messageId, 60_000)).outcome).toBe('answered');
    await expect.poll(async () => (await h.client.state(id)).runs, { timeout: 20_000 }).toBeGreaterThan(1);

    // In the new run the next model call hangs; the worker is killed during it and a new one calls again.
    let calls = 0;
    h.model.setResponder(() => (++calls === 1 ? { kind: 'hang' } : { content: 'Ada was refunded once.' }));
    try {
      const next = await h.client.sendMessage(id, 'was she refunded?');
      await expect.poll(() => calls, { timeout: 20_000 }).toBe(1);
      await kill();
      await startWorker();
      expect((await h.client.waitForTurn(id, next, 60_000)).outcome).toBe('answered');
    } finally {
      h.model.setResponder(undefined);
    }
    expect(calls).toBe(2);
    expect(await refundsFor(id, 'call_refund')).toEqual([{ amount_cents: 1_300 }]);

    const requests = requestsFor(text);
    expect(requests).toHaveLength(5);
    const [hung, retried] = requests.slice(3).map(conversationItems);
    expect(retried).toEqual(hung);
    expect(shape(retried)).toEqual([
      ['message', undefined],
      ['reasoning', undefined],
      ['function_call', 'call_find'],
      ['function_call_output', 'call_find'],
      ['reasoning', undefined],
      ['function_call', 'call_refund'],
      ['function_call_output', 'call_refund'],
      ['reasoning', undefined],
      ['message', undefined],
      ['message', undefined],
    ]);
    expect(retried[8]).toMatchObject({
      role: 'assistant',
      content: [{ type: 'output_text', text: 'Refunded 13.00 to Ada.' }],
    });
    const sentBack = [retried[1], retried[4], retried[7]];
    expectIssued(sentBack[0], thoughts[0], { type: 'function_call', call_id: 'call_find' });
    expectIssued(sentBack[1], thoughts[1], { type: 'function_call', call_id: 'call_refund' });
    expectIssued(sentBack[2], thoughts[2], { type: 'message' });
    expect(await storedReasoning(id)).toEqual(sentBack);
    // The same items the first run sent back before the crash, and after it before the continue-as-new.
    const reasoningOf = (body: Body) => conversationItems(body).filter((i) => i.type === 'reasoning');
    expect(reasoningOf(requests[1])).toEqual(sentBack.slice(0, 1));
    expect(reasoningOf(requests[2])).toEqual(sentBack.slice(0, 2));
    expectStatelessResponsesRequests();
  });
});
