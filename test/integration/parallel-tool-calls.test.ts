import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';
import { conversationActivityType } from '../../src/contract/activities';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

describe('a conversation on the real Temporal dev server', () => {
  it('runs two parallel tool calls, appends both results in call order, and ends with a final answer', async () => {
    const id = h.newConversationId();
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_find_ada', name: 'find_customer', arguments: { query: 'Ada' } },
          { id: 'call_orders_ada', name: 'list_orders', arguments: { customer_id: 'cus_ada' } },
        ],
      },
      { content: 'Ada Lovelace has two orders.' },
    );

    const { turn, answer } = await h.client.ask(id, 'Who is Ada and what did she order?', {
      input: { systemPrompt: 'You are a back-office assistant.' },
    });

    expect(turn.outcome).toBe('answered');
    expect(answer).toBe('Ada Lovelace has two orders.');

    const transcript = (await h.client.transcript(id)).map((m) => m.message);
    expect(transcript.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'assistant']);
    expect(transcript[3]).toMatchObject({ role: 'tool', tool_call_id: 'call_find_ada' });
    expect(JSON.parse((transcript[3] as { content: string }).content).customers[0].id).toBe('cus_ada');
    expect(transcript[4]).toMatchObject({ role: 'tool', tool_call_id: 'call_orders_ada' });
    expect(JSON.parse((transcript[4] as { content: string }).content).orders.map((o: { id: string }) => o.id)).toEqual([
      'ord_1001',
      'ord_1002',
    ]);

    const requests = h.requestsFor('Who is Ada');
    expect(requests).toHaveLength(2);
    const second = requests[1].messages as { role: string; tool_call_id?: string }[];
    expect(second.slice(3).map((m) => [m.role, m.tool_call_id])).toEqual([
      ['tool', 'call_find_ada'],
      ['tool', 'call_orders_ada'],
    ]);
    h.expectOnlyValidModelRequests();

    const state = await h.client.state(id);
    expect(state).toMatchObject({ status: 'idle', steps: 2, transcriptRepairs: 0 });
    expect(state.messages.map((m) => m.seq)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(state.messages[2].toolCalls?.map((c) => c.name)).toEqual(['find_customer', 'list_orders']);
  });

  it('schedules both tool activities before either completes (they run in parallel)', async () => {
    const id = h.newConversationId();
    h.model.enqueue(
      {
        toolCalls: [
          { name: 'find_customer', arguments: { query: 'Grace' } },
          { name: 'list_orders', arguments: { customer_id: 'cus_grace' } },
        ],
      },
      { content: 'Done.' },
    );
    await h.client.ask(id, 'Tell me about Grace');

    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    const toolEvents = (history.events ?? []).flatMap((e) => {
      const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
      if (name === conversationActivityType('runTool')) return ['scheduled'];
      if (e.activityTaskCompletedEventAttributes) return ['completed'];
      return [];
    });
    const firstCompleted = toolEvents.indexOf('completed', toolEvents.indexOf('scheduled'));
    expect(toolEvents.filter((e) => e === 'scheduled')).toHaveLength(2);
    expect(toolEvents.slice(toolEvents.indexOf('scheduled'), firstCompleted)).toEqual(['scheduled', 'scheduled']);
    h.expectOnlyValidModelRequests();
  });
});
