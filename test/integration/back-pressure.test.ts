import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tool } from '../../src/tools/tool';
import { backofficeTools } from '../../src/demo/tools';
import { startHarness, type Harness } from '../support/harness';
import { conversationActivityType } from '../../src/contract/activities';

// Provider back-pressure and database outages: a 429 with Retry-After is retried after the wait the
// provider asked for; a database the worker cannot reach during a model call, for longer than the
// call's heartbeat timeout, delays the turn without using up the call's attempts (the wait for the
// database heartbeats). The worker reaches the real PostgreSQL through a TCP proxy the test cuts
// (every connection closed, new ones refused), as a network outage would.

let h: Harness;
let sent = 0;
/** A tool that is not idempotent (one attempt): an outage after it ran must not turn its result into a failure. */
const sendLetter = tool({
  name: 'send_letter',
  description: 'Sends a letter to a customer.',
  parameters: z.object({ to: z.string() }),
  idempotent: false,
  execute: async ({ to }) => {
    sent++;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    return `letter sent to ${to}`;
  },
});
beforeAll(async () => {
  h = await startHarness({ databaseProxy: true, tools: [...backofficeTools(), sendLetter] });
});
afterAll(async () => {
  await h?.stop();
});

/** The attempts of every `callModel` activity of the conversation, and the failure each retried attempt followed. */
async function modelAttempts(id: string) {
  const history = await h.temporal.workflow.getHandle(id).fetchHistory();
  const scheduled = new Set<string>();
  const attempts: {
    attempt: number;
    lastFailure?: { message?: string | null; nextRetryDelay?: { seconds?: unknown } | null };
  }[] = [];
  for (const event of history.events ?? []) {
    const s = event.activityTaskScheduledEventAttributes;
    if (s?.activityType?.name === conversationActivityType('callModel')) scheduled.add(String(event.eventId));
    const started = event.activityTaskStartedEventAttributes;
    if (started && scheduled.has(String(started.scheduledEventId))) {
      attempts.push({
        attempt: started.attempt ?? 0,
        lastFailure: started.lastFailure
          ? {
              message: started.lastFailure.message,
              nextRetryDelay: started.lastFailure.applicationFailureInfo?.nextRetryDelay,
            }
          : undefined,
      });
    }
  }
  return attempts;
}

describe('provider back-pressure', () => {
  it('a 429 with Retry-After: 2 is retried after the delay the provider asked for', async () => {
    const id = h.newConversationId('rate-limited');
    h.model.enqueue(
      { kind: 'http_error', status: 429, headers: { 'retry-after': '2' } },
      { content: 'Answered after the wait.' },
    );
    const { answer } = await h.client.ask(id, 'Are you there?');
    expect(answer).toBe('Answered after the wait.');
    const attempts = await modelAttempts(id);
    expect(attempts.map((a) => a.attempt)).toEqual([2]);
    expect(attempts[0].lastFailure?.message).toContain('(the provider asked to retry after 2000 ms)');
    expect(Number(attempts[0].lastFailure?.nextRetryDelay?.seconds)).toBe(2);
    const served = h.model.requests.filter((r) =>
      (r.body as { messages?: { content?: string }[] })?.messages?.some((m) => m.content === 'Are you there?'),
    );
    expect(served.map((r) => r.reply?.kind ?? 'message')).toEqual(['http_error', 'message']);
  });
});

/**
 * The model call's heartbeat timeout in the outage test, shorter than the default 10 s: the outage lasts longer than
 * it, so a wait for the database that did not heartbeat would fail the attempt.
 */
const OUTAGE_HEARTBEAT_MS = 8_000;
const OUTAGE_MS = 10_000;

describe('a database outage', () => {
  it('of 10 s, past the heartbeat timeout, during a model call delays the turn and does not fail it or use up its attempts', async () => {
    const id = h.newConversationId('db-outage');
    const before = h.model.requests.length;
    h.model.enqueue({ kind: 'delay', ms: 1500, then: { content: 'Answered across the outage.' } });
    const asked = h.client.ask(id, 'Survive the outage', {
      timeoutMs: 120_000,
      input: { timeouts: { heartbeatMs: OUTAGE_HEARTBEAT_MS } },
    });
    await expect.poll(() => h.model.requests.length, { timeout: 20_000 }).toBeGreaterThan(before);
    await h.databaseProxy!.cut(); // the model is still answering; storing its answer will find no database
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    await h.databaseProxy!.restore();
    const { turn, answer } = await asked;
    expect(turn.outcome).toBe('answered');
    expect(answer).toBe('Answered across the outage.');
    expect((await modelAttempts(id)).map((a) => a.attempt)).toEqual([1]);
    expect(h.model.requests.length).toBe(before + 1); // the model was asked once: its answer was not paid for twice
    h.expectOnlyValidModelRequests();
  });
});

describe('a database outage after a tool ran', () => {
  it('delays storing its result instead of failing a call that has one attempt; the tool runs once', async () => {
    const id = h.newConversationId('db-outage-tool');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_letter', name: 'send_letter', arguments: { to: 'Ada' } }] },
      { content: 'The letter is on its way.' },
    );
    const asked = h.client.ask(id, 'Send Ada a letter', { timeoutMs: 120_000 });
    await expect.poll(() => sent, { timeout: 20_000 }).toBe(1);
    await h.databaseProxy!.cut(); // the tool is running; storing its result will find no database
    // 3 s: the result's first writes (1.5 s in, when the tool ends, and 1 s later) find no database.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await h.databaseProxy!.restore();
    const { answer } = await asked;
    expect(answer).toBe('The letter is on its way.');
    const result = (await h.client.transcript(id)).find((m) => m.message.role === 'tool')!.message as {
      content: string;
    };
    expect(result.content).toBe('letter sent to Ada');
    expect(sent).toBe(1);
  });
});
