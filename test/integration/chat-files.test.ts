import { randomBytes } from 'node:crypto';
import { DefaultChatTransport, type FileUIPart, type UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { MESSAGE_FILE_MAX_BYTES, USER_MESSAGE_MAX_BYTES } from '../../src/contract';
import { TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { startHarness, type Harness } from '../support/harness';
import { streamedMessage } from '../support/ui-messages';

// Files a user attaches, through the chat (the AI SDK's FileUIPart, sent by
// the real DefaultChatTransport) and through the messages API: an image or
// a PDF reaches the scripted model server as OpenAI's content parts (which
// it checks as OpenAI does), its bytes stored in PostgreSQL and named by
// reference in Temporal's history; the transcript keeps the file, readable
// back; a part the model cannot take is refused with a 400 naming it.

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  h = await startHarness({ textDeltaChars: 2, decisionTrust: { keys: [TEST_DECISION_KEY] } });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS, decisions: { signingKey: TEST_DECISION_KEY } });
});
afterAll(async () => {
  h?.expectOnlyValidModelRequests();
  await api?.stop();
  await h?.stop();
});

const transport = new DefaultChatTransport<UIMessage>({
  api: '',
  prepareSendMessagesRequest: ({ id, messages }) => ({
    api: `${api.url}/v1/chat`,
    headers: { authorization: `Bearer ${token('a')}` },
    body: { id, messages: messages.slice(-1) },
  }),
});

const send = async (chatId: string, message: UIMessage) =>
  streamedMessage(
    await transport.sendMessages({
      chatId,
      messages: [message],
      trigger: 'submit-message',
      messageId: undefined,
      abortSignal: undefined,
    }),
    [message],
  );

/** A POST of the chat's body as the transport sends it, to read a refusal. */
const post = (chatId: string, message: UIMessage) =>
  fetch(`${api.url}/v1/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token('a')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id: chatId, messages: [message], trigger: 'submit-message' }),
  });

/** Bytes that start as a PNG does (all the model server and the API check), `size` long. */
const png = (size: number) =>
  Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(size - 8)]);
const pdf = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
const dataUrl = (mediaType: string, bytes: Buffer) => `data:${mediaType};base64,${bytes.toString('base64')}`;
const withFiles = (id: string, text: string, ...files: FileUIPart[]): UIMessage => ({
  id,
  role: 'user',
  parts: [{ type: 'text', text }, ...files],
});
const texts = (m: UIMessage) => m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : []));

/** The user messages of the model requests that carry `marker` in a text part, as they were sent. */
function sentWith(marker: string): { role: string; content: unknown }[] {
  return h.model.requests.flatMap((r) =>
    ((r.body as { messages?: { role: string; content: unknown }[] }).messages ?? []).filter(
      (m) =>
        m.role === 'user' &&
        Array.isArray(m.content) &&
        m.content.some((p: { type: string; text?: string }) => p.type === 'text' && p.text?.includes(marker)),
    ),
  );
}

/** Every payload of the workflow's history, decoded as text. */
async function historyText(conversationId: string): Promise<string> {
  const history = await h.temporal.workflow.getHandle(conversationId).fetchHistory();
  const texts: string[] = [];
  const walk = (value: unknown): void => {
    if (value instanceof Uint8Array) texts.push(Buffer.from(value).toString('latin1'));
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') Object.values(value).forEach(walk);
  };
  walk(history.events);
  return texts.join('\n');
}

describe('files of a user message', () => {
  it('an image (larger than a text may be) and a PDF reach the model as OpenAI content parts; history holds references, the transcript keeps the files, readable back', async () => {
    const id = h.newConversationId('chat-files');
    const image = png(USER_MESSAGE_MAX_BYTES + 300_000);
    h.model.enqueue({ content: 'A chart and an invoice.' });
    const answer = await send(
      id,
      withFiles(
        'u1',
        'What are these? files-1',
        { type: 'file', mediaType: 'image/png', url: dataUrl('image/png', image), filename: 'chart.png' },
        { type: 'file', mediaType: 'application/pdf', url: dataUrl('application/pdf', pdf), filename: 'invoice.pdf' },
      ),
    );
    expect(texts(answer)).toEqual(['A chart and an invoice.']);

    expect(sentWith('files-1')).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What are these? files-1' },
          { type: 'image_url', image_url: { url: dataUrl('image/png', image) } },
          { type: 'file', file: { filename: 'invoice.pdf', file_data: dataUrl('application/pdf', pdf) } },
        ],
      },
    ]);

    // Temporal's history names the files; their bytes are only in PostgreSQL.
    const history = await historyText(id);
    expect(history).not.toContain(image.toString('base64').slice(5000, 5100));
    expect(history).not.toContain(image.subarray(5000, 5100).toString('latin1'));
    expect(history.length).toBeLessThan(image.length);

    // The transcript keeps the message with its files, by reference; each reads back as it was sent.
    const user = (await h.client.transcript(id))[0].message as { content: string; files?: Record<string, unknown>[] };
    expect(user.content).toBe('What are these? files-1');
    expect(user.files).toEqual([
      {
        fileId: expect.stringMatching(/^[0-9a-f]{64}$/),
        mediaType: 'image/png',
        filename: 'chart.png',
        bytes: image.length,
      },
      {
        fileId: expect.stringMatching(/^[0-9a-f]{64}$/),
        mediaType: 'application/pdf',
        filename: 'invoice.pdf',
        bytes: pdf.length,
      },
    ]);
    const page = await fetch(`${api.url}/v1/conversations/${id}/transcript`, {
      headers: { authorization: `Bearer ${token('a')}` },
    });
    expect(((await page.json()) as { messages: { message: { files?: unknown } }[] }).messages[0].message.files).toEqual(
      user.files,
    );
    const read = await fetch(`${api.url}/v1/conversations/${id}/files/${user.files![0].fileId as string}`, {
      headers: { authorization: `Bearer ${token('a')}` },
    });
    expect(read.status).toBe(200);
    expect(read.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await read.arrayBuffer()).equals(image)).toBe(true);
    // Another conversation's message does not carry it: not found there.
    const elsewhere = await fetch(`${api.url}/v1/conversations/other-${id}/files/${user.files![0].fileId as string}`, {
      headers: { authorization: `Bearer ${token('a')}` },
    });
    expect(elsewhere.status).toBe(404);

    // A message sent again with the file as the history names it (an edit) carries the same stored file.
    const named = `/v1/conversations/${id}/files/${user.files![0].fileId as string}`;
    h.model.enqueue({ content: 'The same chart.' });
    const again = withFiles('u2', 'And now? files-2', { type: 'file', mediaType: 'image/png', url: named });
    expect(texts(await send(id, again))).toEqual(['The same chart.']);
    expect((sentWith('files-2').at(-1)?.content as unknown[])[1]).toEqual({
      type: 'image_url',
      image_url: { url: dataUrl('image/png', image) },
    });
    const foreign = await post(
      id,
      withFiles('u3', 'x', { type: 'file', mediaType: 'image/png', url: named.replace(id, `${id}-x`) }),
    );
    expect(((await foreign.json()) as { error: { message: string } }).error.message).toBe(
      `Part 1 (image/png) cannot be sent to the model: its url names a file no message of ${id} carries.`,
    );
  });

  it('a file alone (no text) is a message; an https image goes by address; the messages API takes files too', async () => {
    const id = h.newConversationId('chat-file-only');
    h.model.enqueue({ content: 'A photo.' }, { content: 'Another.' });
    const onlyFile: UIMessage = {
      id: 'u1',
      role: 'user',
      parts: [{ type: 'file', mediaType: 'image/jpeg', url: 'https://example.com/photo-only.jpg' }],
    };
    expect(texts(await send(id, onlyFile))).toEqual(['A photo.']);
    const firstRequest = h.model.requests
      .map((r) => r.body as { messages: { role: string; content: unknown }[] })
      .find((b) => JSON.stringify(b.messages).includes('photo-only.jpg'))!;
    expect(firstRequest.messages.filter((m) => m.role === 'user')).toEqual([
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/photo-only.jpg' } }] },
    ]);

    const posted = await fetch(`${api.url}/v1/conversations/${id}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token('a')}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        text: 'And this one? files-api',
        files: [{ mediaType: 'image/gif', url: dataUrl('image/gif', Buffer.from('GIF89a-tiny')) }],
      }),
    });
    expect(posted.status).toBe(202);
    await h.client.waitForTurn(id, ((await posted.json()) as { messageId: string }).messageId);
    expect(sentWith('files-api').at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'And this one? files-api' },
        { type: 'image_url', image_url: { url: dataUrl('image/gif', Buffer.from('GIF89a-tiny')) } },
      ],
    });
  });

  it('refuses, naming the part (index, media type) and why, what the model cannot take; nothing is sent', async () => {
    const id = h.newConversationId('chat-file-refused');
    const refusal = async (message: UIMessage) => {
      const res = await post(id, message);
      return { status: res.status, ...((await res.json()) as { error: { code: string; message: string } }).error };
    };
    const file = (mediaType: string, url: string, filename?: string): FileUIPart => ({
      type: 'file',
      mediaType,
      url,
      ...(filename ? { filename } : {}),
    });

    expect(
      await refusal(
        withFiles('r1', 'read this', file('text/plain', dataUrl('text/plain', Buffer.from('hi')), 'a.txt')),
      ),
    ).toEqual({
      status: 400,
      code: 'invalid_request',
      message: expect.stringMatching(
        /^Part 1 \(text\/plain, a\.txt\) cannot be sent to the model: the model does not read text\/plain/,
      ),
    });
    expect((await refusal(withFiles('r2', 'x', file('application/pdf', 'https://example.com/a.pdf')))).message).toMatch(
      /^Part 1 \(application\/pdf\) cannot be sent to the model: a document must be sent as its bytes \(a data: URL\)/,
    );
    expect((await refusal(withFiles('r3', 'x', file('image/png', 'http://example.com/a.png')))).message).toMatch(
      /^Part 1 \(image\/png\) cannot be sent.*neither a data: URL of its bytes nor an https: address/,
    );
    expect(
      (await refusal(withFiles('r4', 'x', file('image/png', dataUrl('image/png', Buffer.from('not a png')))))).message,
    ).toMatch(/^Part 1 \(image\/png\) cannot be sent to the model: its bytes do not start as a image\/png does/);
    expect((await refusal(withFiles('r5', 'x', file('image/png', dataUrl('image/jpeg', png(100)))))).message).toMatch(
      /its data: URL says image\/jpeg, not image\/png/,
    );
    expect(
      await refusal(withFiles('r6', 'x', file('image/png', dataUrl('image/png', png(MESSAGE_FILE_MAX_BYTES + 1))))),
    ).toEqual({
      status: 413,
      code: 'message_too_large',
      message: expect.stringMatching(
        /^Part 1 \(image\/png\) is 4194305 bytes; a file may be at most 4194304 bytes: make it smaller\.$/,
      ),
    });
    const data: UIMessage = {
      id: 'r7',
      role: 'user',
      parts: [
        { type: 'text', text: 'x' },
        { type: 'data-note', data: {} },
      ],
    };
    expect((await refusal(data)).message).toMatch(/^Part 1 of the message is of type "data-note"/);
    const api400 = await fetch(`${api.url}/v1/conversations/${id}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token('a')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'x', files: [{ mediaType: 'audio/wav', url: 'data:audio/wav;base64,AAAA' }] }),
    });
    expect(api400.status).toBe(400);
    // The messages API's document states the same rules (message-files-schema.ts): refused by the body's schema.
    expect(((await api400.json()) as { error: { message: string } }).error.message).toMatch(
      /^The request is not valid: body\/files\/0/,
    );
    // Nothing was sent: the conversation never started.
    await expect(h.client.state(id)).rejects.toThrow();
  });
});
