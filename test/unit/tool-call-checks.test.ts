import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentCallArguments } from '../../src/activities/model/agent-calls';
import { approvalAsked } from '../../src/activities/model/call-checks';
import { answeredOutcome } from '../../src/core/agent-results';
import { agent } from '../../src/tools/agents';
import type { ToolCallContext } from '../../src/tools/call-context';

// The checks of one tool call that run where the model call's activity plans it:
// src/activities/model/call-checks.ts (needsApproval), agent-calls.ts (an agent tool's
// arguments and task), src/core/agent-results.ts (what an output extractor made).

function context(over: Partial<ToolCallContext> = {}): ToolCallContext {
  return {
    conversationId: 'conv-1~auditor~3-0',
    rootConversationId: 'conv-1',
    requestedBy: ['alice'],
    agent: 'auditor',
    toolCallId: 'call_1',
    messages: () => Promise.resolve([{ role: 'user', content: 'Refund order 7.' }]),
    signal: new AbortController().signal,
    ...over,
  };
}

describe('needsApproval', () => {
  it('takes a boolean as it is, and no setting as false', async () => {
    expect(await approvalAsked(true, {}, context(), 'refund')).toBe(true);
    expect(await approvalAsked(false, {}, context(), 'refund')).toBe(false);
    expect(await approvalAsked(undefined, {}, context(), 'refund')).toBe(false);
  });

  it('awaits an async function that reads the arguments, who asked and the earlier messages', async () => {
    const lifetimeValue = (customer: string) => Promise.resolve(customer === 'c1' ? 5_000 : 100_000);
    const seen: unknown[] = [];
    const overLifetimeValue = async (args: { customer: string; cents: number }, ctx: ToolCallContext) => {
      const messages = await ctx.messages();
      seen.push([ctx.conversationId, ctx.rootConversationId, ctx.requestedBy, ctx.agent, ctx.toolCallId, messages]);
      return args.cents > (await lifetimeValue(args.customer));
    };
    expect(await approvalAsked(overLifetimeValue, { customer: 'c1', cents: 9_000 }, context(), 'refund')).toBe(true);
    expect(await approvalAsked(overLifetimeValue, { customer: 'c2', cents: 9_000 }, context(), 'refund')).toBe(false);
    expect(seen[0]).toEqual([
      'conv-1~auditor~3-0',
      'conv-1',
      ['alice'],
      'auditor',
      'call_1',
      [{ role: 'user', content: 'Refund order 7.' }],
    ]);
  });

  it('requires approval when the function throws, rejects or answers something other than true or false', async () => {
    expect(
      await approvalAsked(
        () => {
          throw new Error('CRM down');
        },
        {},
        context(),
        'refund',
      ),
    ).toBe(true);
    expect(await approvalAsked(() => Promise.reject(new Error('CRM down')), {}, context(), 'refund')).toBe(true);
    expect(await approvalAsked((() => 'no') as unknown as () => boolean, {}, context(), 'refund')).toBe(true);
  });

  it('requires approval when the function does not answer in time, and aborts its signal then', async () => {
    let aborted: AbortSignal | undefined;
    const hangs = (_args: unknown, ctx: ToolCallContext) => {
      aborted = ctx.signal;
      return new Promise<boolean>(() => {});
    };
    const started = Date.now();
    expect(await approvalAsked(hangs, {}, context(), 'refund', 50)).toBe(true);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(aborted?.aborted).toBe(true);
  });
});

describe('an agent tool call as planned', () => {
  const auditor = agent({ name: 'auditor', handoffDescription: 'Audits orders.' });

  it('takes {"input": text} as the task, recording no task of its own, and refuses anything else', async () => {
    const plain = auditor.asTool();
    expect(await agentCallArguments(plain, '{"input":"Audit order 7."}', context())).toEqual({
      ok: true,
      args: { input: 'Audit order 7.' },
    });
    const refused = await agentCallArguments(plain, '{"order":7}', context());
    expect(refused).toEqual({
      ok: false,
      message: 'auditor runs the auditor agent: Give arguments {"input": "<the task, in words>"}.',
    });
    expect(await agentCallArguments(plain, '{not json', context())).toMatchObject({
      ok: false,
      message: expect.stringContaining('its arguments are not JSON'),
    });
  });

  it('checks the arguments against zod parameters and sends their JSON Schema', async () => {
    const audit = auditor.asTool({
      toolName: 'audit_order',
      parameters: z.object({ orderId: z.number().int(), depth: z.enum(['quick', 'full']) }),
    });
    expect(audit.parametersSchema).toMatchObject({
      type: 'object',
      properties: { orderId: { type: 'integer' }, depth: { enum: ['quick', 'full'] } },
      required: ['orderId', 'depth'],
    });
    const planned = await agentCallArguments(audit, '{"orderId":7,"depth":"full"}', context());
    expect(planned).toEqual({
      ok: true,
      args: { orderId: 7, depth: 'full' },
      task: expect.stringContaining('"orderId": 7') as string,
    });
    const refused = await agentCallArguments(audit, '{"orderId":"7"}', context());
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.message).toMatch(/^audit_order runs the auditor agent: its arguments do not match: /);
  });

  it('makes the task with an async inputBuilder that reads the context, and takes a JSON Schema as parameters', async () => {
    const audit = auditor.asTool<{ orderId: number }>({
      toolName: 'audit_order',
      parameters: {
        type: 'object',
        properties: { orderId: { type: 'integer' } },
        required: ['orderId'],
        additionalProperties: false,
      },
      inputBuilder: async (args, ctx) =>
        `Audit order ${args.orderId} for ${ctx.requestedBy.join(', ')}; they said: ${(await ctx.messages())[0].content}`,
    });
    expect(await agentCallArguments(audit, '{"orderId":7}', context())).toEqual({
      ok: true,
      args: { orderId: 7 },
      task: 'Audit order 7 for alice; they said: Refund order 7.',
    });
    expect(await agentCallArguments(audit, '{"orderId":7,"extra":1}', context())).toMatchObject({ ok: false });
  });

  it('leaves the call unrun, saying why, when the inputBuilder throws or makes an empty task', async () => {
    const failing = auditor.asTool({
      inputBuilder: () => {
        throw new Error('order service down');
      },
    });
    expect(await agentCallArguments(failing, '{"input":"x"}', context())).toEqual({
      ok: false,
      message: 'The task for the auditor agent could not be made from these arguments: order service down',
    });
    const empty = auditor.asTool({ inputBuilder: () => '  ' });
    expect(await agentCallArguments(empty, '{"input":"x"}', context())).toMatchObject({
      ok: false,
      message: expect.stringContaining('is empty') as string,
    });
  });

  it('refuses parameters that do not describe an object, and options that are not functions', () => {
    expect(() => auditor.asTool({ parameters: z.string() as never })).toThrow(
      'Agent tool "auditor" (agent "auditor"): parameters must describe an object',
    );
    expect(() => auditor.asTool({ inputBuilder: 'task' as never })).toThrow('inputBuilder must be a function');
  });
});

describe("an agent's answer as the call's result", () => {
  const answer = { responseKey: 'run/5', text: 'All fine.' };

  it('is the answer by reference, the extracted result by its stored key, or tool_failed when the extractor failed', () => {
    expect(answeredOutcome(answer, 'auditor', 'audit')).toEqual({
      kind: 'ok',
      content: 'All fine.',
      storedAnswerKey: 'run/5',
    });
    expect(
      answeredOutcome({ ...answer, extracted: { ok: true, key: 'k/extracted/run/5', text: '{"ok":true}' } }, 'a', 't'),
    ).toEqual({ kind: 'ok', content: '{"ok":true}', storedResultKey: 'k/extracted/run/5' });
    const failed = answeredOutcome({ ...answer, extracted: { ok: false, error: 'no verdict' } }, 'auditor', 'audit');
    expect(failed.kind).toBe('tool_failed');
    expect(JSON.parse(failed.content)).toMatchObject({
      error: 'The auditor agent answered, but the customOutputExtractor of audit failed on its answer: no verdict',
      kind: 'tool_failed',
    });
  });
});
