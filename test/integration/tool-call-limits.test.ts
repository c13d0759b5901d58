import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidConversationInputError } from '../../src/common/errors';
import { loadConfig } from '../../src/app/config';
import { CONVERSATION_WORKFLOW_TYPE, userMessageSignal } from '../../src/contract';
import { startHarness, type Harness } from '../support/harness';

// Bounds on what a model or a caller may ask for: tool calls per response
// (worker configuration) and maxSteps (a fixed upper limit).

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ maxParallelToolCalls: 2 });
});
afterAll(async () => {
  await h?.stop();
});

describe('limits on what a model and a caller may ask for', () => {
  it('calls beyond the per-response limit are answered with an error the model reads, never dropped, and the turn answers', async () => {
    const id = h.newConversationId('too-many');
    h.model.enqueue(
      {
        toolCalls: ['Ada', 'Alan', 'Grace', 'Nobody'].map((query, i) => ({
          id: `call_${i}`,
          name: 'find_customer',
          arguments: { query },
        })),
      },
      { content: 'Found the first two; asking again for the rest.' },
    );
    const { turn } = await h.client.ask(id, 'Find four customers');
    expect(turn.outcome).toBe('answered');
    const tools = (await h.client.transcript(id)).flatMap(({ message: m }) => (m.role === 'tool' ? [m] : []));
    expect(tools.map((t) => t.tool_call_id)).toEqual(['call_0', 'call_1', 'call_2', 'call_3']);
    expect(JSON.parse(tools[0].content).customers[0].name).toBe('Ada Lovelace');
    expect(JSON.parse(tools[1].content).customers[0].name).toBe('Alan Turing');
    for (const t of tools.slice(2)) {
      expect(JSON.parse(t.content)).toMatchObject({
        kind: 'tool_failed',
        reason: 'too_many_calls',
        error: expect.stringContaining(
          'asked for 4 tool calls; this worker runs at most 2 per response (AGENT_MAX_PARALLEL_TOOL_CALLS)',
        ),
      });
    }
    h.expectOnlyValidModelRequests();
  });

  it('the client refuses maxSteps above the limit, naming the limit, before anything starts', async () => {
    const id = h.newConversationId('steps');
    const error = await h.client.sendMessage(id, 'Hello', { input: { maxSteps: 10_000 } }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(InvalidConversationInputError);
    expect((error as Error).message).toContain('maxSteps must be at most 100, got 10000');
    expect(
      await h.temporal.workflow
        .getHandle(id)
        .describe()
        .catch(() => 'not started'),
    ).toBe('not started');
  });

  it('a conversation started around the client with maxSteps above the limit fails at once with the same message', async () => {
    const id = h.newConversationId('steps-raw');
    await h.temporal.workflow.signalWithStart(CONVERSATION_WORKFLOW_TYPE, {
      workflowId: id,
      taskQueue: h.taskQueue,
      args: [{ maxSteps: 10_000 }],
      signal: userMessageSignal,
      signalArgs: [{ text: 'Hello' }],
    });
    const failure = await h.temporal.workflow
      .getHandle(id)
      .result()
      .catch((err: Error & { cause?: Error }) => err.cause?.message);
    expect(failure).toContain('Invalid conversation input: maxSteps must be at most 100, got 10000');
    expect(h.model.requests.filter((r) => JSON.stringify(r.body).includes(id))).toEqual([]);
  });

  it('the worker refuses a per-response limit outside 1..128 with the variable name and the range', () => {
    expect(loadConfig({}).maxParallelToolCalls).toBe(16);
    expect(loadConfig({ AGENT_MAX_PARALLEL_TOOL_CALLS: '4' }).maxParallelToolCalls).toBe(4);
    expect(() => loadConfig({ AGENT_MAX_PARALLEL_TOOL_CALLS: '10000' })).toThrow(
      /AGENT_MAX_PARALLEL_TOOL_CALLS: must be at most 128/,
    );
    expect(() => loadConfig({ AGENT_MAX_PARALLEL_TOOL_CALLS: '0' })).toThrow(
      /AGENT_MAX_PARALLEL_TOOL_CALLS: must be at least 1/,
    );
    expect(() => loadConfig({ AGENT_MAX_PARALLEL_TOOL_CALLS: 'many' })).toThrow(
      /AGENT_MAX_PARALLEL_TOOL_CALLS: must be a whole number from 1 to 128/,
    );
  });
});
