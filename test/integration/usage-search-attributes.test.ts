import type { WorkflowExecutionInfo } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationActivityType } from '../../src/contract/activities';
import { roundUsd } from '../../src/core/pricing';
import {
  AgentCostUsdAttribute,
  AgentTokensAttribute,
  type ConversationState,
  type TurnRecord,
} from '../../src/contract';
import { startHarness, type Harness } from '../support/harness';

// The conversation's tokens and cost as search attributes (AgentTokens, AgentCostUsd), read
// back through Temporal's visibility on the real dev server: the figures after one priced
// turn and after two, across continue-as-new, published only with the upserts the workflow
// makes anyway.

const PRICES = { 'scripted-model': { input: 2, output: 8 } };

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ modelPrices: PRICES });
});
afterAll(async () => {
  await h?.stop();
});

const findAda = (id: string) => ({ toolCalls: [{ id, name: 'find_customer', arguments: { query: 'Ada' } }] });

/** What the state says the conversation spent, as the attributes should show it. */
function figuresOf(state: ConversationState): { tokens: number; costUsd: number } {
  return { tokens: state.usage.promptTokens + state.usage.completionTokens, costUsd: state.usage.costUsd };
}

/** The tokens and cost of finished turns, added up as the workflow adds them. */
function figuresOfTurns(turns: readonly TurnRecord[]): { tokens: number; costUsd: number } {
  let tokens = 0;
  let costUsd = 0;
  for (const turn of turns) {
    tokens += turn.usage!.promptTokens + turn.usage!.completionTokens;
    costUsd = roundUsd(costUsd + turn.usage!.costUsd!);
  }
  return { tokens, costUsd };
}

/** The executions a visibility query finds. */
async function listed(h: Harness, query: string): Promise<WorkflowExecutionInfo[]> {
  const found: WorkflowExecutionInfo[] = [];
  for await (const execution of h.temporal.workflow.list({ query })) found.push(execution);
  return found;
}

/** The figures visibility holds for the conversation's running execution, once the query finds it. */
async function visibleFigures(h: Harness, id: string, query: string): Promise<{ tokens?: number; costUsd?: number }> {
  let found: WorkflowExecutionInfo[] = [];
  await expect
    .poll(
      async () => {
        found = await listed(h, `WorkflowId = '${id}' AND ExecutionStatus = 'Running' AND ${query}`);
        return found.length;
      },
      { timeout: 20_000 },
    )
    .toBe(1);
  const attributes = found[0].typedSearchAttributes;
  return { tokens: attributes.get(AgentTokensAttribute), costUsd: attributes.get(AgentCostUsdAttribute) };
}

/** The tokens and cost each upsert of the history carried, in order (upserts without them are left out). */
function upsertedFigures(history: temporal.api.history.v1.IHistory): { tokens: number; costUsd: number }[] {
  const value = (payload: temporal.api.common.v1.IPayload | undefined) =>
    JSON.parse(Buffer.from(payload!.data!).toString()) as number;
  return (history.events ?? []).flatMap((event) => {
    const fields = event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {};
    if (!(AgentTokensAttribute.name in fields)) return [];
    return [{ tokens: value(fields[AgentTokensAttribute.name]), costUsd: value(fields[AgentCostUsdAttribute.name]) }];
  });
}

/** How many events of the history pass `test`. */
function countEvents(
  history: temporal.api.history.v1.IHistory,
  test: (event: temporal.api.history.v1.IHistoryEvent) => boolean,
): number {
  return (history.events ?? []).filter(test).length;
}

describe('tokens and cost as search attributes', () => {
  it('visibility finds a priced conversation by its cost with the figures of its turn, and after a second turn they add up', async () => {
    const id = h.newConversationId('usage-attrs');
    h.model.enqueue(findAda('call_u1'), { content: 'Ada is cus_ada.' });
    const first = await h.client.ask(id, 'Who is Ada? (usage attributes)');
    expect(first.turn.outcome).toBe('answered');
    const afterFirst = await h.client.state(id);
    const one = figuresOf(afterFirst);
    expect(one.tokens).toBeGreaterThan(0);
    expect(one.costUsd).toBeGreaterThan(0);
    expect(one).toEqual(figuresOfTurns(afterFirst.recentTurns));
    expect(await visibleFigures(h, id, 'AgentCostUsd > 0')).toEqual(one);
    // A bound just above the cost, or at the tokens, excludes it: the values are the figures, not just "set".
    expect(await listed(h, `WorkflowId = '${id}' AND AgentCostUsd > ${one.costUsd}`)).toHaveLength(0);
    expect((await h.temporal.workflow.count(`WorkflowId = '${id}' AND AgentTokens = ${one.tokens}`)).count).toBe(1);

    h.model.enqueue({ content: 'Still cus_ada.' });
    await h.client.ask(id, 'And now? (usage attributes)');
    const afterSecond = await h.client.state(id);
    const both = figuresOf(afterSecond);
    expect(both).toEqual(figuresOfTurns(afterSecond.recentTurns));
    expect(both.tokens).toBe(
      one.tokens + afterSecond.recentTurns[1].usage!.promptTokens + afterSecond.recentTurns[1].usage!.completionTokens,
    );
    expect(await visibleFigures(h, id, `AgentTokens > ${one.tokens}`)).toEqual(both);
    expect(
      (
        await h.temporal.workflow.count(
          `WorkflowId = '${id}' AND AgentCostUsd >= ${both.costUsd} AND AgentTokens = ${both.tokens}`,
        )
      ).count,
    ).toBe(1);

    // Published only with the upserts the status changes make: at the run's start and each turn's start
    // and end, however many model calls a turn made (three here); the patch marker is recorded once.
    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    const callModel = conversationActivityType('callModel');
    expect(countEvents(history, (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === callModel)).toBe(
      3,
    );
    const upserted = (history.events ?? []).flatMap((e) => {
      const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
      return fields ? [Object.keys(fields)] : [];
    });
    expect(upserted.filter((names) => names.includes('AgentStatus'))).toHaveLength(5);
    expect(upsertedFigures(history)).toEqual([{ tokens: 0, costUsd: 0 }, one, both]);
    h.expectOnlyValidModelRequests();
  });

  it('a conversation that continued as new keeps its totals: the next run publishes what the earlier ones spent, and adds to it', async () => {
    const id = h.newConversationId('usage-can');
    const input = { continueAsNewAfterEvents: 20 };
    h.model.enqueue(findAda('call_c1'), { content: 'Ada is cus_ada.' });
    await h.client.ask(id, 'Who is Ada? (continued)', { input });
    await expect.poll(async () => (await h.client.state(id)).runs, { timeout: 20_000 }).toBe(2);
    const afterFirst = await h.client.state(id);
    const one = figuresOfTurns(afterFirst.recentTurns);
    expect(figuresOf(afterFirst)).toEqual(one);
    expect(await visibleFigures(h, id, 'AgentCostUsd > 0')).toEqual(one);
    // The new run's own history publishes the carried figures at its first upsert.
    expect(upsertedFigures(await h.temporal.workflow.getHandle(id).fetchHistory())[0]).toEqual(one);

    h.model.enqueue(findAda('call_c2'), { content: 'Still cus_ada.' });
    await h.client.ask(id, 'Again? (continued)', { input });
    await expect.poll(async () => (await h.client.state(id)).runs, { timeout: 20_000 }).toBe(3);
    const afterSecond = await h.client.state(id);
    expect(afterSecond.recentTurns).toHaveLength(2);
    const both = figuresOfTurns(afterSecond.recentTurns);
    expect(both.tokens).toBeGreaterThan(one.tokens);
    expect(figuresOf(afterSecond)).toEqual(both);
    expect(await visibleFigures(h, id, `AgentTokens = ${both.tokens}`)).toEqual(both);
    expect(upsertedFigures(await h.temporal.workflow.getHandle(id).fetchHistory())[0]).toEqual(both);
    h.expectOnlyValidModelRequests();
  });
});
