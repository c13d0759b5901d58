import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { messageBody, NON_BLANK_PATTERN } from '../../src/api/schemas';
import { apiCaller, TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { startHarness, type Harness } from '../support/harness';

// The HTTP API's limits, each refused in the project's shape
// {"error": {"code", "message"}} with a status the OpenAPI document lists for
// the operation: text PostgreSQL cannot store (U+0000, unpaired surrogates),
// integers out of range, ids over their length, and Fastify's own refusals
// (no route, another method, not JSON, too large, a path too long).

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
/** A token whose subject holds U+0000: nothing it sends could be recorded. */
const UNRECORDABLE = { subject: 'eve\u0000@example.com', roles: ['requester' as const], token: token('e') };
beforeAll(async () => {
  h = await startHarness({ decisionTrust: { keys: [TEST_DECISION_KEY] } });
  api = await startApiServer({
    client: h.client,
    tokens: [...TEST_TOKENS, UNRECORDABLE],
    decisions: { signingKey: TEST_DECISION_KEY },
  });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

const call = apiCaller(() => api.url);
const document = async () =>
  (await call('GET', '/openapi.json')).json as {
    paths: Record<string, Record<string, { responses: Record<string, any> }>>;
  };

/**
 * Asserts a refusal: its status, its code, words of its message, and that the document lists the status for the
 * operation with the shared error body.
 */
async function expectRefusal(
  answer: { status: number; json: any },
  expected: { status: number; code: string; message?: string; operation?: [method: string, route: string] },
): Promise<void> {
  expect(answer.status).toBe(expected.status);
  expect(answer.json).toEqual({
    error: {
      code: expected.code,
      message: expected.message ? expect.stringContaining(expected.message) : expect.any(String),
    },
  });
  if (expected.operation) {
    const [method, route] = expected.operation;
    const response = (await document()).paths[route][method].responses[String(expected.status)];
    expect(response?.content?.['application/json']?.schema, `${method} ${route} lists ${expected.status}`).toEqual({
      $ref: '#/components/schemas/ApiError',
    });
  }
}

const MESSAGES: [string, string] = ['post', '/v1/conversations/{id}/messages'];

describe('the HTTP API refuses what it cannot take', () => {
  it('a message, reason or id with U+0000 or an unpaired surrogate: 400 naming the character and its offset; the conversation goes on', async () => {
    const id = h.newConversationId('nul');
    const sent = (body: unknown) => call('POST', `/v1/conversations/${id}/messages`, token('a'), body);
    await expectRefusal(await sent({ text: 'hi\u0000there' }), {
      status: 400,
      code: 'invalid_request',
      message: 'text contains U+0000 (NUL) at offset 2',
      operation: MESSAGES,
    });
    await expectRefusal(await sent({ text: 'broken \ud800 pair' }), {
      status: 400,
      code: 'invalid_request',
      message: 'text contains U+D800 (an unpaired high surrogate) at offset 7',
    });
    await expectRefusal(await sent({ text: 'hi', messageId: 'm\u0000' }), {
      status: 400,
      code: 'invalid_request',
      message: 'messageId contains U+0000 (NUL) at offset 1',
    });
    await expectRefusal(await sent({ text: 'hi', input: { systemPrompt: 'be \udc00 kind' } }), {
      status: 400,
      code: 'invalid_request',
      message: 'input.systemPrompt contains U+DC00 (an unpaired low surrogate) at offset 3',
    });
    await expectRefusal(await call('POST', '/v1/conversations/a%00b/messages', token('a'), { text: 'hi' }), {
      status: 400,
      code: 'invalid_request',
      message: 'id contains U+0000 (NUL) at offset 1',
    });
    await expectRefusal(
      await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
        decision: 'reject',
        callKeys: ['k'],
        reason: 'no\u0000',
      }),
      {
        status: 400,
        code: 'invalid_request',
        message: 'reason contains U+0000 (NUL) at offset 2',
      },
    );
    await expectRefusal(await call('POST', `/v1/conversations/${id}/cancel`, token('a'), { reason: '\u0000' }), {
      status: 400,
      code: 'invalid_request',
      message: 'reason contains U+0000',
    });
    // Nothing refused reached the conversation: it answers the next message.
    h.model.enqueue({ content: 'Hello.' });
    const ok = await sent({ text: 'hi, a four-byte 😀 is fine' });
    expect(ok.status).toBe(202);
    expect((await h.client.waitForTurn(id, ok.json.messageId)).outcome).toBe('answered');
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual(['user', 'assistant']);
  });

  it('a token whose subject cannot be recorded: 401 saying why', async () => {
    await expectRefusal(await call('POST', '/v1/conversations/x/messages', UNRECORDABLE.token, { text: 'hi' }), {
      status: 401,
      code: 'unauthorized',
      message: 'its subject contains U+0000 (NUL) at offset 3',
      operation: MESSAGES,
    });
  });

  it('integers out of range and ids over their length: 400 naming the limit; a path parameter far over it: 414', async () => {
    const transcript: [string, string] = ['get', '/v1/conversations/{id}/transcript'];
    await expectRefusal(await call('GET', '/v1/approvals?minAgeSeconds=2251799813685248', token('b')), {
      status: 400,
      code: 'invalid_request',
      message: 'minAgeSeconds must be an integer from 0 to 315360000',
      operation: ['get', '/v1/approvals'],
    });
    expect((await call('GET', '/v1/approvals?minAgeSeconds=315360000', token('b'))).status).toBe(200);
    await expectRefusal(await call('GET', '/v1/conversations/0/transcript?after=569735666963', token('a')), {
      status: 400,
      code: 'invalid_request',
      message: 'after must be an integer from -1 to 2147483647',
      operation: transcript,
    });
    expect((await call('GET', '/v1/conversations/0/transcript?after=2147483647', token('a'))).json).toEqual({
      messages: [],
      next: null,
    });
    for (const limit of ['0', '501', '1e2', ' 5', '0x10', '']) {
      await expectRefusal(
        await call('GET', `/v1/conversations/0/transcript?limit=${encodeURIComponent(limit)}`, token('a')),
        {
          status: 400,
          code: 'invalid_request',
          message: 'limit must be an integer from 1 to 500',
        },
      );
    }
    await expectRefusal(await call('GET', `/v1/conversations/${'x'.repeat(201)}/transcript`, token('a')), {
      status: 400,
      code: 'invalid_request',
      message: 'id must be 1 to 200 characters long, got 201',
    });
    // Characters, not UTF-16 code units: 200 four-byte characters are an id.
    expect(
      (await call('GET', `/v1/conversations/${encodeURIComponent('😀'.repeat(200))}/transcript`, token('a'))).status,
    ).toBe(200);
    await expectRefusal(await call('GET', `/v1/conversations/${'x'.repeat(2001)}/transcript`, token('a')), {
      status: 414,
      code: 'uri_too_long',
      message: 'longer than 2000 characters',
      operation: transcript,
    });
  });

  it("Fastify's refusals: no route 404, another method 405 with Allow, not JSON 415, bad JSON 400, too large 413", async () => {
    await expectRefusal(await call('GET', '/v1/nothing-here', token('a')), {
      status: 404,
      code: 'not_found',
      message: 'No route GET /v1/nothing-here',
    });
    const other = await fetch(`${api.url}/v1/conversations/x`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token('a')}` },
    });
    expect(other.headers.get('allow')).toBe('GET, HEAD');
    await expectRefusal(
      { status: other.status, json: await other.json() },
      { status: 405, code: 'method_not_allowed', message: 'takes GET, HEAD, not DELETE' },
    );
    const post = (body: string, type: string) =>
      fetch(`${api.url}/v1/conversations/x/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token('a')}`, 'content-type': type },
        body,
      }).then(async (r) => ({
        status: r.status,
        json: await r.json(),
      }));
    await expectRefusal(await post('hello', 'text/plain'), {
      status: 415,
      code: 'unsupported_media_type',
      message: 'application/json',
      operation: MESSAGES,
    });
    await expectRefusal(await post('{"text":', 'application/json'), {
      status: 400,
      code: 'invalid_request',
      message: 'not valid JSON',
      operation: MESSAGES,
    });
    // The messages route takes files, so its body may be larger than other routes' (FILES_BODY_LIMIT_BYTES).
    await expectRefusal(await post(JSON.stringify({ text: 'x'.repeat(14 * 1024 * 1024) }), 'application/json'), {
      status: 413,
      code: 'message_too_large',
      message: 'over 13281963 bytes',
      operation: MESSAGES,
    });
    await expectRefusal(await post(JSON.stringify({ text: 'x'.repeat(300_000) }), 'application/json'), {
      status: 413,
      code: 'message_too_large',
      message: 'at most 262144 bytes',
    });
  });

  it('the inbox refuses a reason it cannot store, deciding nothing', async () => {
    const signIn = await fetch(`${api.url}/inbox/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: token('b') }),
      redirect: 'manual',
    });
    expect(signIn.status).toBe(303);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0];
    const page = await (await fetch(`${api.url}/inbox`, { headers: { cookie } })).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1];
    const refused = await fetch(`${api.url}/inbox/conversations/x/decisions`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf, callKey: 'x/msg-1/call-0', decision: 'reject', reason: 'not\u0000now' }),
      redirect: 'manual',
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('The reason contains U+0000 (NUL) at offset 3');
  });
});

describe("the document's pattern for a message's text", () => {
  it('accepts exactly the texts the API takes: some character other than white space, and no U+0000', () => {
    const pattern = new RegExp(NON_BLANK_PATTERN, 'u');
    let checked = 0;
    for (let code = 0; code <= 0xffff; code++) {
      if (code >= 0xd800 && code <= 0xdfff) continue; // unpaired surrogates: refused by the API, stated in the description
      const c = String.fromCharCode(code);
      for (const text of [c, ` ${c}\n`, `a${c}`]) {
        expect(pattern.test(text), JSON.stringify(text)).toBe(messageBody.shape.text.safeParse(text).success);
        checked++;
      }
    }
    expect(checked).toBe(3 * (0x10000 - 0x800));
  });
});
