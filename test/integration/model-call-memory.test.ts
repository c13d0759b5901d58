import v8 from 'node:v8';
import vm from 'node:vm';
import OpenAI from 'openai';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../src/activities';
import type { ModelCallResult } from '../../src/contract/activities';
import { ToolRegistry } from '../../src/tools/registry';
import { startHarness, type Harness } from '../support/harness';

// What a model call leaves in the worker's memory once it is over: nothing. A
// worker makes millions of calls in its life; whatever one call leaves alive
// grows the worker's heap for good. The model activity runs in the SDK's activity
// test environment with a real pool and the real OpenAI SDK over HTTP; the
// client's fetch is wrapped only to keep a weak reference to each request's
// abort signal, which the SDK makes per request and gives to fetch.
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(async () => {
  await h?.stop();
});

/** V8's collector, reachable in a context made after the flag is set. */
function collector(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}

describe('a model call', () => {
  it('leaves nothing alive behind it once it has answered, streamed or not', async () => {
    const gc = collector();
    const requestSignals: WeakRef<AbortSignal>[] = [];
    const observingFetch: typeof fetch = (url, init) => {
      if (init?.signal) requestSignals.push(new WeakRef(init.signal));
      return fetch(url, init);
    };
    const client = new OpenAI({ apiKey: 'test-key', baseURL: h.model.url, maxRetries: 0, fetch: observingFetch });
    const activities = createActivities({
      pool: h.pool,
      model: { name: 'scripted-model', client },
      tools: new ToolRegistry([]),
    });

    const calls = 20;
    for (let i = 0; i < calls; i++) {
      const conversationId = h.newConversationId('memory');
      await activities.appendMessages({
        conversationId,
        messages: [{ seq: 0, message: { role: 'user', content: `Hello ${i}` } }],
      });
      h.model.enqueue({ content: `Answer ${i}` });
      const result: ModelCallResult = await new MockActivityEnvironment({ activityId: `memory-${i}` }).run(
        activities.callModel,
        {
          conversationId,
          throughSeq: 0,
          omitSeqs: [],
          synthesized: [],
          settings: { stream: i % 2 === 0 }, // half streamed (the default), half not
          toolChoice: 'auto' as const,
        },
      );
      expect(result.message).toEqual({ role: 'assistant', content: `Answer ${i}` });
    }
    expect(requestSignals).toHaveLength(calls);

    // A WeakRef read in a job keeps its target until the job ends: collect, then look, once per poll. One call
    // may stay: the HTTP client's shared timer keeps the async context it was started in, and when that was a
    // call's activity (a heap snapshot on busy cores showed it), that activity's cancel signal still carries the
    // SDK's listener. Before the fix, every streamed call stayed for good.
    await expect
      .poll(
        () => {
          gc();
          return requestSignals.filter((ref) => ref.deref() !== undefined).length;
        },
        { timeout: 10_000, interval: 250 },
      )
      .toBeLessThanOrEqual(1);
  });
});
