import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retryAfter } from '../../src/activities/completion';
import { startModelServer, type ModelServer } from '../../src/testing';
import { countPromptTokens } from '../../src/testing/context-window';

// The scripted model server's context window and rate-limit answers, through the real openai SDK.

let server: ModelServer;
let client: OpenAI;
beforeAll(async () => {
  server = await startModelServer({ contextWindow: 100 });
  client = new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 });
});
afterAll(async () => {
  await server.close();
});

const ask = (content: string) => ({ model: 'gpt-test', messages: [{ role: 'user' as const, content }] });

describe('the scripted model server', () => {
  it("answers a request over its context window with OpenAI's context_length_exceeded 400, and one within it normally", async () => {
    const long = 'order '.repeat(200);
    const tokens = countPromptTokens(ask(long));
    expect(tokens).toBeGreaterThan(100);
    const err = await client.chat.completions.create(ask(long)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({
      status: 400,
      code: 'context_length_exceeded',
      param: 'messages',
      type: 'invalid_request_error',
    });
    expect(server.requests.at(-1)?.error?.body).toEqual({
      error: {
        message: `This model's maximum context length is 100 tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
        type: 'invalid_request_error',
        param: 'messages',
        code: 'context_length_exceeded',
      },
    });
    server.enqueue({ content: 'short' });
    const ok = await client.chat.completions.create(ask('hi'));
    expect(ok.choices[0].message.content).toBe('short');
    expect(ok.usage?.prompt_tokens).toBe(countPromptTokens(ask('hi')));
    server.setContextWindow(undefined);
    server.enqueue({ content: 'no limit' });
    expect((await client.chat.completions.create(ask(long))).choices[0].message.content).toBe('no limit');
    expect(() => server.setContextWindow(0)).toThrow(
      'contextWindow must be a positive integer number of tokens, got 0.',
    );
  });

  it('sends the headers a scripted error asks for, such as Retry-After on a 429', async () => {
    server.enqueue({ kind: 'http_error', status: 429, headers: { 'retry-after': '2' } });
    const err = await client.chat.completions.create(ask('hi')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const headers = (err as InstanceType<typeof OpenAI.RateLimitError>).headers;
    expect(headers?.get('retry-after')).toBe('2');
    expect(retryAfter(headers)).toBe(2000);
  });
});

describe('retryAfter', () => {
  it('reads retry-after-ms, retry-after in seconds or as a date, and caps it at 10 minutes', () => {
    const now = Date.parse('2026-11-23T10:00:00Z');
    expect(retryAfter(new Headers({ 'retry-after-ms': '1500', 'retry-after': '9' }), now)).toBe(1500);
    expect(retryAfter(new Headers({ 'retry-after': '0.5' }), now)).toBe(500);
    expect(retryAfter(new Headers({ 'retry-after': 'Mon, 23 Nov 2026 10:00:30 GMT' }), now)).toBe(30_000);
    expect(retryAfter(new Headers({ 'retry-after': '86400' }), now)).toBe(600_000);
    expect(retryAfter(new Headers({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(retryAfter(undefined, now)).toBeUndefined();
  });
});
