import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { InvalidConversationInputError, OutputMismatchError } from '../../src/common/errors';
import { agent } from '../../src/tools/agents';
import { backofficeTools } from '../../src/demo/tools';
import type { TurnRecord } from '../../src/contract';
import { apiCaller, TEST_TOKENS, token } from '../support/api';
import { startHarness, type Harness } from '../support/harness';

// Typed final output on the real stack: the model is asked for JSON with
// response_format json_schema (validated by the scripted server as OpenAI
// does), each final answer is checked by the worker, a mismatch is said to
// the model and asked again, and the turn's record carries the value.

const ticket = z.object({
  order_id: z.string(),
  priority: z.enum(['low', 'high']),
  refund_cents: z.number().int().nullable(),
});
/** An agent whose output type has an optional field: outside the strict subset, so sent with strict: false. */
const summarizer = agent({
  name: 'summarizer',
  instructions: 'Summarize orders.',
  tools: ['list_orders'],
  outputType: z.object({ customer: z.string(), orders: z.array(z.string()), note: z.string().optional() }),
  outputRetries: 0,
});

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  h = await startHarness({ tools: backofficeTools(), agents: [summarizer] });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

const call = apiCaller(() => api.url);
type Wire = {
  messages: { role: string; content: string | null }[];
  response_format?: { type: string; json_schema: { name: string; strict: boolean; schema: unknown } };
};
/** The model requests made since `from`, as sent. */
const sentSince = (from: number) => h.model.requests.slice(from).map((r) => r.body as Wire);

describe('typed output', () => {
  it('ask() with a zod schema: the model is asked with strict structured output, and the output comes back parsed as the declared type', async () => {
    const from = h.model.requests.length;
    h.model.enqueue({ content: '{"order_id":"ord_2001","priority":"high","refund_cents":12000}' });
    const { turn, output, answer } = await h.client.ask(h.newConversationId('typed'), 'TYPED-1 triage ord_2001', {
      output: ticket,
    });
    expect(turn).toMatchObject({
      outcome: 'answered',
      steps: 1,
      output: { order_id: 'ord_2001', priority: 'high', refund_cents: 12000 },
    });
    // Typed by the schema: this line only compiles because output is { order_id: string; priority: 'low' | 'high'; ...
    // } | undefined.
    const priority: 'low' | 'high' | undefined = output?.priority;
    expect(priority).toBe('high');
    expect(answer).toBe('{"order_id":"ord_2001","priority":"high","refund_cents":12000}');
    const [sent] = sentSince(from);
    expect(sent.response_format).toEqual({
      type: 'json_schema',
      json_schema: {
        name: 'output',
        strict: true,
        schema: {
          type: 'object',
          properties: {
            order_id: { type: 'string' },
            priority: { type: 'string', enum: ['low', 'high'] },
            refund_cents: {
              anyOf: [{ type: 'integer', minimum: expect.any(Number), maximum: expect.any(Number) }, { type: 'null' }],
            },
          },
          required: ['order_id', 'priority', 'refund_cents'],
          additionalProperties: false,
        },
      },
    });
  });

  it('a mismatch is said to the model and asked again; the second answer is the output', async () => {
    const from = h.model.requests.length;
    h.model.enqueue(
      { content: 'Ticket for ord_2002, high priority.' },
      { content: '{"order_id":"ord_2002","priority":"urgent","refund_cents":null}' },
      {
        content: '{"order_id":"ord_2002","priority":"high","refund_cents":null}',
      },
    );
    const id = h.newConversationId('typed-retry');
    const { turn, output } = await h.client.ask(id, 'TYPED-2 triage ord_2002', {
      output: ticket,
      input: { output: { schema: z.toJSONSchema(ticket), name: 'ticket', retries: 2 } },
    });
    expect(turn).toMatchObject({ outcome: 'answered', steps: 3 });
    expect(output).toEqual({ order_id: 'ord_2002', priority: 'high', refund_cents: null });
    const sent = sentSince(from);
    expect(sent).toHaveLength(3);
    expect(sent.every((s) => s.response_format?.json_schema.name === 'ticket')).toBe(true);
    const notes = sent[2].messages.filter((m) => m.role === 'user').slice(1);
    expect(notes[0].content).toMatch(
      /^\[output check\] Your answer \(1 of 3\) does not match the required output schema "ticket":\nThe answer is not JSON/,
    );
    expect(notes[1].content).toMatch(/\(2 of 3\)[\s\S]*output\/priority must be equal to one of the allowed values/);
    // The transcript keeps every answer and note, in order.
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
  });

  it('a model that never complies ends the turn as invalid_output, through the HTTP API, after exactly the allowed attempts', async () => {
    const from = h.model.requests.length;
    h.model.enqueue({ content: 'no' }, { content: '{"n": "three"}' });
    const id = h.newConversationId('typed-never');
    const schema = {
      type: 'object',
      properties: { n: { type: 'integer' } },
      required: ['n'],
      additionalProperties: false,
    };
    const sent = await call('POST', `/v1/conversations/${id}/messages`, token('a'), {
      text: 'TYPED-3 count',
      input: { output: { schema, name: 'count', retries: 1 } },
    });
    expect(sent.status).toBe(202);
    const turn = await h.client.waitForTurn(id, sent.json.messageId as string);
    expect(turn).toMatchObject({ outcome: 'invalid_output', steps: 2, answerSeq: 3 });
    expect(turn.error).toBe(
      'The model\'s answer did not match the output schema "count" (answer 2 of 2): output/n must be integer',
    );
    expect(sentSince(from)).toHaveLength(2);
    const state = await call('GET', `/v1/conversations/${id}`, token('a'));
    expect((state.json.recentTurns as TurnRecord[]).at(-1)).toMatchObject({ outcome: 'invalid_output' });
    expect(state.json.status).toBe('idle');
  });

  it("an agent's outputType outside the strict subset is sent with strict: false, checked only on the final answer, and a large output stays in the answer", async () => {
    const from = h.model.requests.length;
    const orders = Array.from({ length: 400 }, (_, i) => `ord_${10_000 + i}`);
    const big = JSON.stringify({ customer: 'cus_1001', orders });
    h.model.enqueue(
      { toolCalls: [{ id: 'call_list', name: 'list_orders', arguments: { customer_id: 'cus_1001' } }] },
      { content: big },
    );
    const { turn, output } = await h.client.ask(h.newConversationId('typed-agent'), 'TYPED-4 summarize', {
      input: { agent: 'summarizer' },
    });
    expect(turn).toMatchObject({ outcome: 'answered', steps: 2, outputInAnswer: true });
    expect(turn.output).toBeUndefined();
    expect(output).toEqual({ customer: 'cus_1001', orders });
    const sent = sentSince(from);
    expect(sent.map((s) => s.response_format?.json_schema.strict)).toEqual([false, false]);
    expect(sent[0].response_format?.json_schema.name).toBe('summarizer_output');
  });

  it('refuses a schema that does not compile before anything is sent, by the client and the API, naming the problem', async () => {
    const bad = { output: { schema: { type: 'object', properties: { n: { type: 'integr' } } } } };
    await expect(h.client.sendMessage(h.newConversationId('typed-bad'), 'hi', { input: bad })).rejects.toThrow(
      InvalidConversationInputError,
    );
    await expect(h.client.sendMessage(h.newConversationId('typed-bad'), 'hi', { input: bad })).rejects.toThrow(
      /output.schema cannot be compiled as JSON Schema/,
    );
    const viaApi = await call('POST', `/v1/conversations/${h.newConversationId('typed-bad')}/messages`, token('a'), {
      text: 'hi',
      ...{ input: bad },
    });
    expect(viaApi.status).toBe(400);
    expect(JSON.stringify(viaApi.json)).toMatch(/output.schema cannot be compiled/);
    const tooMany = await call('POST', `/v1/conversations/${h.newConversationId('typed-bad')}/messages`, token('a'), {
      text: 'hi',
      input: { output: { schema: {}, retries: 11 } },
    });
    expect(tooMany.status).toBe(400);
  });

  it('ask() with a schema the conversation does not answer with throws OutputMismatchError carrying the turn', async () => {
    h.model.enqueue({ content: '{"n":1}' });
    const id = h.newConversationId('typed-other');
    const other = {
      schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
    };
    const asked = h.client.ask(id, 'TYPED-5', { output: ticket, input: { output: other } });
    await expect(asked).rejects.toThrow(OutputMismatchError);
    expect((await h.client.state(id)).recentTurns.at(-1)).toMatchObject({ outcome: 'answered', output: { n: 1 } });
  });

  it('sent no request the scripted provider refused', () => {
    expect(h.model.invalidRequests()).toEqual([]);
  });
});
