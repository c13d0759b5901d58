import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

describe('model call failures', () => {
  it('a model 500 is retried by Temporal and the turn then answers', async () => {
    const id = h.newConversationId();
    h.model.enqueue({ kind: 'http_error', status: 500 }, { content: 'Recovered after a server error.' });
    const { turn, answer } = await h.client.ask(id, 'Hello after a 500');
    expect(turn.outcome).toBe('answered');
    expect(answer).toBe('Recovered after a server error.');
    expect(h.model.requests.filter((r) => JSON.stringify(r.body).includes('Hello after a 500'))).toHaveLength(2);

    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    const attempts = (history.events ?? [])
      .map((e) => e.activityTaskStartedEventAttributes?.attempt)
      .filter((a): a is number => typeof a === 'number');
    expect(attempts).toContain(2);
    h.expectOnlyValidModelRequests();
  });

  it("a provider's 400 fails the turn at once with the provider's message, and the next message is answered", async () => {
    const id = h.newConversationId();
    const providerMessage = "Invalid value for 'temperature': must be at most 2.";
    h.model.enqueue({
      kind: 'http_error',
      status: 400,
      body: { error: { message: providerMessage, type: 'invalid_request_error', param: 'temperature', code: null } },
    });
    const first = await h.client.ask(id, 'First message, rejected by the provider');
    expect(first.turn.outcome).toBe('failed');
    expect(first.turn.error).toContain(providerMessage);
    expect(h.model.requests.filter((r) => JSON.stringify(r.body).includes('rejected by the provider'))).toHaveLength(1);
    const failed = await h.client.state(id);
    expect(failed.status).toBe('failed');
    expect(failed.lastError).toContain(providerMessage);

    h.model.enqueue({ content: 'Second message answered.' });
    const second = await h.client.ask(id, 'Second message');
    expect(second.answer).toBe('Second message answered.');
    const state = await h.client.state(id);
    expect(state.status).toBe('idle');
    expect(state.lastError).toBeUndefined();
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual(['user', 'user', 'assistant']);
    h.expectOnlyValidModelRequests();
  });
});
