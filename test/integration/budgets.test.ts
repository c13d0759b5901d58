import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roundUsd } from '../../src/core/pricing';
import { InvalidConversationInputError } from '../../src/common/errors';
import { startHarness, type Harness } from '../support/harness';

// Tokens and cost per turn and per conversation, from the usage the provider
// reports and the worker's price table; a budget ends a turn before a model
// call that would pass it, with an outcome of its own and every call answered.

const PRICES = { 'scripted-model': { input: 2, output: 8 } };

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ modelPrices: PRICES });
});
afterAll(async () => {
  await h?.stop();
});

const findAda = (id: string) => ({ toolCalls: [{ id, name: 'find_customer', arguments: { query: 'Ada' } }] });
type Wire = { role: string };
/** What each model call of a conversation with a budget spent, in tokens, oldest first (the budget's ledger). */
const spentByCall = async (id: string): Promise<number[]> =>
  (
    await h.pool.query<{ tokens: string }>(
      'SELECT tokens FROM durable_agent.budget_spend WHERE conversation_id = $1 AND spent ORDER BY created_at',
      [id],
    )
  ).rows.map((r) => Number(r.tokens));

describe('token and cost accounting', () => {
  it("the state shows each turn's tokens and cost and the conversation's totals", async () => {
    const id = h.newConversationId('costs');
    h.model.enqueue(findAda('call_c1'), { content: 'Ada is cus_ada.' }, { content: 'Still cus_ada.' });
    await h.client.ask(id, 'Who is Ada?');
    await h.client.ask(id, 'And now?');
    const state = await h.client.state(id);
    const [first, second] = state.recentTurns;
    for (const turn of [first, second]) {
      expect(turn.usage!.promptTokens).toBeGreaterThan(0);
      expect(turn.usage!.completionTokens).toBeGreaterThan(0);
      expect(turn.usage!.costUsd).toBe(
        roundUsd((turn.usage!.promptTokens * 2 + turn.usage!.completionTokens * 8) / 1e6),
      );
    }
    expect(state.usage).toEqual({
      promptTokens: first.usage!.promptTokens + second.usage!.promptTokens,
      completionTokens: first.usage!.completionTokens + second.usage!.completionTokens,
      costUsd: roundUsd(first.usage!.costUsd! + second.usage!.costUsd!),
      unpricedCalls: 0,
    });
  });

  it("a turn budget: a call is made only while the turn's spend and its prompt fit; the one that would pass it is not made, and the next turn has a budget of its own", async () => {
    // The same two calls under a budget too large to reach: what each spent, from the ledger.
    const free = h.newConversationId('turn-budget-free');
    h.model.enqueue(findAda('call_b0'), { content: 'Ada is cus_ada.' });
    await h.client.ask(free, 'Who is Ada, on a budget?', { input: { budget: { turnTokens: 1e6 } } });
    const [s1, s2] = await spentByCall(free);
    // Room for the first call and the next turn's first, not for the turn's second (about s2 less its reply).
    const budget = s1 + Math.floor((s2 - 8) / 2);

    const id = h.newConversationId('turn-budget');
    h.model.enqueue(findAda('call_b1'));
    const first = await h.client.ask(id, 'Who is Ada, on a budget!', { input: { budget: { turnTokens: budget } } });
    expect(first.turn).toMatchObject({ outcome: 'budget_exceeded', steps: 1 });
    expect(first.turn.error).toMatch(
      new RegExp(
        `^The turn \\(with the agents it called as tools, calls still running at their estimate\\) used ${s1} tokens and this call needs about \\d+; the budget is ${budget} \\(budget\\.turnTokens\\)\\. This model call was not made\\. The next message starts a turn with a budget of its own\\.$`,
      ),
    );
    expect(h.requestsFor('Who is Ada, on a budget!')).toHaveLength(1);
    // Every call answered: the tool ran and its result is stored.
    const roles = (await h.client.transcript(id)).map((m) => m.message.role);
    expect(roles).toEqual(['user', 'assistant', 'tool']);

    // The next turn has a budget of its own: its first call is made, on a transcript the provider accepts.
    h.model.enqueue({ content: 'Ada is cus_ada.' });
    const second = await h.client.ask(id, 'Just the id, please.');
    expect(second.turn.outcome).toBe('answered');
    expect((h.requestsFor('Just the id, please.')[0].messages as Wire[]).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'user',
    ]);
    h.expectOnlyValidModelRequests();
  });

  it('a conversation budget that a call would pass: the call is not made, in this turn or the next', async () => {
    const id = h.newConversationId('conversation-budget');
    const first = await h.client.ask(id, 'Who is Ada, cheaply?', {
      input: { budget: { conversationCostUsd: 0.000001 } },
    });
    expect(first.turn).toMatchObject({ outcome: 'budget_exceeded', steps: 0 });
    expect(first.turn.error).toMatch(
      /^The conversation \(with the agents it called as tools, calls still running at their estimate\) cost \$0 and this call about \$[\d.]+; the budget is \$0\.000001 \(budget\.conversationCostUsd\)\. This model call was not made\. /,
    );
    expect(first.turn.error).toContain('go on in a new conversation with a higher one');
    const second = await h.client.ask(id, 'Anything else?');
    expect(second.turn).toMatchObject({ outcome: 'budget_exceeded', steps: 0 });
    expect(h.requestsFor('Who is Ada, cheaply?')).toHaveLength(0);
    expect(h.requestsFor('Anything else?')).toHaveLength(0);
    const roles = (await h.client.transcript(id)).map((m) => m.message.role);
    expect(roles).toEqual(['user', 'user']);
    expect((await h.client.state(id)).usage).toEqual({
      promptTokens: 0,
      completionTokens: 0,
      costUsd: 0,
      unpricedCalls: 0,
    });
  });

  it('a budget in dollars for a model without a price: no call is made, saying the price is missing', async () => {
    const id = h.newConversationId('unpriced');
    const turn = await h.client.ask(id, 'Who is Ada, unpriced?', {
      input: { model: { model: 'unpriced-model' }, budget: { turnCostUsd: 1 } },
    });
    expect(turn.turn).toMatchObject({ outcome: 'budget_exceeded', steps: 0 });
    expect(turn.turn.error).toContain(
      "has a model call whose cost is unknown: a limit in dollars needs a price for every model (AGENT_MODEL_PRICES, or the plugin's model.prices).",
    );
    expect(h.requestsFor('Who is Ada, unpriced?')).toHaveLength(0);
  });

  it('refuses a budget that is not one, naming the field', async () => {
    const id = h.newConversationId('bad-budget');
    await expect(
      h.client.sendMessage(id, 'hello', { input: { budget: { turnTokens: -5, weeklyUsd: 3 } as never } }),
    ).rejects.toThrow(InvalidConversationInputError);
    await expect(h.client.sendMessage(id, 'hello', { input: { budget: { turnTokens: -5 } } })).rejects.toThrow(
      /budget\.turnTokens must be a positive integer, got -5/,
    );
  });
});
