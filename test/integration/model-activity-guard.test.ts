import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../src/activities';
import type { ModelCallResult } from '../../src/contract/activities';
import { createOpenAIClient } from '../../src/activities/openai-client';
import { ToolRegistry } from '../../src/tools/registry';
import { backofficeTools } from '../../src/demo/tools';
import type { ChatMessage } from '../../src/contract/messages';
import { repairedContent } from '../../src/core/outcomes';
import { startHarness, type Harness } from '../support/harness';

// The model activity on its own (in the SDK's activity test environment, with a
// real pool and the real SDK over HTTP): the last line of defence of the pairing rules.
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(async () => {
  await h?.stop();
});

const broken: ChatMessage[] = [
  { role: 'user', content: 'Look up two customers' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'call_a', type: 'function', function: { name: 'find_customer', arguments: '{"query":"Ada"}' } },
      { id: 'call_b', type: 'function', function: { name: 'find_customer', arguments: '{"query":"Alan"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'call_a', content: '{"customers":[]}' },
  { role: 'tool', tool_call_id: 'call_zzz', content: 'orphan' },
];

describe('the model activity', () => {
  const activities = () =>
    createActivities({
      pool: h.pool,
      model: { name: 'scripted-model', client: createOpenAIClient({ apiKey: 'test-key', baseUrl: h.model.url }) },
      tools: new ToolRegistry(backofficeTools()),
    });

  it('refuses to send a transcript that breaks the pairing rules, and the provider never sees it', async () => {
    const conversationId = h.newConversationId('guard');
    await activities().appendMessages({ conversationId, messages: broken.map((message, seq) => ({ seq, message })) });
    const before = h.model.requests.length;
    const failure = await new MockActivityEnvironment({ activityId: `guard-1-${Date.now()}` })
      .run(activities().callModel, {
        conversationId,
        throughSeq: broken.length - 1,
        omitSeqs: [],
        synthesized: [],
        settings: {},
        toolChoice: 'auto' as const,
      })
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect((failure as ApplicationFailure).type).toBe('InvalidTranscript');
    expect((failure as ApplicationFailure).nonRetryable).toBe(true);
    expect((failure as ApplicationFailure).message).toContain('call_b');
    expect(h.model.requests.length).toBe(before);
  });

  it("applies the workflow's repair (orphan left out, missing result synthesized) and the provider accepts it", async () => {
    const conversationId = h.newConversationId('guard');
    await activities().appendMessages({ conversationId, messages: broken.map((message, seq) => ({ seq, message })) });
    h.model.enqueue({ content: 'Found them.' });
    const result: ModelCallResult = await new MockActivityEnvironment({ activityId: `guard-2-${Date.now()}` }).run(
      activities().callModel,
      {
        conversationId,
        throughSeq: broken.length - 1,
        omitSeqs: [3],
        synthesized: [{ afterSeq: 1, toolCallId: 'call_b', content: repairedContent() }],
        settings: {},
        toolChoice: 'auto' as const,
      },
    );
    expect(result.message).toEqual({ role: 'assistant', content: 'Found them.' });
    const sent = h.model.requests[h.model.requests.length - 1];
    expect(sent.valid).toBe(true);
    const messages = (sent.body as { messages: { role: string; tool_call_id?: string }[] }).messages;
    expect(messages.map((m) => [m.role, m.tool_call_id])).toEqual([
      ['user', undefined],
      ['assistant', undefined],
      ['tool', 'call_a'],
      ['tool', 'call_b'],
    ]);
    h.expectOnlyValidModelRequests();
  });

  it('does not read a transcript that is missing messages the workflow expects', async () => {
    const conversationId = h.newConversationId('guard');
    await activities().appendMessages({
      conversationId,
      messages: [{ seq: 0, message: { role: 'user', content: 'hi' } }],
    });
    await expect(
      new MockActivityEnvironment({ activityId: `guard-3-${Date.now()}` }).run(activities().callModel, {
        conversationId,
        throughSeq: 2,
        omitSeqs: [],
        synthesized: [],
        settings: {},
        toolChoice: 'auto' as const,
      }),
    ).rejects.toThrow(/holds 1 messages through seq 2, expected 3/);
  });
});
