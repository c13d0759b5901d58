import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { sayThroughApi } from '../../src/cli/api-conversation';
import { apiCaller, TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { startHarness, type Harness } from '../support/harness';
import { readTurnEvents, type TurnStreamEvent } from '../support/stream-bodies';

// A turn's events are followed for at most waitSeconds (default 300, at most
// 3600): a turn not finished by then ends the stream with a wait_ended event,
// and the CLI, which follows its turns through the API, opens the stream again.

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  h = await startHarness({ textDeltaChars: 2, decisionTrust: { keys: [TEST_DECISION_KEY] } });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS, decisions: { signingKey: TEST_DECISION_KEY } });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

const call = apiCaller(() => api.url);

/** The events of one stream, as `{event, data}`, read until the API ends it. */
async function readStream(url: string): Promise<TurnStreamEvent[]> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${token('a')}` } });
  expect(response.status).toBe(200);
  return readTurnEvents(response.body!);
}

describe('following a turn', () => {
  it('ends the stream with wait_ended after waitSeconds when the turn has not finished, and with turn when it has', async () => {
    const id = h.newConversationId('wait');
    h.model.enqueue({ kind: 'delay', ms: 4_000, then: { content: 'Late, but here.' } });
    const sent = await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Take your time' });
    const started = Date.now();
    const waited = await readStream(
      `${api.url}/v1/conversations/${id}/events?messageId=${sent.json.messageId}&waitSeconds=1`,
    );
    expect(Date.now() - started).toBeLessThan(3_500);
    expect(waited.map((e) => e.event)).not.toContain('turn');
    expect(waited.at(-1)).toEqual({ event: 'wait_ended', data: { waitSeconds: 1, messageId: sent.json.messageId } });
    // Asked again, the stream follows the same turn to its end.
    const followed = await readStream(
      `${api.url}/v1/conversations/${id}/events?messageId=${sent.json.messageId}&waitSeconds=30`,
    );
    expect(followed.at(-1)).toMatchObject({ event: 'turn', data: { outcome: 'answered', answer: 'Late, but here.' } });
  });

  it('refuses a waitSeconds outside 1 to 3600 with 400 naming the bounds', async () => {
    const id = h.newConversationId('wait-bounds');
    for (const waitSeconds of ['0', '3601', '1.5', '']) {
      const refused = await call('GET', `/v1/conversations/${id}/events?waitSeconds=${waitSeconds}`, token('a'));
      expect(refused.status, waitSeconds).toBe(400);
      expect(refused.json.error).toEqual({
        code: 'invalid_request',
        message: expect.stringContaining('waitSeconds must be an integer from 1 to 3600'),
      });
    }
  });

  it("the CLI's say opens the stream again when it ends with wait_ended, and prints the answer once", async () => {
    const id = h.newConversationId('wait-cli');
    h.model.enqueue({ kind: 'delay', ms: 2_500, then: { content: 'Answered after a while.' } });
    let printed = '';
    await sayThroughApi({ url: api.url, token: token('a') }, id, 'Take your time', (s) => (printed += s), {
      waitSeconds: 1,
    });
    expect(printed).toBe('agent> Answered after a while.\n');
  });
});
