import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONVERSATION_WORKFLOW_TYPE,
  TURN_INPUT_MAX_BYTES,
  USER_MESSAGE_MAX_BYTES,
  userMessageSignal,
} from '../../src/contract';
import { exportHistoryFixture } from '../support/fixture-export';
import { startHarness, type Harness } from '../support/harness';

// Size limits in the workflow itself, for senders that bypass AgentClient (a raw signal): an
// oversized message is refused with its size and the limit, and a queue of big messages is taken
// into turns of at most TURN_INPUT_MAX_BYTES, so no activity input nears Temporal's payload limit.

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

describe('message size limits in the workflow', () => {
  it('refuses an oversized user message sent as a raw signal, names the size and the limit, and answers the next message', async () => {
    const id = h.newConversationId('raw-big');
    h.model.enqueue({ content: 'Answered.' });
    const big = 'x'.repeat(USER_MESSAGE_MAX_BYTES + 1);
    await h.temporal.workflow.signalWithStart(CONVERSATION_WORKFLOW_TYPE, {
      workflowId: id,
      taskQueue: h.taskQueue,
      args: [{}],
      signal: userMessageSignal,
      signalArgs: [{ text: big, messageId: 'big-1' }],
    });
    await expect
      .poll(async () => (await h.client.state(id)).lastError, { timeout: 10_000 })
      .toBe(
        `Ignored a userMessage signal: the message is ${USER_MESSAGE_MAX_BYTES + 1} bytes; a user message may be at most ${USER_MESSAGE_MAX_BYTES} bytes`,
      );
    expect((await h.client.state(id)).messageCount).toBe(0);
    const { answer } = await h.client.ask(id, 'a normal message');
    expect(answer).toBe('Answered.');
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual(['user', 'assistant']);
    await h.client.end(id);
    await h.temporal.workflow.getHandle(id).result();
    await exportHistoryFixture(h.temporal, id, 'oversized-user-message');
  });

  it('takes a queue of big messages into turns of at most TURN_INPUT_MAX_BYTES, in order, losing none', async () => {
    const id = h.newConversationId('queue-big');
    // The first turn waits for its model long enough for all six messages to queue behind it.
    h.model.enqueue(
      { kind: 'delay', ms: 6000, then: { content: 'first' } },
      { content: 'second' },
      { content: 'third' },
    );
    await h.client.sendMessage(id, 'start', { input: { onNewMessage: 'queue' } });
    await expect.poll(() => h.requestsFor('start').length, { timeout: 10_000 }).toBe(1);
    const texts = Array.from({ length: 6 }, (_, i) => `${i}:`.padEnd(250 * 1024, String(i)));
    for (const [i, text] of texts.entries()) await h.client.sendMessage(id, text, { messageId: `big-${i}` });
    await expect.poll(async () => (await h.client.state(id)).recentTurns.length, { timeout: 30_000 }).toBe(3);
    const turns = (await h.client.state(id)).recentTurns;
    expect(turns.map((t) => t.messageIds)).toEqual([
      [expect.any(String)],
      ['big-0', 'big-1', 'big-2', 'big-3'],
      ['big-4', 'big-5'],
    ]);
    expect(turns.every((t) => t.outcome === 'answered')).toBe(true);
    const users = (await h.client.transcript(id))
      .filter((m) => m.message.role === 'user')
      .map((m) => m.message.content);
    expect(users).toEqual(['start', ...texts]);
    expect(4 * 250 * 1024).toBeLessThanOrEqual(TURN_INPUT_MAX_BYTES);
  });
});
