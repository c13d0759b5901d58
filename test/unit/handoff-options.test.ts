import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allowsStrict, strictSchemaProblem } from '../../src/common/strict-schema';
import { enabledHandoffs, filteredAfterHandoff, planHandoffCall } from '../../src/activities/model/handoffs';
import { agent, AgentRegistry } from '../../src/tools/agents';
import { findHandoff, handoff, handoffToolName } from '../../src/tools/handoff';
import { ToolRegistry } from '../../src/tools/registry';
import { tool } from '../../src/tools/tool';
import { validateChatRequest } from '../../src/testing';
import type { ChatMessage, ToolCall } from '../../src/contract/messages';

// Handoffs named and described as the OpenAI Agents SDK does, strict schemas, and handoff(agent, options):
// src/tools/handoff.ts, src/activities/model/handoffs.ts, src/common/strict-schema.ts.

const lookup = tool({
  name: 'lookup',
  description: 'Looks up.',
  parameters: z.object({ id: z.string() }),
  execute: () => 'ok',
});
const loose = tool({
  name: 'loose',
  description: 'Optional fields.',
  parameters: z.object({ id: z.string(), note: z.string().optional() }),
  execute: () => 'ok',
});
const tools = new ToolRegistry([lookup, loose]);
const context = { conversationId: 'c1', agent: 'triage', signal: new AbortController().signal };
const callOf = (id: string, name: string, args: unknown = {}): ToolCall => ({
  id,
  type: 'function',
  function: { name, arguments: JSON.stringify(args) },
});

describe('strict schemas', () => {
  it('decides strict mode by OpenAI’s rules: closed objects, every property required, no unsupported keyword', () => {
    expect(allowsStrict({ type: 'object', properties: {}, required: [], additionalProperties: false })).toBe(true);
    const nested = {
      type: 'object',
      properties: { a: { type: 'array', items: { type: 'object', properties: { b: { type: 'string' } } } } },
      required: ['a'],
      additionalProperties: false,
    };
    expect(strictSchemaProblem(nested)).toBe(
      "In context=('properties', 'a', 'items'), 'additionalProperties' is required to be supplied and to be false.",
    );
    expect(
      strictSchemaProblem({
        type: 'object',
        properties: { a: {}, b: {} },
        required: ['a'],
        additionalProperties: false,
      }),
    ).toBe(
      "In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing 'b'.",
    );
    expect(
      strictSchemaProblem({
        type: 'object',
        properties: { a: { type: 'string', minLength: 1 } },
        required: ['a'],
        additionalProperties: false,
      }),
    ).toBe("In context=('properties', 'a'), 'minLength' is not permitted.");
    expect(strictSchemaProblem({ type: 'object', additionalProperties: false })).toBe(
      'In context=(), object schema missing properties.',
    );
    expect(strictSchemaProblem({ type: 'string' })).toMatch(/schema must be a JSON Schema of 'type: "object"'/);
  });

  it("gives the worker's function tools `strict` by their schema: true for a closed one, false for optional fields", () => {
    const [strict, notStrict] = tools.specsFor(['lookup', 'loose']);
    expect(strict.function).toMatchObject({ name: 'lookup', strict: true });
    expect(notStrict.function).toMatchObject({ name: 'loose', strict: false });
  });

  it('the scripted model server refuses a strict tool whose schema breaks the rules, with OpenAI’s 400 body', () => {
    const body = (parameters: unknown, strict: unknown = true) => ({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ type: 'function', function: { name: 'f', parameters, strict } }],
    });
    const open = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] };
    expect(validateChatRequest(body(open))).toEqual({
      status: 400,
      body: {
        error: {
          message:
            "Invalid schema for function 'f': In context=(), 'additionalProperties' is required to be supplied and to be false.",
          type: 'invalid_request_error',
          param: 'tools[0].function.parameters',
          code: 'invalid_function_parameters',
        },
      },
    });
    expect(validateChatRequest(body(open, false))).toBeNull(); // not strict: any schema
    expect(validateChatRequest(body({ ...open, additionalProperties: false }))).toBeNull();
    expect(validateChatRequest(body(open, 'yes'))).toMatchObject({
      status: 400,
      body: { error: { param: 'tools[0].function.strict', code: 'invalid_type' } },
    });
  });
});

describe('handoff names and options', () => {
  it("names handoff tools as the SDK does (`-` and spaces made `_`), strict, and still takes a running conversation's old name", () => {
    expect(handoffToolName('my-agent')).toBe('transfer_to_my_agent');
    expect(handoffToolName('Billing Desk')).toBe('transfer_to_Billing_Desk');
    const registry = new AgentRegistry(
      [agent({ name: 'triage', handoffs: ['my-agent'] }), agent({ name: 'my-agent' })],
      tools,
    );
    const triage = registry.get('triage')!;
    expect(registry.handoffSpecs(triage)).toEqual([
      {
        type: 'function',
        function: {
          name: 'transfer_to_my_agent',
          description: 'Hand off to the my-agent agent to handle the request.',
          parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
          strict: true,
        },
      },
    ]);
    expect(registry.handoffTarget(triage, 'transfer_to_my_agent')).toBe('my-agent');
    expect(registry.handoffTarget(triage, 'transfer_to_my-agent')).toBe('my-agent'); // the name before the SDK's
  });

  it('takes agents and handoff(agent, options) beside names: name and description overrides, a typed input sent strict', () => {
    const refunds = agent({ name: 'refunds' });
    const registry = new AgentRegistry(
      [
        agent({
          name: 'triage',
          handoffs: [
            handoff(refunds, {
              toolNameOverride: 'escalate_refund',
              toolDescriptionOverride: 'Escalate a refund.',
              inputType: z.object({ reason: z.string() }),
            }),
            agent({ name: 'writer' }),
          ],
        }),
        refunds,
        agent({ name: 'writer' }),
      ],
      tools,
    );
    const [escalate, writer] = registry.handoffSpecs(registry.get('triage')!);
    expect(escalate.function).toEqual({
      name: 'escalate_refund',
      description: 'Escalate a refund.',
      parameters: {
        type: 'object',
        properties: { reason: { type: 'string' } },
        required: ['reason'],
        additionalProperties: false,
      },
      strict: true,
    });
    expect(writer.function.name).toBe('transfer_to_writer');
    const all = registry.handoffsOf(registry.get('triage')!);
    expect(findHandoff(all, 'transfer_to_refunds')?.target).toBe('refunds'); // the old default name still lands
  });

  it('refuses bad handoff options, saying what to fix', () => {
    const make =
      (h: unknown, more: Parameters<typeof agent>[0]['tools'] = []) =>
      () =>
        new AgentRegistry(
          [agent({ name: 'a', tools: more, handoffs: [h as never] }), agent({ name: 'b-c' }), agent({ name: 'b_c' })],
          tools,
        );
    expect(make(handoff('zz'))).toThrow(/hands off to "zz", which is not one of the worker's agents/);
    expect(make(handoff('b-c', { toolNameOverride: 'no spaces' }))).toThrow(
      /toolNameOverride "no spaces" is not allowed/,
    );
    expect(make(handoff('b-c', { toolNameOverride: 'lookup' }), ['lookup'])).toThrow(
      /offered as tool "lookup", which another of its tools or handoffs already has; give it a toolNameOverride/,
    );
    expect(make(handoff('b-c', { inputFilter: { keepLast: -1 } }))).toThrow(/keepLast must be a whole number from 0/);
    expect(make(handoff('b-c', { inputFilter: { dropTools: true } as never }))).toThrow(/got unknown dropTools/);
    expect(make(handoff('b-c', { inputType: { type: 'string' } }))).toThrow(/inputType must describe an object/);
    expect(make(handoff('b-c', { isEnabled: 'yes' as never }))).toThrow(/isEnabled must be a boolean or a function/);
    expect(make(handoff('b-c', { onEnter: () => 1 } as never))).toThrow(/unknown option onEnter/);
    // b-c and b_c both make transfer_to_b_c: the second needs a name of its own.
    expect(
      () =>
        new AgentRegistry(
          [agent({ name: 'a', handoffs: ['b-c', 'b_c'] }), agent({ name: 'b-c' }), agent({ name: 'b_c' })],
          tools,
        ),
    ).toThrow(/handoff to "b_c" is offered as tool "transfer_to_b_c"/);
  });
});

describe('handoff options in the model call', () => {
  const target = agent({ name: 'refunds' });
  const registryWith = (h: ReturnType<typeof handoff>) =>
    new AgentRegistry([agent({ name: 'triage', handoffs: [h] }), target], tools);

  it('isEnabled: a boolean or an async function of the context; one that throws counts as false', async () => {
    const seen: unknown[] = [];
    const on = registryWith(
      handoff(target, {
        isEnabled: async (ctx) => {
          seen.push(ctx.conversationId, ctx.agent);
          return ctx.conversationId === 'c1';
        },
      }),
    );
    expect((await enabledHandoffs(on, on.get('triage'), context)).map((h) => h.toolName)).toEqual([
      'transfer_to_refunds',
    ]);
    expect(await enabledHandoffs(on, on.get('triage'), { ...context, conversationId: 'c2' })).toEqual([]);
    expect(seen).toEqual(['c1', 'triage', 'c2', 'triage']);
    const off = registryWith(handoff(target, { isEnabled: false }));
    expect(await enabledHandoffs(off, off.get('triage'), context)).toEqual([]);
    const throws = registryWith(
      handoff(target, {
        isEnabled: () => {
          throw new Error('down');
        },
      }),
    );
    expect(await enabledHandoffs(throws, throws.get('triage'), context)).toEqual([]);
  });

  it('inputType: arguments checked and recorded; a mismatch is invalid_arguments and no handoff', async () => {
    const registry = registryWith(
      handoff(target, { inputType: z.object({ reason: z.string() }), inputFilter: { keepLast: 2 } }),
    );
    const [h] = registry.handoffsOf(registry.get('triage')!);
    const find = (name: string) => findHandoff([h], name);
    const good = callOf('call_1', 'transfer_to_refunds', { reason: 'late' });
    expect(await planHandoffCall(h, good, [good], find, context)).toMatchObject({
      toolCallId: 'call_1',
      handoff: 'refunds',
      handoffRecord: { toolName: 'transfer_to_refunds', input: { reason: 'late' }, inputFilter: { keepLast: 2 } },
    });
    const bad = callOf('call_2', 'transfer_to_refunds', { reason: 7 });
    const refused = await planHandoffCall(h, bad, [bad], find, context);
    expect(refused.handoff).toBeUndefined();
    expect(refused.problem).toMatchObject({ reason: 'invalid_arguments' });
    expect(refused.problem?.message).toMatch(
      /hands off to the refunds agent with arguments matching its schema: .*reason/s,
    );
  });

  it('onHandoff: runs with the context and input, its return recorded; a throw refuses the handoff; only the first handoff runs it', async () => {
    const ran: unknown[] = [];
    const registry = registryWith(
      handoff(target, {
        inputType: {
          type: 'object',
          properties: { n: { type: 'number' } },
          required: ['n'],
          additionalProperties: false,
        },
        onHandoff: (ctx, input) => {
          ran.push([ctx.target, ctx.toolCallId, input]);
          if ((input as { n: number }).n < 0) throw new Error('negative');
          return { ticket: 'T-1' };
        },
      }),
    );
    const [h] = registry.handoffsOf(registry.get('triage')!);
    const find = (name: string) => findHandoff([h], name);
    const first = callOf('call_1', 'transfer_to_refunds', { n: 1 });
    const second = callOf('call_2', 'transfer_to_refunds', { n: 2 });
    const planned = await Promise.all(
      [first, second].map((c) => planHandoffCall(h, c, [first, second], find, context)),
    );
    expect(planned[0]).toMatchObject({
      handoff: 'refunds',
      handoffRecord: { onHandoff: { returned: { ticket: 'T-1' } } },
    });
    expect(planned[1].handoffRecord?.onHandoff).toBeUndefined(); // the workflow refuses it: onHandoff not run
    expect(ran).toEqual([['refunds', 'call_1', { n: 1 }]]);
    const threw = callOf('call_3', 'transfer_to_refunds', { n: -1 });
    expect(await planHandoffCall(h, threw, [threw], find, context)).toMatchObject({
      problem: { reason: 'handoff_refused', message: expect.stringContaining('negative') },
      handoffRecord: { onHandoff: { threw: 'negative' } },
    });
  });
});

describe('input filter', () => {
  const refunds = agent({ name: 'refunds' });
  const transcript: ChatMessage[] = [
    { role: 'system', content: 'stored' },
    { role: 'user', content: 'first question' },
    { role: 'assistant', content: 'first answer' },
    { role: 'user', content: 'refund ord_1' },
    { role: 'assistant', content: null, tool_calls: [callOf('c_lookup', 'lookup', { id: 'ord_1' })] },
    { role: 'tool', tool_call_id: 'c_lookup', content: '{"id":"ord_1"}' },
    { role: 'assistant', content: 'Passing you on.', tool_calls: [callOf('c_h', 'transfer_to_refunds')] },
    { role: 'tool', tool_call_id: 'c_h', content: '' },
    { role: 'assistant', content: null, tool_calls: [callOf('c_after', 'lookup', { id: 'ord_1' })] },
    { role: 'tool', tool_call_id: 'c_after', content: '{"id":"ord_1"}' },
  ];
  const seqs = transcript.map((_, i) => i + 10);
  const withResult = (content: string) => transcript.map((m, i) => (i === 7 ? { ...m, content } : m)) as ChatMessage[];

  it('dropToolCalls leaves out tool calls and results before the handoff (its own too), keeping text and what came after', () => {
    const loaded = { messages: withResult('{"assistant":"refunds","inputFilter":{"dropToolCalls":true}}'), seqs };
    const { outgoing, note } = filteredAfterHandoff(loaded, refunds);
    expect(outgoing.messages).toEqual([
      transcript[0],
      transcript[1],
      transcript[2],
      transcript[3],
      { role: 'assistant', content: 'Passing you on.' },
      transcript[8],
      transcript[9],
    ]);
    expect(outgoing.seqs).toEqual([10, 11, 12, 13, 16, 18, 19]);
    expect(note).toEqual({ agent: 'refunds', filter: { dropToolCalls: true }, omitted: 3, firstSeq: 11 });
  });

  it('keepLast keeps the last N messages before the handoff response, never a result without its call', () => {
    const loaded = { messages: withResult('{"assistant":"refunds","inputFilter":{"keepLast":2}}'), seqs };
    const { outgoing, note } = filteredAfterHandoff(loaded, refunds);
    // The last two before the handoff are the lookup call and its result.
    expect(outgoing.seqs).toEqual([10, 14, 15, 16, 17, 18, 19]);
    expect(note).toMatchObject({ omitted: 3, firstSeq: 14 });
    const one = filteredAfterHandoff(
      { messages: withResult('{"assistant":"refunds","inputFilter":{"keepLast":1}}'), seqs },
      refunds,
    );
    expect(one.outgoing.seqs).toEqual([10, 16, 17, 18, 19]); // the lone result is left out with its call
  });

  it('applies only for the agent the last handoff named, and not for a handoff without a filter', () => {
    const filtered = { messages: withResult('{"assistant":"refunds","inputFilter":{"keepLast":0}}'), seqs };
    expect(filteredAfterHandoff(filtered, agent({ name: 'triage' })).note).toBeUndefined();
    const plain = { messages: withResult('{"assistant":"refunds"}'), seqs };
    expect(filteredAfterHandoff(plain, refunds)).toEqual({ outgoing: plain });
    expect(filteredAfterHandoff(filtered, refunds).outgoing.seqs).toEqual([10, 16, 17, 18, 19]);
  });
});
