import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
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
  it('ends the stream with wait_ended after waitSeconds when the turn has not finished, and with turn when it has; a stream opened again sends the text so far from its start, each delta at its offset', async () => {
    const id = h.newConversationId('wait');
    // The answer comes after 1.5 s, in 2-character deltas, a write every 150 ms (about 1.8 s more).
    h.model.enqueue({
      kind: 'delay',
      ms: 1_500,
      then: { content: 'Late, but here.', stream: { textDeltaChars: 2, chunkDelayMs: 150 } },
    });
    const sent = await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Take your time' });
    const url = `${api.url}/v1/conversations/${id}/events?messageId=${sent.json.messageId}&waitSeconds=1`;
    const started = Date.now();
    const waited = await readStream(url);
    expect(Date.now() - started).toBeLessThan(3_500);
    expect(waited.map((e) => e.event)).not.toContain('turn');
    expect(waited.at(-1)).toEqual({ event: 'wait_ended', data: { waitSeconds: 1, messageId: sent.json.messageId } });
    // Asked again (and again, while the answer streams), the stream follows the same turn to its end.
    const streams = [waited];
    while (streams.at(-1)!.at(-1)!.event === 'wait_ended') streams.push(await readStream(url));
    expect(streams.at(-1)!.at(-1)).toMatchObject({
      event: 'turn',
      data: { outcome: 'answered', answer: 'Late, but here.' },
    });
    // In each stream, a response's deltas continue each other from offset 0: the text streamed before it came first.
    for (const [i, stream] of streams.entries()) {
      const texts = new Map<string, string>();
      for (const { event, data } of stream) {
        if (event !== 'delta') continue;
        const key = `${data.responseKey}/${data.attempt}`;
        const before = texts.get(key) ?? '';
        expect(data.offset, `stream ${i + 1}, delta ${JSON.stringify(data.text)} after ${JSON.stringify(before)}`).toBe(
          before.length,
        );
        texts.set(key, before + data.text);
      }
      for (const text of texts.values()) expect('Late, but here.'.startsWith(text), text).toBe(true);
    }
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

  it("the CLI's say opens the stream again when it ends with wait_ended, before the answer and in its middle, and prints each character once", async () => {
    // The answer comes after 1.2 s, in 2-character deltas, a write every 150 ms (about 2.5 s more): the stream's
    // 1-second waits end before it and while it streams, and each stream opened again sends the text so far again.
    const id = h.newConversationId('wait-cli');
    h.model.enqueue({
      kind: 'delay',
      ms: 1_200,
      then: { content: 'Answered after a while.', stream: { textDeltaChars: 2, chunkDelayMs: 150 } },
    });
    const fetched = vi.spyOn(globalThis, 'fetch');
    let printed = '';
    try {
      await sayThroughApi({ url: api.url, token: token('a') }, id, 'Take your time', (s) => (printed += s), {
        waitSeconds: 1,
      });
      const opened = fetched.mock.calls.filter(([url]) => String(url).includes('/events?')).length;
      expect(opened).toBeGreaterThanOrEqual(3);
    } finally {
      fetched.mockRestore();
    }
    expect(printed).toBe('agent> Answered after a while.\n');
  });
});
