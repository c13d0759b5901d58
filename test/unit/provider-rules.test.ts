import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { describeUnusableOutputSchema, resolveOutputSpec, resolveTypedOutput } from '../../src/common/typed-output';
import { describeInvalidInput } from '../../src/contract/conversation-input-checks';
import {
  describeRefusedByProviders,
  describeUnsendableModelSettings,
  describeUnsendableOutputSchema,
  PROVIDER_LIMITS,
} from '../../src/contract/provider-rules';
import { validateResponsesRequest } from '../../src/testing/responses-validate';
import { validateChatRequest } from '../../src/testing/validate';
import { agent, AgentRegistry } from '../../src/tools/agents';
import { ToolRegistry } from '../../src/tools/registry';

// What a provider refuses for certain, said before anything is sent, by the
// one check the client, a fork, the HTTP API and the worker share
// (src/contract/provider-rules.ts), and the scripted model server refusing
// the same requests as OpenAI does when one is sent anyway.

const closed = {
  type: 'object',
  properties: { priority: { type: 'string', enum: ['low', 'high'] } },
  required: ['priority'],
  additionalProperties: false,
};
const open = { type: 'object', properties: { priority: { type: 'string' } } };

describe('model settings a provider refuses', () => {
  it('a temperature outside 0 to 2, on either API or none named, naming the limit and the fix', () => {
    expect(describeUnsendableModelSettings({ temperature: 2.5 }, undefined, 'input.model')).toEqual([
      "input.model.temperature must be from 0 to 2, the range the model APIs take (OpenAI and DeepSeek refuse any other), got 2.5: give a number from 0 (steadiest) to 2, or leave it out for the provider's default",
    ]);
    expect(describeUnsendableModelSettings({ temperature: -0.1 }, 'chat')).toHaveLength(1);
    expect(describeUnsendableModelSettings({ temperature: -0.1 }, 'responses')).toHaveLength(1);
    for (const temperature of [0, 0.7, 2]) expect(describeUnsendableModelSettings({ temperature }, 'chat')).toEqual([]);
  });

  it('maxTokens below 16 on the Responses API only; Chat Completions takes any positive integer', () => {
    expect(PROVIDER_LIMITS.minMaxTokens).toEqual({ chat: 1, responses: 16 });
    expect(describeUnsendableModelSettings({ maxTokens: 10 }, 'responses')).toEqual([
      'model.maxTokens must be at least 16 on the Responses API (OpenAI refuses a max_output_tokens below 16), got 10: give 16 or more, or leave it out',
    ]);
    expect(describeUnsendableModelSettings({ maxTokens: 16 }, 'responses')).toEqual([]);
    expect(describeUnsendableModelSettings({ maxTokens: 1 }, 'chat')).toEqual([]);
    // Which API the worker will use is not known here: only the worker's own check before a call sees it.
    expect(describeUnsendableModelSettings({ maxTokens: 10 }, undefined)).toEqual([]);
    // Wrong types are the shape checks' to say.
    expect(describeUnsendableModelSettings({ maxTokens: 'ten', temperature: 'hot' }, 'responses')).toEqual([]);
  });
});

describe('typed output schemas a provider refuses', () => {
  it('a root that is not an object, whatever it holds', () => {
    const [problem] = describeUnsendableOutputSchema({ a: [], b: null });
    expect(problem).toBe(
      'output.schema must describe an object, with "type": "object" at its root (structured outputs take no other root; OpenAI refuses it), got no "type": ' +
        'put the value in an object, e.g. {"type": "object", "properties": {"value": <this schema>}, "required": ["value"], "additionalProperties": false}',
    );
    expect(describeUnsendableOutputSchema({ type: 'array', items: closed })[0]).toMatch(
      /^output.schema must describe an object.*got "type": "array"/,
    );
    expect(describeUnsendableOutputSchema({ ...open, type: ['object', 'null'] })).toHaveLength(1);
    expect(describeUnsendableOutputSchema({ anyOf: [closed] })).toHaveLength(1);
    // An object that is not closed is taken: the worker sends it with strict: false.
    expect(describeUnsendableOutputSchema(open)).toEqual([]);
    expect(describeUnsendableOutputSchema(closed, 'input.output.schema')).toEqual([]);
  });

  it('the worker sends strict only what keeps the strict rules strict tools keep, and refuses a root that is no object', () => {
    expect(resolveOutputSpec({ schema: closed }).strict).toBe(true);
    expect(resolveOutputSpec({ schema: open }).strict).toBe(false);
    // Not closed where the old rule did not look (a oneOf branch), or closed but with a keyword strict mode refuses:
    // sent without strict, which providers take, rather than strict, which they refuse.
    const inOneOf = {
      ...closed,
      properties: { priority: { oneOf: [{ type: 'object', properties: { level: { type: 'string' } } }] } },
    };
    expect(resolveOutputSpec({ schema: inOneOf }).strict).toBe(false);
    const withLength = { ...closed, properties: { priority: { type: 'string', minLength: 1 } } };
    expect(resolveOutputSpec({ schema: withLength }).strict).toBe(false);
    expect(() => resolveOutputSpec({ schema: { a: [], b: null } })).toThrow(
      /^ConversationInput.output: the output schema must describe an object/,
    );
    expect(() => resolveTypedOutput(z.array(z.string()), { what: 'ask' })).toThrow(
      /^ask: the output schema must describe an object.*got "type": "array"/,
    );
    expect(resolveTypedOutput(z.object({ n: z.number().int() }), { what: 'ask' }).strict).toBe(true);
  });

  it("the API's and the client's check: what a provider refuses, else that it does not compile, naming the field", () => {
    expect(describeUnusableOutputSchema({ schema: { a: [], b: null } }, 'input.output')[0]).toMatch(
      /^input.output.schema must describe an object/,
    );
    expect(
      describeUnusableOutputSchema(
        { schema: { type: 'object', properties: { n: { type: 'integr' } } } },
        'input.output',
      ),
    ).toEqual([expect.stringMatching(/^input.output.schema cannot be compiled as JSON Schema: /)]);
    expect(describeUnusableOutputSchema({ schema: open }, 'output')).toEqual([]);
  });
});

describe("a conversation's input", () => {
  const bad = {
    model: { api: 'responses', maxTokens: 10, temperature: 3 },
    output: { schema: { a: [], b: null } },
  };

  it('the client, a fork and the API ask describeInvalidInput with providers; the workflow at start does not', () => {
    expect(describeInvalidInput(bad, { providers: true })).toEqual([
      expect.stringMatching(/^model.temperature must be from 0 to 2/),
      expect.stringMatching(/^model.maxTokens must be at least 16 on the Responses API/),
      expect.stringMatching(/^output.schema must describe an object/),
    ]);
    // A run begun with such an input replays as it ran: the workflow's own check is unchanged.
    expect(describeInvalidInput(bad)).toEqual([]);
    expect(describeRefusedByProviders({ model: { maxTokens: 10 } })).toEqual([]);
    expect(describeRefusedByProviders({ model: { api: 'chat', maxTokens: 10 } })).toEqual([]);
    expect(describeRefusedByProviders({ output: { schema: open } })).toEqual([]);
    expect(describeRefusedByProviders('not an input')).toEqual([]);
  });
});

describe("an agent's declaration", () => {
  const tools = new ToolRegistry([]);

  it('refuses an output type that is not an object and model settings a provider refuses, naming the agent', () => {
    expect(() => new AgentRegistry([agent({ name: 'lister', outputType: z.array(z.string()) })], tools)).toThrow(
      /^Agent "lister": the output schema must describe an object.*got "type": "array"/,
    );
    expect(() => new AgentRegistry([agent({ name: 'hot', modelSettings: { temperature: 3 } })], tools)).toThrow(
      /^Agent "hot": modelSettings.temperature must be from 0 to 2/,
    );
    expect(
      () => new AgentRegistry([agent({ name: 'terse', modelSettings: { api: 'responses', maxTokens: 8 } })], tools),
    ).toThrow(/^Agent "terse": modelSettings.maxTokens must be at least 16 on the Responses API/);
    expect(
      new AgentRegistry(
        [agent({ name: 'fine', modelSettings: { api: 'chat', maxTokens: 8, temperature: 2 } })],
        tools,
      ).names(),
    ).toEqual(['fine']);
  });
});

describe('the scripted model server refuses them as OpenAI does', () => {
  const messages = [{ role: 'user', content: 'hi' }];

  it('Chat Completions: temperature, top_p and max_tokens out of range; a strict response format whose root is no object', () => {
    expect(validateChatRequest({ model: 'm', messages, temperature: 3 })?.body.error).toEqual({
      message: "Invalid 'temperature': integer above maximum value. Expected a value <= 2, but got 3 instead.",
      type: 'invalid_request_error',
      param: 'temperature',
      code: 'integer_above_max_value',
    });
    expect(validateChatRequest({ model: 'm', messages, temperature: -0.5 })?.body.error).toMatchObject({
      message: "Invalid 'temperature': decimal below minimum value. Expected a value >= 0, but got -0.5 instead.",
      code: 'decimal_below_min_value',
    });
    expect(validateChatRequest({ model: 'm', messages, top_p: 1.5 })?.body.error.param).toBe('top_p');
    expect(validateChatRequest({ model: 'm', messages, max_tokens: 0 })?.body.error.param).toBe('max_tokens');
    expect(validateChatRequest({ model: 'm', messages, temperature: 2, max_tokens: 1 })).toBeNull();
    const format = (schema: unknown) => ({
      model: 'm',
      messages,
      response_format: { type: 'json_schema', json_schema: { name: 'out', strict: true, schema } },
    });
    expect(validateChatRequest(format({ a: [], b: null }))?.body.error).toMatchObject({
      message: `Invalid schema for response_format 'out': schema must be a JSON Schema of 'type: "object"', got 'type: "undefined"'.`,
      param: 'response_format',
    });
    expect(validateChatRequest(format(closed))).toBeNull();
    // A closed schema with a keyword strict mode refuses, as OpenAI refuses it; the worker sends it without strict.
    expect(
      validateChatRequest(format({ ...closed, properties: { priority: { type: 'string', minLength: 1 } } }))?.body.error
        .message,
    ).toBe(
      "Invalid schema for response_format 'out': In context=('properties', 'priority'), 'minLength' is not permitted.",
    );
  });

  it('the Responses API: max_output_tokens below 16', () => {
    expect(validateResponsesRequest({ model: 'm', input: 'hi', max_output_tokens: 10 })?.body.error).toEqual({
      message: "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got 10 instead.",
      type: 'invalid_request_error',
      param: 'max_output_tokens',
      code: 'integer_below_min_value',
    });
    expect(validateResponsesRequest({ model: 'm', input: 'hi', max_output_tokens: 16, temperature: 0 })).toBeNull();
    expect(validateResponsesRequest({ model: 'm', input: 'hi', temperature: 2.5 })?.body.error.param).toBe(
      'temperature',
    );
  });
});
