import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidConversationInputError } from '../../src/common/errors';
import { userMessageSignal } from '../../src/contract';
import { startHarness, type Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

describe('user messages arrive as signals', () => {
  it('the same message sent twice (same messageId) is taken once', async () => {
    const id = h.newConversationId();
    h.model.enqueue({ content: 'Answered once.' });
    await h.client.sendMessage(id, 'Only once please', { messageId: 'msg-1' });
    await h.client.sendMessage(id, 'Only once please', { messageId: 'msg-1' });
    const turn = await h.client.waitForTurn(id, 'msg-1');
    expect(turn.outcome).toBe('answered');
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual(['user', 'assistant']);
    expect(h.requestsFor('Only once please')).toHaveLength(1);
  });

  it('a malformed signal is ignored with a clear error in the state, and the conversation goes on', async () => {
    const id = h.newConversationId();
    h.model.enqueue({ content: 'First.' }, { content: 'Still here.' });
    await h.client.ask(id, 'Before the bad signal');
    await h.temporal.workflow.getHandle(id).signal(userMessageSignal, { text: '' });
    await expect.poll(async () => (await h.client.state(id)).lastError).toContain('"text" must be a non-empty string');
    const { answer } = await h.client.ask(id, 'After the bad signal');
    expect(answer).toBe('Still here.');
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
    h.expectOnlyValidModelRequests();
  });

  it('an ended conversation refuses new messages with an error that says so', async () => {
    const id = h.newConversationId();
    h.model.enqueue({ content: 'Bye.' });
    await h.client.ask(id, 'Last words');
    await h.client.end(id);
    await h.temporal.workflow.getHandle(id).result();
    await expect(h.client.sendMessage(id, 'Are you there?')).rejects.toThrow(/has ended and cannot take new messages/);
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual(['user', 'assistant']);
  });
});

describe('start options', () => {
  it('invalid start options are refused by the client, naming each field, and nothing is started', async () => {
    const id = h.newConversationId();
    const error = await h.client
      .sendMessage(id, 'Hello', { input: { maxSteps: 0, tools: 'find_customer' as unknown as string[] } })
      .catch((err: Error) => err);
    expect(error).toBeInstanceOf(InvalidConversationInputError);
    expect((error as Error).message).toContain('maxSteps must be a positive integer, got 0');
    expect((error as Error).message).toContain('tools must be a list of tool names');
    await expect(h.temporal.workflow.getHandle(id).describe()).rejects.toThrow(/not found/i);
  });
});
