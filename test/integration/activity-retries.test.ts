import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../src/activities';
import type { ModelCallResult, ToolCallResult } from '../../src/contract/activities';
import { createOpenAIClient } from '../../src/activities/openai-client';
import { ToolRegistry } from '../../src/tools/registry';
import { tool } from '../../src/tools/tool';
import { startHarness, type Harness } from '../support/harness';
import { anEffectKeyOf } from '../support/effect-key-match';

// What a retried attempt sees when an earlier attempt did its work but crashed
// before reporting it: activities run in the SDK's activity test environment
// with the same activity identity, a real pool and the real SDK over HTTP.
let h: Harness;
let quoteCalls = 0;
const quote = tool({
  name: 'get_quote',
  description: 'A price quote that changes every time it is asked.',
  parameters: z.object({}),
  execute: () => ({ quote: ++quoteCalls }),
});

beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(async () => {
  await h?.stop();
});

const activities = () =>
  createActivities({
    pool: h.pool,
    model: { name: 'scripted-model', client: createOpenAIClient({ apiKey: 'test-key', baseUrl: h.model.url }) },
    tools: new ToolRegistry([quote]),
  });

describe('retried attempts', () => {
  it('a model answer stored by an attempt that crashed before reporting it is reused, not paid for twice', async () => {
    const conversationId = h.newConversationId('retry');
    await activities().appendMessages({
      conversationId,
      messages: [{ seq: 0, message: { role: 'user', content: 'Quote please' } }],
    });
    const identity = { activityId: `model-${conversationId}`, attempt: 1 };
    const input = {
      conversationId,
      throughSeq: 0,
      omitSeqs: [],
      synthesized: [],
      settings: {},
      toolChoice: 'auto' as const,
    };
    h.model.enqueue({ toolCalls: [{ id: 'call_q', name: 'get_quote', arguments: {} }] });
    const first: ModelCallResult = await new MockActivityEnvironment(identity).run(activities().callModel, input);
    const requests = h.model.requests.length;

    const retry: ModelCallResult = await new MockActivityEnvironment({ ...identity, attempt: 2 }).run(
      activities().callModel,
      input,
    );
    expect(h.model.requests.length).toBe(requests);
    expect(retry.message).toEqual(first.message);
    expect(retry.responseKey).toBe(first.responseKey);
    expect(retry.calls).toEqual(first.calls);
  });

  it('every attempt of a tool call reports the first stored result, so history and transcript agree', async () => {
    quoteCalls = 0;
    const input = {
      conversationId: 'c',
      toolCallId: 'call_q',
      name: 'get_quote',
      arguments: '{}',
      idempotencyKey: 'retry-quote/call_q',
    };
    const first: ToolCallResult = await new MockActivityEnvironment({ attempt: 1 }).run(activities().runTool, input);
    const second: ToolCallResult = await new MockActivityEnvironment({ attempt: 2 }).run(activities().runTool, input);
    expect(quoteCalls).toBe(2);
    expect(first.content).toBe('{"quote":1}');
    expect(second.content).toBe('{"quote":1}');
    // Stored under the call's effect key (its call key and arguments), the same for both attempts.
    expect(first.storedResultKey).toEqual(anEffectKeyOf('retry-quote/call_q'));
    expect(second.storedResultKey).toBe(first.storedResultKey);
    await activities().appendMessages({
      conversationId: 'c',
      messages: [{ seq: 0, ref: { kind: 'tool_result', key: first.storedResultKey!, toolCallId: 'call_q' } }],
    });
    const stored = await h.pool.query(
      "SELECT message FROM durable_agent.conversation_messages WHERE conversation_id = 'c' AND seq = 0",
    );
    expect(stored.rows[0].message).toEqual({ role: 'tool', tool_call_id: 'call_q', content: '{"quote":1}' });
  });
});
