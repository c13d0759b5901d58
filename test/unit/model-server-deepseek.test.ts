import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startModelServer, type ModelServer } from '../../src/testing';
import { DEEPSEEK_TOOL_CALLS_NOT_ANSWERED_MESSAGE, ORPHAN_TOOL_MESSAGE } from '../../src/testing/validate';

let server: ModelServer;
let client: OpenAI;

beforeAll(async () => {
  server = await startModelServer({ dialect: 'deepseek', responder: () => ({ content: 'ok' }) });
  client = new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 });
});

afterAll(async () => {
  await server.close();
});

const call = (id: string) => ({ id, type: 'function', function: { name: 'lookup', arguments: '{}' } });

async function rejection(messages: unknown[]): Promise<InstanceType<typeof OpenAI.BadRequestError>> {
  const before = server.requests.length;
  const outcome = await client.chat.completions.create({ model: 'deepseek-chat', messages } as never).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(outcome).toBeInstanceOf(OpenAI.BadRequestError);
  expect(server.requests[before].valid).toBe(false);
  return outcome as InstanceType<typeof OpenAI.BadRequestError>;
}

describe('the DeepSeek dialect', () => {
  it("answers unanswered tool calls with DeepSeek's own error body", async () => {
    const err = await rejection([
      { role: 'user', content: 'Two lookups' },
      { role: 'assistant', content: null, tool_calls: [call('call_0'), call('call_1')] },
      { role: 'tool', tool_call_id: 'call_0', content: 'zero' },
      { role: 'user', content: 'well?' },
    ]);
    expect(err.status).toBe(400);
    expect(err.message).toBe(`400 ${DEEPSEEK_TOOL_CALLS_NOT_ANSWERED_MESSAGE}`);
    expect(err.type).toBe('invalid_request_error');
    expect(err.param).toBeNull();
    expect(err.code).toBe('invalid_request_error');
    expect(server.requests[server.requests.length - 1].error).toEqual({
      status: 400,
      body: {
        error: {
          message: DEEPSEEK_TOOL_CALLS_NOT_ANSWERED_MESSAGE,
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_request_error',
        },
      },
    });
  });

  it('uses the same DeepSeek body when the transcript ends with tool calls still open', async () => {
    const err = await rejection([
      { role: 'user', content: 'Look it up' },
      { role: 'assistant', content: '', tool_calls: [call('call_0')] },
    ]);
    expect(err.message).toBe(`400 ${DEEPSEEK_TOOL_CALLS_NOT_ANSWERED_MESSAGE}`);
    expect(err.code).toBe('invalid_request_error');
  });

  it('still rejects an orphan tool message', async () => {
    const err = await rejection([
      { role: 'user', content: 'hi' },
      { role: 'tool', tool_call_id: 'call_0', content: 'x' },
    ]);
    expect(err.message).toBe(`400 ${ORPHAN_TOOL_MESSAGE}`);
    expect(err.message).toContain('must be a response to a prece');
  });

  it('does not ask for reasoning_content outside thinking mode', async () => {
    const completion = await client.chat.completions.create({
      model: 'deepseek-chat',
      messages: [
        { role: 'user', content: 'Look it up' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_0', content: 'found' },
      ],
      tools: [{ type: 'function', function: { name: 'lookup' } }],
      tool_choice: 'required',
    });
    expect(completion.choices[0].message.content).toBe('ok');
    expect(server.requests[server.requests.length - 1].valid).toBe(true);
  });
});
