import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { AgentClient } from '../../src/client/client';
import { TEST_TOKENS, token } from '../support/api';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

// Resuming a chat's stream with the real AI SDK client (ai 7): after a
// dropped connection the transport's reconnect replays the running turn from
// its start and follows it, from any API process, with no chunk lost or
// doubled; after a SIGKILL of the worker mid-stream, the live stream waits
// for a replacement, ends with an error chunk, and the resumed one ends with
// the answer that stands.

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let other: Awaited<ReturnType<typeof startApiServer>>;
let worker: WorkerProcess | undefined;
let apiClient: AgentClient | undefined;
beforeAll(async () => {
  h = await startHarness({ worker: false, textDeltaChars: 2 });
  worker = await startWorkerProcess(h.workerEnv());
  // As `npm run api` runs: a state query no worker answers fails after a while (10 s there, 3 s here).
  apiClient = AgentClient.fromClient(h.temporal, {
    taskQueue: h.taskQueue,
    databaseUrl: h.databaseUrl,
    queryTimeoutMs: 3_000,
  });
  api = await startApiServer({ client: apiClient, tokens: TEST_TOKENS });
  other = await startApiServer({ client: h.client, tokens: TEST_TOKENS }); // a second API process: resume may land on either
});
afterAll(async () => {
  await api?.stop();
  await apiClient?.close();
  await other?.stop();
  await worker?.stop('SIGKILL');
  await h?.stop();
});

const transportOn = (base: string) =>
  new DefaultChatTransport<UIMessage>({
    api: `${base}/v1/chat`,
    headers: { authorization: `Bearer ${token('a')}` },
    prepareSendMessagesRequest: ({ id, messages }) => ({ body: { id, messages: messages.slice(-1) } }),
  });
const textOf = (m: UIMessage | undefined) =>
  (m?.parts ?? []).flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
const LONG = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');

/**
 * Starts a chat turn and reads its stream until `until` says stop (then drops the connection); what was read, and the
 * errors said in it.
 */
async function readUntil(
  chatId: string,
  text: string,
  until: (m: UIMessage) => boolean,
): Promise<{ seen: UIMessage | undefined; errors: string[] }> {
  const drop = new AbortController();
  const errors: string[] = [];
  let seen: UIMessage | undefined;
  const stream = await transportOn(api.url).sendMessages({
    chatId,
    messages: [{ id: `ui-${chatId}`, role: 'user', parts: [{ type: 'text', text }] }],
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: drop.signal,
  });
  try {
    for await (const m of readUIMessageStream<UIMessage>({
      stream,
      onError: (e) => errors.push((e as Error).message),
    })) {
      seen = m;
      if (until(m)) drop.abort();
    }
  } catch (err) {
    if ((err as Error).name !== 'AbortError') throw err;
  }
  return { seen, errors };
}

/** Reconnects through `base` and reads the whole replay; when its first text arrived. */
async function resume(chatId: string, base: string): Promise<{ message: UIMessage | undefined; firstTextAt?: number }> {
  const stream = await transportOn(base).reconnectToStream({ chatId });
  if (!stream) return { message: undefined };
  let message: UIMessage | undefined;
  let firstTextAt: number | undefined;
  for await (const m of readUIMessageStream<UIMessage>({ stream, terminateOnError: true })) {
    message = m;
    if (firstTextAt === undefined && textOf(m) !== '') firstTextAt = Date.now();
  }
  return { message, firstTextAt };
}

describe('resuming the chat stream', () => {
  it('a reconnect after a dropped connection replays the turn from its start through another API process, then the rest, nothing lost or doubled', async () => {
    const id = h.newConversationId('resume');
    h.model.enqueue({ content: LONG, stream: { chunkDelayMs: 600 } }); // three pieces of text, 0.6 s apart
    const { seen } = await readUntil(id, 'Say forty words', (m) => textOf(m).length > 20);
    const partial = textOf(seen);
    expect(partial.length).toBeGreaterThan(20);
    expect(partial.length).toBeLessThan(LONG.length); // dropped mid-stream
    const { message: resumed, firstTextAt } = await resume(id, other.url);
    expect(textOf(resumed)).toBe(LONG);
    expect(resumed?.parts.map((p) => p.type)).toEqual(['step-start', 'text']);
    // The text streamed so far was replayed while the model still spoke (kept, not only read once stored).
    expect(firstTextAt).toBeLessThan(h.model.requests.at(-1)!.closedAt!);
    expect(textOf((await resume(id, other.url)).message)).toBe(LONG); // just after the end, the replay is the whole turn
    h.expectOnlyValidModelRequests();
  });

  it('after a SIGKILL of the worker mid-stream, its replacement starting 10 s later, the live stream waits it out and ends with an error chunk; the resumed stream ends with the answer the transcript holds', async () => {
    const id = h.newConversationId('resume-kill');
    h.model.enqueue({ content: 'Ready.' });
    await h.client.ask(id, 'Begin', { input: { timeouts: { heartbeatMs: 3_000 } } }); // a short heartbeat timeout: the killed call is noticed soon
    h.model.enqueue(
      { content: `FIRST ${LONG}`, stream: { chunkDelayMs: 1_500 } },
      { content: 'The answer after the crash.', stream: { chunkDelayMs: 20 } },
    );
    let shown = 0;
    const live = readUntil(id, 'Say it again', (m) => {
      shown = textOf(m).length;
      return false;
    });
    await expect.poll(() => shown, { timeout: 20_000 }).toBeGreaterThan(10); // the client shows part of the first attempt
    expect((await h.client.streamedSoFar(id)).length).toBeGreaterThan(0); // kept while the call runs
    await worker!.stop('SIGKILL');
    // A slow restart: meanwhile no worker answers the stream's state queries (they time out after 3 s).
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    worker = await startWorkerProcess(h.workerEnv());
    const { seen, errors } = await live;
    expect(errors).toEqual([
      'The model call was retried and its text changed; reconnect to read the turn as it stands.',
    ]);
    expect(textOf(seen)).toMatch(/^FIRST word0/);
    const { message: resumed } = await resume(id, api.url);
    const transcript = await h.client.transcript(id);
    const answer = transcript[transcript.length - 1].message;
    expect(answer).toMatchObject({ role: 'assistant', content: 'The answer after the crash.' });
    expect(textOf(resumed)).toBe('The answer after the crash.');
    h.expectOnlyValidModelRequests();
  });
});
