import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roundUsd } from '../../src/core/pricing';
import { InvalidConversationInputError } from '../../src/common/errors';
import { startHarness, type Harness } from '../support/harness';

// Tokens and cost per turn and per conversation, from the usage the provider
// reports and the worker's price table; a budget ends a turn before its next
// model call, with an outcome of its own and every call answered.

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

  it('a turn budget that one model call spends ends the turn before the second call, as budget_exceeded, and the next turn goes on', async () => {
    const id = h.newConversationId('turn-budget');
    h.model.enqueue(findAda('call_b1'));
    const first = await h.client.ask(id, 'Who is Ada, on a budget?', { input: { budget: { turnTokens: 1 } } });
    expect(first.turn.outcome).toBe('budget_exceeded');
    expect(first.turn.error).toMatch(
      /^The turn used \d+ tokens, its budget is 1 \(budget\.turnTokens\)\. No further model call was made in this turn; the next message starts a turn with a budget of its own\.$/,
    );
    expect(first.turn.steps).toBe(1);
    expect(h.requestsFor('Who is Ada, on a budget?')).toHaveLength(1);
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

  it('a spent conversation budget ends the next turn at once, without a model call', async () => {
    const id = h.newConversationId('conversation-budget');
    h.model.enqueue(findAda('call_b2'));
    const first = await h.client.ask(id, 'Who is Ada, cheaply?', {
      input: { budget: { conversationCostUsd: 0.000001 } },
    });
    expect(first.turn.outcome).toBe('budget_exceeded');
    expect(first.turn.error).toMatch(
      /^The conversation cost \$[\d.]+, its budget is \$0\.000001 \(budget\.conversationCostUsd\)\. /,
    );
    expect(first.turn.error).toContain('go on in a new conversation with a higher one');
    const second = await h.client.ask(id, 'Anything else?');
    expect(second.turn).toMatchObject({ outcome: 'budget_exceeded', steps: 0 });
    expect(h.requestsFor('Anything else?')).toHaveLength(0);
    const roles = (await h.client.transcript(id)).map((m) => m.message.role);
    expect(roles).toEqual(['user', 'assistant', 'tool', 'user']);
  });

  it('a budget in dollars for a model without a price ends the turn saying the price is missing', async () => {
    const id = h.newConversationId('unpriced');
    h.model.enqueue(findAda('call_b3'));
    const turn = await h.client.ask(id, 'Who is Ada, unpriced?', {
      input: { model: { model: 'unpriced-model' }, budget: { turnCostUsd: 1 } },
    });
    expect(turn.turn.outcome).toBe('budget_exceeded');
    expect(turn.turn.error).toContain(
      "The turn's cost is unknown: a limit in dollars needs a price for the model (AGENT_MODEL_PRICES, or the plugin's model.prices).",
    );
    expect(turn.turn.usage?.costUsd).toBeUndefined();
    expect((await h.client.state(id)).usage.unpricedCalls).toBe(1);
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
