import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordedRequest, ScriptedReply } from '../../src/testing';
import type { ConversationState } from '../../src/contract';
import { startApiServer } from '../../src/api/server';
import { apiCaller, TEST_TOKENS, token } from '../support/api';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

// One budget for a conversation and every agent it calls as a tool: the
// children's spend is counted in PostgreSQL by the top-level conversation,
// parallel children share what is left, and a worker killed while a child's
// model call runs neither loses nor double-counts spend. The agents are
// crash-tools.ts's: `desk` calls the refunds agent as the tool `ask_refunds`.

let h: Harness;
let worker: WorkerProcess | undefined;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  h = await startHarness({ worker: false });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS });
  await startWorker();
});
afterAll(async () => {
  await api?.stop();
  await worker?.stop('SIGKILL');
  await h?.stop();
});

async function startWorker(): Promise<void> {
  worker = await startWorkerProcess(
    h.workerEnv({ AGENT_TOOLS_MODULE: path.join(__dirname, '..', 'support', 'crash-tools.ts') }),
  );
}

/** Every call's reply is bounded, so its hold bounds its spend. Conversation ids below are of one length: each prompt
 * holds its id, so runs of one script spend alike. */
const MAX_TOKENS = 64;

type Wire = { messages: { role: string; content: unknown }[] };
const wire = (r: RecordedRequest) => r.body as Wire;
const isDesk = (r: RecordedRequest) => String(wire(r).messages[0]?.content).includes('You delegate refunds');

/**
 * The model: the desk asks the refunds agent three tasks at once, then one more, then answers; each refunds
 * conversation answers its task. `hangFirstChild` makes the first refunds call hang (the worker is killed meanwhile).
 */
function script(marker: string, options: { hangFirstChild?: boolean } = {}) {
  let childCalls = 0;
  const requests: RecordedRequest[] = [];
  h.model.setResponder((r): ScriptedReply => {
    if (!JSON.stringify(r.body).includes(marker)) return { content: 'unexpected' };
    requests.push(r);
    if (!isDesk(r)) {
      childCalls++;
      if (options.hangFirstChild && childCalls === 1) return { kind: 'hang' };
      return { content: `Checked: order ord_1001 of ${marker} may be refunded.` };
    }
    const results = wire(r).messages.filter((m) => m.role === 'tool').length;
    const ask = (n: number) => ({
      toolCalls: Array.from({ length: n }, (_, i) => ({
        id: `call_${results}_${i}`,
        name: 'ask_refunds',
        arguments: { input: `${marker}: check order ord_1001, task ${results + i}` },
      })),
    });
    if (results === 0) return ask(3);
    if (results === 3) return ask(1);
    return { content: `All four checks of ${marker} are done.` };
  });
  return { requests, childCalls: () => childCalls };
}

const tokens = (u: { promptTokens: number; completionTokens: number }) => u.promptTokens + u.completionTokens;
const ledger = async (root: string) =>
  (
    await h.pool.query<{
      response_key: string;
      conversation_id: string;
      agent: string;
      tokens: string;
      spent: boolean;
    }>(
      'SELECT response_key, conversation_id, agent, tokens, spent FROM durable_agent.budget_spend WHERE root_conversation_id = $1',
      [root],
    )
  ).rows.map((r) => ({ ...r, tokens: Number(r.tokens) }));

/**
 * The tree's calls under a budget too large to reach: the desk's first call and the mean refunds call, from the
 * ledger, and the whole tree's spend.
 */
async function calibrate(): Promise<{ deskFirst: number; deskLast: number; child: number; all: number }> {
  const id = h.newConversationId('tree-calib');
  const { requests } = script(id);
  const { turn } = await h.client.ask(id, `${id}: check ord_1001 four times`, {
    input: { agent: 'desk', model: { maxTokens: MAX_TOKENS }, budget: { conversationTokens: 1e9 } },
  });
  expect(turn).toMatchObject({ outcome: 'answered' });
  expect(requests.filter(isDesk)).toHaveLength(3);
  expect(requests.filter((r) => !isDesk(r))).toHaveLength(4);
  const state = await h.client.state(id);
  // The caller's usage covers its children's: the desk's three calls and the four refunds calls.
  expect(turn.usage && tokens(turn.usage)).toBe(tokens(state.usage));
  const rows = await expectWithinBudget(id, 1e9, state);
  const desk = rows.filter((r) => r.agent === 'desk');
  const children = rows.filter((r) => r.agent === 'refunds');
  expect([desk.length, children.length]).toEqual([3, 4]);
  expect(new Set(children.map((r) => r.conversation_id)).size).toBe(4);
  return {
    deskFirst: Math.min(...desk.map((r) => r.tokens)),
    deskLast: Math.max(...desk.map((r) => r.tokens)),
    child: children.reduce((sum, r) => sum + r.tokens, 0) / 4,
    all: tokens(state.usage),
  };
}

/** The invariants of a tree run under `budget` tokens. */
async function expectWithinBudget(id: string, budget: number, state: ConversationState) {
  const rows = await ledger(id);
  // Every model call of the tree is in the ledger once, as spent, and the caller's usage is their sum.
  expect(rows.every((r) => r.spent)).toBe(true);
  expect(new Set(rows.map((r) => r.response_key)).size).toBe(rows.length);
  const total = rows.reduce((sum, r) => sum + r.tokens, 0);
  expect(tokens(state.usage)).toBe(total);
  expect(tokens(state.usageByAgent!.desk) + tokens(state.usageByAgent!.refunds)).toBe(total);
  // Each call held its prompt and max_tokens before it was made: the tree never passed the budget.
  expect(total).toBeLessThanOrEqual(budget);
  return rows;
}

describe('a budget covers the agents a conversation calls', () => {
  it('parallel calls of an agent tool share what is left: a child whose call would pass the budget stops as budget_exceeded, and so does the caller', async () => {
    const free = await calibrate();
    // Room for the desk's first call and one refunds call (prompt and max_tokens held), not for two.
    const budget = Math.round(free.deskFirst + 1.5 * free.child + MAX_TOKENS);
    const id = h.newConversationId('tree-budgt');
    const { requests } = script(id);
    const { turn } = await h.client.ask(id, `${id}: check ord_1001 four times`, {
      input: { agent: 'desk', model: { maxTokens: MAX_TOKENS }, budget: { conversationTokens: budget } },
    });
    // Children in parallel held their share: some were refused before calling the model, and the desk stopped.
    expect(turn.outcome).toBe('budget_exceeded');
    const made = requests.filter((r) => !isDesk(r)).length;
    expect(made).toBe(1);
    const results = (await h.client.transcript(id))
      .map((m) => m.message)
      .filter((m) => m.role === 'tool')
      .map((m) => String(m.content));
    const refused = results.filter((r) => r.includes('budget_exceeded'));
    expect(refused).toHaveLength(2);
    expect(refused[0]).toMatch(
      /The conversation \(with the agents it called as tools, calls still running at their estimate\) used \d+ tokens and this call needs about \d+; the budget is \d+ \(budget\.conversationTokens\)\. This model call was not made\./,
    );
    const state = await h.client.state(id);
    const rows = await expectWithinBudget(id, budget, state);
    expect(rows.filter((r) => r.agent === 'refunds')).toHaveLength(made);
    expect(tokens(state.usage)).toBeLessThan(free.all);
    // The API's reply and the CLI's show carry the spend by agent.
    const reply = await apiCaller(() => api.url)('GET', `/v1/conversations/${id}`, token('c'));
    expect(reply.status).toBe(200);
    expect(reply.json.usage).toEqual(state.usage);
    expect(reply.json.usageByAgent).toEqual(state.usageByAgent);
    const env = { ...h.temporalEnv, DATABASE_URL: h.databaseUrl, TEMPORAL_TASK_QUEUE: h.taskQueue };
    const shown = (await runCli(['show', id], env)).stdout;
    expect(shown).toContain(`spent: ${tokens(state.usage)} tokens`);
    expect(shown).toContain(`  desk: ${tokens(state.usageByAgent!.desk)} tokens`);
    expect(shown).toContain(`  refunds: ${tokens(state.usageByAgent!.refunds)} tokens`);
    h.expectOnlyValidModelRequests();
  });

  it('a budget with room for the parallel calls and the one after them: all run, and the call that would pass it is not made', async () => {
    const free = await calibrate();
    // Everything but the desk's last call (its answer), with room for one reply's max_tokens and for ids that count
    // some tokens more than the calibration's (each prompt holds its id several times); far less than that last call.
    const budget = free.all - free.deskLast + MAX_TOKENS + 150;
    const id = h.newConversationId('tree-seqnc');
    const { requests } = script(id);
    const { turn } = await h.client.ask(id, `${id}: check ord_1001 four times`, {
      input: { agent: 'desk', model: { maxTokens: MAX_TOKENS }, budget: { conversationTokens: budget } },
    });
    expect(turn.outcome).toBe('budget_exceeded');
    expect(turn.error).toMatch(/this call needs about \d+; the budget is \d+ \(budget\.conversationTokens\)/);
    expect(requests.filter(isDesk)).toHaveLength(2);
    expect(requests.filter((r) => !isDesk(r))).toHaveLength(4);
    const rows = await expectWithinBudget(id, budget, await h.client.state(id));
    expect(new Set(rows.filter((r) => r.agent === 'refunds').map((r) => r.conversation_id)).size).toBe(4);
    h.expectOnlyValidModelRequests();
  });

  it('a worker killed while a child calls the model: the tree counts the retried call once', async () => {
    const free = await calibrate();
    // Room for the desk's first call and one refunds call (prompt and max_tokens held), not for two.
    const budget = Math.round(free.deskFirst + 1.5 * free.child + MAX_TOKENS);
    const id = h.newConversationId('tree-kills');
    const run = script(id, { hangFirstChild: true });
    const messageId = await h.client.sendMessage(id, `${id}: check ord_1001 four times`, {
      input: {
        agent: 'desk',
        model: { maxTokens: MAX_TOKENS },
        budget: { conversationTokens: budget },
        timeouts: { heartbeatMs: 3_000 },
      },
    });
    await expect.poll(() => run.childCalls(), { timeout: 30_000 }).toBeGreaterThanOrEqual(1);
    await worker?.stop('SIGKILL');
    await startWorker();
    const turn = await h.client.waitForTurn(id, messageId, 90_000);
    expect(turn.outcome).toBe('budget_exceeded');
    const state = await h.client.state(id);
    const rows = await expectWithinBudget(id, budget, state);
    // The hung call was made again under the same response key: the model saw more calls than the ledger counts.
    const childRows = rows.filter((r) => r.agent === 'refunds');
    expect(run.childCalls()).toBeGreaterThan(childRows.length);
    h.expectOnlyValidModelRequests();
  });
});
