import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { InvalidConversationInputError } from '../../src/common/errors';
import { apiCaller, TEST_TOKENS, token } from '../support/api';
import { startHarness, type Harness } from '../support/harness';

// What a model provider refuses for certain is refused at our door: a typed
// output's schema that is no object or does not compile; maxTokens below the
// Responses API's 16; a temperature outside 0 to 2. A schema outside the
// strict subset is not refused: the worker sends it without strict, which
// providers take. The HTTP API answers 400 naming the
// field, the limit and the fix, the client throws the same, and nothing
// reaches the (scripted) model server. The worker here speaks the Responses
// API by default, which the API cannot know: an input that leaves the API to
// the worker is checked by the worker before the call, failing the turn
// without sending anything.

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  h = await startHarness({ modelApi: 'responses' });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

const call = apiCaller(() => api.url);
const MESSAGES: [string, string] = ['post', '/v1/conversations/{id}/messages'];

/** The model requests whose body holds `marker` (each test's message text carries its own). */
const requestsWith = (marker: string) => h.model.requests.filter((r) => JSON.stringify(r.body).includes(marker));

const closed = {
  type: 'object',
  properties: { priority: { type: 'string', enum: ['low', 'high'] } },
  required: ['priority'],
  additionalProperties: false,
};

/**
 * Sends `input` with a message through the API and asserts the 400: its code, each of `words` in its message, the
 * status listed in the document, and that no conversation was started and no model request made.
 */
async function expectRefused(input: unknown, words: (string | RegExp)[]): Promise<string> {
  const id = h.newConversationId('refused');
  const marker = `MARK-${id}`;
  const answer = await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: marker, input });
  expect(answer.status, JSON.stringify(answer.json)).toBe(400);
  expect(answer.json.error.code).toBe('invalid_request');
  const message = answer.json.error.message as string;
  for (const word of words) expect(message).toMatch(word);
  const document = (await call('GET', '/openapi.json')).json;
  expect(document.paths[MESSAGES[1]][MESSAGES[0]].responses['400']).toBeDefined();
  expect((await call('GET', `/v1/conversations/${id}`, token('a'))).status).toBe(404);
  expect(requestsWith(marker)).toEqual([]);
  return message;
}

describe('the HTTP API refuses what the provider would, before anything is sent', () => {
  it('an output schema that is no object: 400 naming the field, the rule and the fix', async () => {
    await expectRefused({ output: { schema: { a: [], b: null } } }, [
      'input.output.schema must describe an object, with "type": "object" at its root',
      'got no "type"',
      'put the value in an object, e.g. {"type": "object", "properties": {"value": <this schema>}',
    ]);
    await expectRefused({ output: { schema: { type: 'array', items: { type: 'string' } } } }, ['got "type": "array"']);
  });

  it('an output schema that does not compile: 400 saying why', async () => {
    await expectRefused({ output: { schema: { type: 'object', properties: { n: { type: 'integr' } } } } }, [
      'input.output.schema cannot be compiled as JSON Schema',
      /data\/properties\/n\/type must be equal to one of the allowed values|must be equal to one of the allowed values/,
    ]);
  });

  it('maxTokens 10 on the Responses API, and a temperature over 2: 400 naming the limit and the fix', async () => {
    await expectRefused({ model: { api: 'responses', maxTokens: 10 } }, [
      'input.model.maxTokens must be at least 16 on the Responses API',
      'OpenAI refuses a max_output_tokens below 16',
      'got 10: give 16 or more, or leave it out',
    ]);
    await expectRefused({ model: { temperature: 3 } }, [
      'input.model.temperature must be from 0 to 2',
      'got 3: give a number from 0 (steadiest) to 2',
    ]);
  });

  it('the client refuses the same input with the same words, sending nothing', async () => {
    const marker = `MARK-${h.newConversationId('client')}`;
    const send = (input: object) => h.client.sendMessage(h.newConversationId('client'), marker, { input });
    await expect(send({ output: { schema: { a: [], b: null } } })).rejects.toThrow(InvalidConversationInputError);
    await expect(send({ output: { schema: { a: [], b: null } } })).rejects.toThrow(
      /^Invalid conversation input: output.schema must describe an object/,
    );
    await expect(send({ model: { api: 'responses', maxTokens: 10 } })).rejects.toThrow(
      /model.maxTokens must be at least 16 on the Responses API/,
    );
    await expect(
      send({ output: { schema: { type: 'object', properties: { n: { type: 'integr' } } } } }),
    ).rejects.toThrow(/^Invalid conversation input: output.schema cannot be compiled as JSON Schema/);
    expect(requestsWith(marker)).toEqual([]);
  });

  it('a fork whose input the provider would refuse is refused, nothing forked', async () => {
    const source = h.newConversationId('fork-src');
    h.model.enqueue({ content: 'Hello.' });
    await h.client.waitForTurn(source, await h.client.sendMessage(source, 'hi'));
    const target = h.newConversationId('fork-bad');
    await expect(
      h.client.fork(
        source,
        { seq: 1 },
        { conversationId: target, input: { model: { api: 'responses', maxTokens: 4 } } },
      ),
    ).rejects.toThrow(/^Invalid input for the fork: model.maxTokens must be at least 16 on the Responses API/);
    expect((await call('GET', `/v1/conversations/${target}`, token('a'))).status).toBe(404);
  });
});

describe('what the provider takes goes through', () => {
  it('a schema that is not closed, or closed but with a keyword strict mode refuses, is sent without strict; maxTokens 16 is the least sent', async () => {
    const from = h.model.requests.length;
    // Not closed inside a oneOf branch (where the worker's old rule did not look): once sent strict, which OpenAI refuses.
    const inOneOf = {
      ...closed,
      properties: { priority: { oneOf: [{ type: 'object', properties: { level: { type: 'string' } } }] } },
    };
    const withLength = { ...closed, properties: { priority: { type: 'string', minLength: 1 } } };
    const open = { type: 'object', properties: { priority: { type: 'string' } } };
    const answers: unknown[] = [];
    for (const schema of [closed, inOneOf, withLength, open]) {
      const id = h.newConversationId('typed');
      h.model.enqueue({ content: JSON.stringify(sample(schema)) });
      const sent = await call('POST', `/v1/conversations/${id}/messages`, token('a'), {
        text: 'triage',
        input: { model: { maxTokens: 16 }, output: { schema, name: 'ticket' } },
      });
      expect(sent.status, JSON.stringify(sent.json)).toBe(202);
      answers.push((await h.client.waitForTurn(id, sent.json.messageId)).outcome);
    }
    expect(answers).toEqual(['answered', 'answered', 'answered', 'answered']);
    const bodies = h.model.requests.slice(from).map((r) => r.body as Record<string, any>);
    expect(bodies.map((b) => [b.max_output_tokens, b.text?.format?.strict])).toEqual([
      [16, true],
      [16, false],
      [16, false],
      [16, false],
    ]);
    h.expectOnlyValidModelRequests();
  });
});

/** An answer each test schema takes. */
function sample(schema: { properties: { priority: unknown } }): unknown {
  return JSON.stringify(schema.properties.priority).includes('oneOf')
    ? { priority: { level: 'high' } }
    : { priority: 'high' };
}

describe('where the API cannot know the model API, the worker checks before the call', () => {
  it("maxTokens 10 left to the worker's Responses API: the turn fails saying why, and nothing is sent", async () => {
    const id = h.newConversationId('worker-api');
    const marker = `MARK-${id}`;
    const sent = await call('POST', `/v1/conversations/${id}/messages`, token('a'), {
      text: marker,
      input: { model: { maxTokens: 10 } },
    });
    expect(sent.status).toBe(202);
    const turn = await h.client.waitForTurn(id, sent.json.messageId);
    expect(turn.outcome).toBe('failed');
    expect(turn.error).toContain(
      "nothing was sent to the model, whose provider would refuse these settings (the conversation's input.model): " +
        'model.maxTokens must be at least 16 on the Responses API',
    );
    expect(requestsWith(marker)).toEqual([]);
    h.expectOnlyValidModelRequests();
  });
});
