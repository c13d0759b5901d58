import type { UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { apiCaller, TEST_TOKENS, token } from '../support/api';
import { startHarness, type Harness } from '../support/harness';

// A chat page reloaded in the first moment of a turn, before its user
// message is written (the worker's first model call writes it; here the
// worker's database is cut, so the write waits): the history still holds
// the message just sent, its text and its file, once; and once more after
// it is written, never twice.

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  h = await startHarness({ textDeltaChars: 2, databaseProxy: true });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS });
});
afterAll(async () => {
  await h?.databaseProxy?.restore().catch(() => undefined);
  await api?.stop();
  await h?.stop();
});

const call = apiCaller(() => api.url);
const history = async (id: string): Promise<UIMessage[]> => {
  const { status, json } = await call('GET', `/v1/conversations/${id}/ui-messages`, token('a'));
  expect(status).toBe(200);
  return (json as { messages: UIMessage[] }).messages;
};
const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4]);

describe('the history before the turn’s user message is written', () => {
  it('holds the message just sent (text and file) once, and once after it is written', async () => {
    const id = h.newConversationId('ui-unwritten');
    h.model.enqueue({ content: 'Seen it.' });
    await h.databaseProxy!.cut(); // the worker cannot write the turn's messages until restored
    const stop = new AbortController();
    const response = await fetch(`${api.url}/v1/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token('a')}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        id,
        trigger: 'submit-message',
        messages: [
          {
            id: 'page-1',
            role: 'user',
            parts: [
              { type: 'text', text: 'What is in this picture?' },
              { type: 'file', mediaType: 'image/png', url: `data:image/png;base64,${png.toString('base64')}` },
            ],
          },
        ],
      }),
      signal: stop.signal,
    });
    expect(response.status).toBe(200);
    const body = response.text().catch(() => ''); // the page's stream, read to its end
    try {
      await vi.waitFor(async () => expect((await h.client.state(id)).currentTurn?.firstSeq).toBe(0), {
        timeout: 20_000,
      });
      expect(await h.client.transcript(id)).toEqual([]); // not written yet
      const early = await history(id);
      expect(early.map((m) => [m.id, m.role])).toEqual([['user-0', 'user']]);
      expect(early[0].parts).toEqual([
        { type: 'text', text: 'What is in this picture?', state: 'done' },
        {
          type: 'file',
          mediaType: 'image/png',
          url: expect.stringMatching(`^/v1/conversations/${id}/files/[0-9a-f]{64}$`),
        },
      ]);
    } finally {
      await h.databaseProxy!.restore();
    }
    await body;
    const after = await vi.waitFor(
      async () => {
        const now = await history(id);
        expect(now.map((m) => [m.id, m.role])).toEqual([
          ['user-0', 'user'],
          ['turn-0', 'assistant'],
        ]);
        expect(now[1].metadata).toMatchObject({ outcome: 'answered' });
        return now;
      },
      { timeout: 30_000 },
    );
    expect((await h.client.transcript(id)).filter((m) => m.message.role === 'user')).toHaveLength(1);
    const written = await history(id);
    expect(written).toEqual(after);
    expect(written[1].parts.filter((p) => p.type === 'text')).toMatchObject([{ text: 'Seen it.' }]);
    stop.abort();
  });
});
