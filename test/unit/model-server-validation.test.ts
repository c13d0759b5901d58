import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startModelServer, validateChatRequest, type ModelServer } from '../../src/testing';
import {
  ASSISTANT_CONTENT_NULL_MESSAGE,
  BODY_NOT_OBJECT_MESSAGE,
  INVALID_JSON_MESSAGE,
  MODEL_REQUIRED_MESSAGE,
  ORPHAN_TOOL_MESSAGE,
  PARALLEL_TOOL_CALLS_WITHOUT_TOOLS_MESSAGE,
  STREAM_OPTIONS_WITHOUT_STREAM_MESSAGE,
  TOOL_CHOICE_WITHOUT_TOOLS_MESSAGE,
  duplicateToolCallIdMessage,
  toolCallsNotAnsweredMessage,
} from '../../src/testing/validate';

let server: ModelServer;
let client: OpenAI;

beforeAll(async () => {
  server = await startModelServer();
  server.setResponder(() => ({ content: 'ok' }));
  client = new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 });
});

afterAll(async () => {
  await server.close();
});

interface ExpectedError {
  message: string;
  param?: string | null;
  code?: string | null;
  type?: string;
}

type Body = Record<string, unknown>;

function toolCall(id: string, name = 'lookup', args = '{}'): Body {
  return { id, type: 'function', function: { name, arguments: args } };
}

function tool(name = 'lookup'): Body {
  return { type: 'function', function: { name, parameters: { type: 'object', properties: {} } } };
}

function chat(messages: unknown[], extra: Body = {}): Body {
  return { model: 'gpt-test', messages, ...extra };
}

async function expectRejected(body: unknown, expected: ExpectedError): Promise<void> {
  const before = server.requests.length;
  const outcome = await client.chat.completions.create(body as never).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(outcome).toBeInstanceOf(OpenAI.BadRequestError);
  const err = outcome as InstanceType<typeof OpenAI.BadRequestError>;
  const error = {
    message: expected.message,
    type: expected.type ?? 'invalid_request_error',
    param: expected.param ?? null,
    code: expected.code ?? null,
  };
  expect(err.status).toBe(400);
  expect(err.message).toBe(`400 ${error.message}`);
  expect(err.type).toBe(error.type);
  expect(err.param).toBe(error.param);
  expect(err.code).toBe(error.code);

  expect(server.requests).toHaveLength(before + 1);
  const recorded = server.requests[before];
  expect(recorded.valid).toBe(false);
  expect(recorded.error).toEqual({ status: 400, body: { error } });
  expect(recorded.reply).toBeUndefined();
  expect(server.invalidRequests()).toContain(recorded);
}

async function expectAccepted(body: Body): Promise<void> {
  const invalidBefore = server.invalidRequests().length;
  const completion = await client.chat.completions.create(body as never);
  expect(completion.choices[0].message.content).toBe('ok');
  expect(server.invalidRequests()).toHaveLength(invalidBefore);
  expect(server.requests[server.requests.length - 1].valid).toBe(true);
}

describe('the basic request shape', () => {
  it('rejects a request without a model', async () => {
    await expectRejected({ messages: [{ role: 'user', content: 'hi' }] }, { message: MODEL_REQUIRED_MESSAGE });
  });

  it('rejects a request whose model is an empty string', async () => {
    await expectRejected(chat([{ role: 'user', content: 'hi' }], { model: '' }), { message: MODEL_REQUIRED_MESSAGE });
  });

  it('rejects a request without messages', async () => {
    await expectRejected(
      { model: 'gpt-test' },
      { message: "Missing required parameter: 'messages'.", param: 'messages', code: 'missing_required_parameter' },
    );
  });

  it('rejects an empty messages array', async () => {
    await expectRejected(chat([]), {
      message:
        "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      param: 'messages',
      code: 'empty_array',
    });
  });

  it('rejects a message with an unknown role', async () => {
    await expectRejected(
      chat([
        { role: 'user', content: 'hi' },
        { role: 'robot', content: 'beep' },
      ]),
      {
        message:
          "Invalid value: 'robot'. Supported values are: 'system', 'user', 'assistant', 'tool', and 'developer'.",
        param: 'messages[1].role',
        code: 'invalid_value',
      },
    );
  });

  it("rejects a participant name outside letters, digits, '_' and '-', and accepts one within", async () => {
    await expectRejected(
      chat([
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello', name: 'refunds desk' },
        { role: 'user', content: 'and?' },
      ]),
      {
        message:
          "Invalid 'messages[1].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
        param: 'messages[1].name',
        code: 'invalid_value',
      },
    );
    await expectAccepted(
      chat([
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello', name: 'refunds_desk' },
        { role: 'user', content: 'and?' },
      ]),
    );
  });

  it('rejects a message without a role', async () => {
    await expectRejected(chat([{ content: 'hi' }]), {
      message: "Missing required parameter: 'messages[0].role'.",
      param: 'messages[0].role',
      code: 'missing_required_parameter',
    });
  });

  it('rejects a body that is not valid JSON and records it as invalid', async () => {
    const before = server.requests.length;
    const response = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model": "gpt-test", "messages": [',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: { message: INVALID_JSON_MESSAGE, type: 'invalid_request_error', param: null, code: null },
    });
    expect(server.requests[before].valid).toBe(false);
    expect(server.requests[before].body).toBe('{"model": "gpt-test", "messages": [');
  });

  it('rejects a JSON body that is not an object', async () => {
    const before = server.requests.length;
    const response = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '[1, 2, 3]',
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe(BODY_NOT_OBJECT_MESSAGE);
    expect(server.requests[before].valid).toBe(false);
  });
});

describe('tool calls must be answered', () => {
  it('rejects a user message that arrives before every tool call is answered', async () => {
    await expectRejected(
      chat([
        { role: 'user', content: 'Weather in Oslo and Rome?' },
        { role: 'assistant', content: null, tool_calls: [toolCall('call_oslo'), toolCall('call_rome')] },
        { role: 'tool', tool_call_id: 'call_oslo', content: '4°C' },
        { role: 'user', content: 'And?' },
      ]),
      { message: toolCallsNotAnsweredMessage(['call_rome']), param: 'messages.[3].role' },
    );
  });

  it('names every unanswered tool call id, joined with a comma', async () => {
    const body = chat([
      { role: 'user', content: 'Three lookups please' },
      { role: 'assistant', content: null, tool_calls: [toolCall('call_a'), toolCall('call_b'), toolCall('call_c')] },
      { role: 'tool', tool_call_id: 'call_b', content: 'b' },
      { role: 'assistant', content: 'Done.' },
    ]);
    await expectRejected(body, {
      message:
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_a, call_c",
      param: 'messages.[3].role',
    });
  });

  it('rejects a transcript that ends with tool calls still open, pointing at the assistant message', async () => {
    await expectRejected(
      chat([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Look it up' },
        { role: 'assistant', content: null, tool_calls: [toolCall('call_open')] },
      ]),
      { message: toolCallsNotAnsweredMessage(['call_open']), param: 'messages.[2].role' },
    );
  });

  it('rejects a tool message with no tool call before it', async () => {
    await expectRejected(
      chat([
        { role: 'user', content: 'hi' },
        { role: 'tool', tool_call_id: 'call_nowhere', content: 'result' },
      ]),
      { message: ORPHAN_TOOL_MESSAGE, param: 'messages.[1].role' },
    );
  });

  it('rejects a tool message that comes after the tool calls were closed by a user message', async () => {
    await expectRejected(
      chat([
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: null, tool_calls: [toolCall('call_1')] },
        { role: 'tool', tool_call_id: 'call_1', content: 'one' },
        { role: 'user', content: 'thanks' },
        { role: 'tool', tool_call_id: 'call_1', content: 'one again' },
      ]),
      { message: ORPHAN_TOOL_MESSAGE, param: 'messages.[4].role' },
    );
  });

  it('rejects two tool messages answering the same tool call id', async () => {
    const message = duplicateToolCallIdMessage('call_x', 7, 8);
    expect(message).toBe(
      "Invalid parameter: Duplicate value for 'tool_call_id' of 'call_x', in messages[7] and messages[8].",
    );
    await expectRejected(
      chat([
        { role: 'system', content: 'You are helpful.' },
        { role: 'user', content: 'first' },
        { role: 'assistant', content: null, tool_calls: [toolCall('call_1')] },
        { role: 'tool', tool_call_id: 'call_1', content: 'one' },
        { role: 'assistant', content: 'Here you go.' },
        { role: 'user', content: 'second' },
        { role: 'assistant', content: null, tool_calls: [toolCall('call_x'), toolCall('call_y')] },
        { role: 'tool', tool_call_id: 'call_x', content: 'x' },
        { role: 'tool', tool_call_id: 'call_x', content: 'x again' },
        { role: 'tool', tool_call_id: 'call_y', content: 'y' },
      ]),
      { message, param: 'messages.[8].tool_call_id' },
    );
  });

  it('accepts parallel tool calls answered in any order, followed by a user message', async () => {
    await expectAccepted(
      chat(
        [
          { role: 'system', content: 'You are helpful.' },
          { role: 'user', content: 'Weather in Oslo and Rome?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [toolCall('call_oslo', 'weather'), toolCall('call_rome', 'weather')],
          },
          { role: 'tool', tool_call_id: 'call_rome', content: [{ type: 'text', text: '18°C' }] },
          { role: 'tool', tool_call_id: 'call_oslo', content: '4°C' },
          { role: 'assistant', content: 'Oslo 4°C, Rome 18°C.' },
          { role: 'user', content: 'Thanks!' },
        ],
        { tools: [tool('weather')], tool_choice: 'auto', parallel_tool_calls: true },
      ),
    );
  });

  it('accepts a transcript that ends with all tool results, ready for the next model turn', async () => {
    await expectAccepted(
      chat(
        [
          { role: 'developer', content: 'Use tools.' },
          { role: 'user', content: 'Look it up' },
          { role: 'assistant', content: 'Checking.', tool_calls: [toolCall('call_1')] },
          { role: 'tool', tool_call_id: 'call_1', content: 'found' },
        ],
        { tools: [tool()], tool_choice: { type: 'function', function: { name: 'lookup' } } },
      ),
    );
  });
});

describe('assistant messages', () => {
  it('rejects an assistant message whose content is null without tool calls', async () => {
    await expectRejected(
      chat([
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: null },
      ]),
      { message: ASSISTANT_CONTENT_NULL_MESSAGE, param: 'messages.[1].content' },
    );
  });

  it('rejects an assistant message with an empty tool_calls array', async () => {
    await expectRejected(
      chat([
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello', tool_calls: [] },
      ]),
      {
        message:
          "Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        param: 'messages[1].tool_calls',
        code: 'empty_array',
      },
    );
  });

  it('rejects a tool call id longer than 40 characters', async () => {
    const id = `call_${'a'.repeat(36)}`;
    await expectRejected(
      chat([
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: null, tool_calls: [toolCall(id)] },
        { role: 'tool', tool_call_id: id, content: 'x' },
      ]),
      {
        message:
          "Invalid 'messages[1].tool_calls[0].id': string too long. Expected a string with maximum length 40, but got a string with length 41 instead.",
        param: 'messages[1].tool_calls[0].id',
        code: 'string_above_max_length',
      },
    );
  });

  it('rejects a tool call whose function name has a space in it', async () => {
    await expectRejected(
      chat([
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: null, tool_calls: [toolCall('call_1', 'look up')] },
        { role: 'tool', tool_call_id: 'call_1', content: 'x' },
      ]),
      {
        message:
          "Invalid 'messages[1].tool_calls[0].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
        param: 'messages[1].tool_calls[0].function.name',
        code: 'invalid_value',
      },
    );
  });

  it('rejects tool call arguments that are an object instead of a JSON string', async () => {
    await expectRejected(
      chat([
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: { q: 1 } } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'x' },
      ]),
      {
        message:
          "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, but got an object instead.",
        param: 'messages[1].tool_calls[0].function.arguments',
        code: 'invalid_type',
      },
    );
  });
});

describe('tool definitions and tool choice', () => {
  it('rejects a tool whose name does not match the allowed pattern', async () => {
    await expectRejected(chat([{ role: 'user', content: 'hi' }], { tools: [tool('get weather!')] }), {
      message:
        "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
      param: 'tools[0].function.name',
      code: 'invalid_value',
    });
  });

  it('rejects a tool name longer than 64 characters', async () => {
    await expectRejected(chat([{ role: 'user', content: 'hi' }], { tools: [tool('ok'), tool('n'.repeat(65))] }), {
      message:
        "Invalid 'tools[1].function.name': string too long. Expected a string with maximum length 64, but got a string with length 65 instead.",
      param: 'tools[1].function.name',
      code: 'string_above_max_length',
    });
  });

  it('rejects more than 128 tools', async () => {
    const tools = Array.from({ length: 129 }, (_, k) => tool(`tool_${k}`));
    await expectRejected(chat([{ role: 'user', content: 'hi' }], { tools }), {
      message:
        "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 129 instead.",
      param: 'tools',
      code: 'array_above_max_length',
    });
  });

  it('accepts exactly 128 tools with 64-character names', async () => {
    const tools = Array.from({ length: 128 }, (_, k) => tool(`t${String(k).padStart(3, '0')}`.padEnd(64, '_')));
    await expectAccepted(chat([{ role: 'user', content: 'hi' }], { tools }));
  });

  it('rejects an empty tools array', async () => {
    await expectRejected(chat([{ role: 'user', content: 'hi' }], { tools: [] }), {
      message: "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      param: 'tools',
      code: 'empty_array',
    });
  });

  it('rejects tool_choice when no tools are given', async () => {
    await expectRejected(chat([{ role: 'user', content: 'hi' }], { tool_choice: 'auto' }), {
      message: TOOL_CHOICE_WITHOUT_TOOLS_MESSAGE,
      param: 'tool_choice',
    });
  });

  it('rejects parallel_tool_calls when no tools are given', async () => {
    await expectRejected(chat([{ role: 'user', content: 'hi' }], { parallel_tool_calls: false }), {
      message: PARALLEL_TOOL_CALLS_WITHOUT_TOOLS_MESSAGE,
      param: 'parallel_tool_calls',
    });
  });

  it('rejects a tool_choice value that is not none, auto, required or a named function', async () => {
    await expectRejected(chat([{ role: 'user', content: 'hi' }], { tools: [tool()], tool_choice: 'always' }), {
      message: "Invalid value: 'always'. Supported values are: 'none', 'auto', and 'required'.",
      param: 'tool_choice',
      code: 'invalid_value',
    });
  });

  it('rejects a named tool_choice without a function name', async () => {
    await expectRejected(
      chat([{ role: 'user', content: 'hi' }], { tools: [tool()], tool_choice: { type: 'function' } }),
      {
        message: "Missing required parameter: 'tool_choice.function'.",
        param: 'tool_choice.function',
        code: 'missing_required_parameter',
      },
    );
  });

  it('accepts tool_choice required when tools are given', async () => {
    await expectAccepted(chat([{ role: 'user', content: 'hi' }], { tools: [tool()], tool_choice: 'required' }));
  });

  it('rejects stream_options on a request that does not stream', async () => {
    await expectRejected(chat([{ role: 'user', content: 'hi' }], { stream_options: { include_usage: true } }), {
      message: STREAM_OPTIONS_WITHOUT_STREAM_MESSAGE,
      param: 'stream_options',
    });
  });
});

describe('tool message content', () => {
  const before = [
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: null, tool_calls: [toolCall('call_1')] },
  ];

  it('rejects tool message content that is an object', async () => {
    await expectRejected(chat([...before, { role: 'tool', tool_call_id: 'call_1', content: { result: 42 } }]), {
      message:
        "Invalid type for 'messages[2].content': expected one of a string or array of objects, but got an object instead.",
      param: 'messages[2].content',
      code: 'invalid_type',
    });
  });

  it('rejects a tool message content part that is not text', async () => {
    await expectRejected(
      chat([
        ...before,
        { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'image_url', image_url: { url: 'x' } }] },
      ]),
      {
        message: "Invalid value: 'image_url'. Supported values are: 'text'.",
        param: 'messages[2].content[0].type',
        code: 'invalid_value',
      },
    );
  });

  it('rejects a tool message without a tool_call_id', async () => {
    await expectRejected(chat([...before, { role: 'tool', content: 'x' }]), {
      message: "Missing required parameter: 'messages[2].tool_call_id'.",
      param: 'messages[2].tool_call_id',
      code: 'missing_required_parameter',
    });
  });
});

describe('bookkeeping around invalid requests', () => {
  it('does not spend a queued reply on an invalid request', async () => {
    server.enqueue({ content: 'the queued reply' });
    await expectRejected(chat([{ role: 'tool', tool_call_id: 'call_1', content: 'x' }]), {
      message: ORPHAN_TOOL_MESSAGE,
      param: 'messages.[0].role',
    });
    const completion = await client.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.choices[0].message.content).toBe('the queued reply');
  });

  it('lists exactly the rejected requests as invalid', () => {
    const invalid = server.invalidRequests();
    expect(invalid.length).toBeGreaterThan(0);
    expect(invalid.every((r) => !r.valid && r.error?.status === 400)).toBe(true);
    expect(server.requests.filter((r) => r.valid).every((r) => r.error === undefined)).toBe(true);
  });

  it('can be called directly without a server', () => {
    expect(validateChatRequest(null)?.body.error.message).toBe(BODY_NOT_OBJECT_MESSAGE);
    expect(validateChatRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })).toBeNull();
  });
});

describe('response_format', () => {
  const strict = (schema: Body, name = 'refund_decision') => ({
    response_format: { type: 'json_schema', json_schema: { name, strict: true, schema } },
  });
  const user = [{ role: 'user', content: 'decide' }];

  it('accepts a strict schema whose every object lists every property as required and allows no others', async () => {
    await expectAccepted(
      chat(user, {
        ...strict({
          type: 'object',
          properties: {
            approve: { type: 'boolean' },
            lines: {
              type: 'array',
              items: {
                type: 'object',
                properties: { sku: { type: 'string' } },
                required: ['sku'],
                additionalProperties: false,
              },
            },
          },
          required: ['approve', 'lines'],
          additionalProperties: false,
        }),
      }),
    );
    await expectAccepted(chat(user, { response_format: { type: 'json_object' } }));
  });

  it('refuses a strict schema without additionalProperties: false, or with a property left out of required, naming where, as OpenAI does', async () => {
    await expectRejected(
      chat(user, strict({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] })),
      {
        message:
          "Invalid schema for response_format 'refund_decision': In context=(), 'additionalProperties' is required to be supplied and to be false.",
        param: 'response_format',
      },
    );
    await expectRejected(
      chat(
        user,
        strict({
          type: 'object',
          properties: {
            orgs: {
              type: 'array',
              items: {
                type: 'object',
                properties: { name: { type: 'string' }, roles: { type: 'string' } },
                required: ['name'],
                additionalProperties: false,
              },
            },
          },
          required: ['orgs'],
          additionalProperties: false,
        }),
      ),
      {
        message:
          "Invalid schema for response_format 'refund_decision': In context=('properties', 'orgs', 'items'), 'required' is required to be supplied and to be an array including every key in properties. Missing 'roles'.",
        param: 'response_format',
      },
    );
  });

  it('refuses an unknown type and a schema without a name', async () => {
    await expectRejected(chat(user, { response_format: { type: 'xml' } }), {
      message: "Invalid value: 'xml'. Supported values are: 'text', 'json_object', and 'json_schema'.",
      param: 'response_format.type',
      code: 'invalid_value',
    });
    await expectRejected(
      chat(user, { response_format: { type: 'json_schema', json_schema: { strict: true, schema: {} } } }),
      {
        message: "Missing required parameter: 'response_format.json_schema.name'.",
        param: 'response_format.json_schema.name',
        code: 'missing_required_parameter',
      },
    );
  });
});
