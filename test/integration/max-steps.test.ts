import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

describe('maxSteps', () => {
  it('after maxSteps model calls with tools, one last call with tool_choice "none" gives the user an answer', async () => {
    const id = h.newConversationId();
    h.model.setResponder((request) => {
      const body = request.body as { tool_choice?: string };
      return body.tool_choice === 'none'
        ? { content: 'Here is what I found so far.' }
        : { toolCalls: [{ name: 'find_customer', arguments: { query: 'Ada' } }] };
    });
    try {
      const { turn, answer } = await h.client.ask(id, 'Keep looking for Ada', { input: { maxSteps: 2 } });
      expect(turn).toMatchObject({ outcome: 'answered', steps: 3 });
      expect(answer).toBe('Here is what I found so far.');
    } finally {
      h.model.setResponder(undefined);
    }
    const choices = h.requestsFor('Keep looking for Ada').map((r) => r.tool_choice);
    expect(choices).toEqual(['auto', 'auto', 'none']);
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    h.expectOnlyValidModelRequests();
  });
});
