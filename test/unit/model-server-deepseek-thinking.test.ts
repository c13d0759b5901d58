import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startModelServer, type ModelServer } from '../../src/testing';
import {
  DEEPSEEK_TOOL_CALLS_NOT_ANSWERED_MESSAGE,
  REASONING_CONTENT_REQUIRED_MESSAGE,
  THINKING_TOOL_CHOICE_MESSAGE,
} from '../../src/testing/validate';

let server: ModelServer;
let client: OpenAI;

beforeAll(async () => {
  server = await startModelServer({
    dialect: 'deepseek-thinking',
    responder: () => ({ content: 'ok', reasoningContent: 'thought' }),
  });
  client = new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 });
});

afterAll(async () => {
  await server.close();
});

type Body = Record<string, unknown>;

const call = (id: string) => ({ id, type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } });
const tools = [{ type: 'function', function: { name: 'lookup' } }];

async function expectDeepSeekRejection(body: Body, message: string): Promise<void> {
  const before = server.requests.length;
  const outcome = await client.chat.completions.create(body as never).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(outcome).toBeInstanceOf(OpenAI.BadRequestError);
  const err = outcome as InstanceType<typeof OpenAI.BadRequestError>;
  expect(err.status).toBe(400);
  expect(err.message).toBe(`400 ${message}`);
  expect(err.type).toBe('invalid_request_error');
  expect(err.param).toBeNull();
  expect(err.code).toBe('invalid_request_error');
  expect(server.requests[before].valid).toBe(false);
}

async function expectAccepted(body: Body): Promise<void> {
  const completion = await client.chat.completions.create(body as never);
  expect(completion.choices[0].message.content).toBe('ok');
  expect((completion.choices[0].message as unknown as { reasoning_content?: string }).reasoning_content).toBe(
    'thought',
  );
  expect(server.requests[server.requests.length - 1].valid).toBe(true);
}

describe('the DeepSeek thinking-mode dialect', () => {
  it('rejects a tool-calling assistant message of the current turn that dropped its reasoning_content', async () => {
    await expectDeepSeekRejection(
      {
        model: 'deepseek-reasoner',
        tools,
        messages: [
          { role: 'user', content: 'Look it up' },
          { role: 'assistant', content: null, tool_calls: [call('call_0')] },
          { role: 'tool', tool_call_id: 'call_0', content: 'found' },
        ],
      },
      REASONING_CONTENT_REQUIRED_MESSAGE,
    );
  });

  it('accepts an empty reasoning_content passed back', async () => {
    await expectAccepted({
      model: 'deepseek-reasoner',
      tools,
      messages: [
        { role: 'user', content: 'Look it up' },
        { role: 'assistant', content: null, reasoning_content: '', tool_calls: [call('call_0')] },
        { role: 'tool', tool_call_id: 'call_0', content: 'found' },
      ],
    });
  });

  it('does not require reasoning_content on tool calls from earlier turns', async () => {
    await expectAccepted({
      model: 'deepseek-reasoner',
      tools,
      messages: [
        { role: 'user', content: 'Look it up' },
        { role: 'assistant', content: null, tool_calls: [call('call_0')] },
        { role: 'tool', tool_call_id: 'call_0', content: 'found' },
        { role: 'assistant', content: 'It is found.' },
        { role: 'user', content: 'Now look up another' },
        { role: 'assistant', content: null, reasoning_content: 'need a second lookup', tool_calls: [call('call_1')] },
        { role: 'tool', tool_call_id: 'call_1', content: 'found too' },
      ],
    });
  });

  it('refuses tool_choice required', async () => {
    await expectDeepSeekRejection(
      { model: 'deepseek-reasoner', tools, tool_choice: 'required', messages: [{ role: 'user', content: 'hi' }] },
      THINKING_TOOL_CHOICE_MESSAGE,
    );
  });

  it('refuses a named tool_choice', async () => {
    await expectDeepSeekRejection(
      {
        model: 'deepseek-reasoner',
        tools,
        tool_choice: { type: 'function', function: { name: 'lookup' } },
        messages: [{ role: 'user', content: 'hi' }],
      },
      THINKING_TOOL_CHOICE_MESSAGE,
    );
  });

  it('accepts tool_choice auto', async () => {
    await expectAccepted({
      model: 'deepseek-reasoner',
      tools,
      tool_choice: 'auto',
      messages: [{ role: 'user', content: 'hi' }],
    });
  });

  it("answers unanswered tool calls with DeepSeek's body", async () => {
    await expectDeepSeekRejection(
      {
        model: 'deepseek-reasoner',
        tools,
        messages: [
          { role: 'user', content: 'Look it up' },
          { role: 'assistant', content: null, reasoning_content: 'r', tool_calls: [call('call_0')] },
          { role: 'user', content: 'hello?' },
        ],
      },
      DEEPSEEK_TOOL_CALLS_NOT_ANSWERED_MESSAGE,
    );
  });
});
