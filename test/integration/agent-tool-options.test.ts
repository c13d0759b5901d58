import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ChatMessage } from '../../src/contract/messages';
import { agent } from '../../src/tools/agents';
import { startHarness, type Harness } from '../support/harness';

// An agent called as a tool with the Agents SDK's asTool options, on the real stack:
// `parameters` in place of {input}, an async `inputBuilder` that makes the child's task
// (recorded with the plan), a `needsApproval` function, and a `customOutputExtractor` that
// turns the child's typed answer into the call's result, run once in the child's final
// model call.

let h: Harness;
const built: string[] = [];
const extracted: unknown[] = [];

const auditor = agent({
  name: 'auditor',
  instructions: 'AUDITOR: audit orders.',
  outputType: z.object({ verdict: z.enum(['ok', 'bad']), notes: z.string() }),
});
const auditOrder = auditor.asTool({
  toolName: 'audit_order',
  toolDescription: 'Audits one order.',
  parameters: z.object({ order_id: z.string(), depth: z.enum(['quick', 'full']) }),
  inputBuilder: async (args, ctx) => {
    const said = (await ctx.messages()).flatMap((m: ChatMessage) => (m.role === 'user' ? [m.content] : []));
    const task = `Audit ${args.order_id} (${args.depth}) for ${ctx.requestedBy.join(', ')}; they said: ${said.join(' / ')}`;
    built.push(task);
    return task;
  },
  needsApproval: (args) => Promise.resolve(args.depth === 'full'),
  customOutputExtractor: ({ output, text, agent: who }) => {
    extracted.push({ output, text, agent: who });
    const verdict = (output as { verdict: string }).verdict;
    if (verdict === 'bad') throw new Error('a bad verdict needs a person to read the notes');
    return { verdict, by: who };
  },
});
const desk = agent({ name: 'desk', instructions: 'DESK: delegate audits.', tools: [auditOrder] });

beforeAll(async () => {
  h = await startHarness({ agents: [desk, auditor] });
});
afterAll(async () => {
  await h?.stop();
});

type WireBody = { messages: { role: string; content: unknown }[]; tools?: { function: { parameters: unknown } }[] };
const messagesOf = async (id: string): Promise<ChatMessage[]> => (await h.client.transcript(id)).map((m) => m.message);
const resultOf = async (id: string, toolCallId: string) =>
  (await messagesOf(id)).find(
    (m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool' && m.tool_call_id === toolCallId,
  )?.content;
const audit = (id: string, order: string, depth: string) => ({
  id,
  name: 'audit_order',
  arguments: { order_id: order, depth },
});

describe('an agent tool with parameters, an input builder, a needsApproval function and an output extractor', () => {
  it("sends its parameters, starts the agent with the built task, and the extracted result is the call's result", async () => {
    const id = h.newConversationId('opt-1');
    h.model.enqueue(
      { toolCalls: [audit('call_audit', 'ord_1001', 'quick')] },
      { content: '{"verdict":"ok","notes":"OPT-1 all fine"}' },
      { content: 'OPT-1 audited.' },
    );
    const { turn } = await h.client.ask(id, 'OPT-1 audit ord_1001', { input: { agent: 'desk' }, sentBy: 'alice' });
    expect(turn).toMatchObject({ outcome: 'answered' });

    const deskRequest = h.requestsFor('OPT-1 audit ord_1001')[0] as unknown as WireBody;
    expect(deskRequest.tools![0].function.parameters).toMatchObject({
      type: 'object',
      properties: { order_id: { type: 'string' }, depth: { enum: ['quick', 'full'] } },
      required: ['order_id', 'depth'],
    });
    const task = 'Audit ord_1001 (quick) for alice; they said: OPT-1 audit ord_1001';
    expect(built).toEqual([task]);
    const child = `${id}~auditor~1-0`;
    expect((await messagesOf(child))[0]).toEqual({ role: 'user', content: task });
    expect((await h.client.state(child)).calledBy).toMatchObject({ task, callerAgent: 'desk' });
    // Run once, on the typed answer; its result (as JSON) is what the desk's model reads.
    expect(extracted).toEqual([
      {
        output: { verdict: 'ok', notes: 'OPT-1 all fine' },
        text: '{"verdict":"ok","notes":"OPT-1 all fine"}',
        agent: 'auditor',
      },
    ]);
    expect(await resultOf(id, 'call_audit')).toBe('{"verdict":"ok","by":"auditor"}');
    const next = h.requestsFor('OPT-1 audit ord_1001').at(-1) as unknown as WireBody;
    expect(next.messages.at(-1)).toMatchObject({ role: 'tool', content: '{"verdict":"ok","by":"auditor"}' });
    h.expectOnlyValidModelRequests();
  });

  it('waits for a person when needsApproval says so, and settles the call as tool_failed when the extractor throws', async () => {
    const id = h.newConversationId('opt-2');
    h.model.enqueue(
      { toolCalls: [audit('call_full', 'ord_1002', 'full')] },
      { content: '{"verdict":"bad","notes":"OPT-2 mismatch"}' },
      { content: 'OPT-2 the audit failed.' },
    );
    const messageId = await h.client.sendMessage(id, 'OPT-2 audit ord_1002 fully', {
      input: { agent: 'desk' },
      sentBy: 'bob',
    });
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    expect((await h.client.state(id)).pendingApprovals[0]).toMatchObject({
      toolCallId: 'call_full',
      decisions: ['approve', 'reject'],
    });
    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_full', decidedBy: 'ops@example.com' });
    expect(await h.client.waitForTurn(id, messageId)).toMatchObject({ outcome: 'answered' });
    expect(JSON.parse((await resultOf(id, 'call_full'))!)).toMatchObject({
      kind: 'tool_failed',
      error: expect.stringContaining(
        'The auditor agent answered, but the customOutputExtractor of audit_order failed on its answer: a bad verdict needs a person',
      ) as string,
    });
    h.expectOnlyValidModelRequests();
  });

  it('refuses arguments that do not match its parameters, without starting the agent', async () => {
    const id = h.newConversationId('opt-3');
    const before = built.length;
    h.model.enqueue({ toolCalls: [audit('call_bad', 'ord_1001', 'deep')] }, { content: 'OPT-3 sorry.' });
    await h.client.ask(id, 'OPT-3 audit deeply', { input: { agent: 'desk' } });
    expect(JSON.parse((await resultOf(id, 'call_bad'))!)).toMatchObject({
      kind: 'tool_failed',
      error: expect.stringMatching(/^audit_order runs the auditor agent: its arguments do not match: /) as string,
    });
    expect(built.length).toBe(before);
    await expect(h.client.state(`${id}~auditor~1-0`)).rejects.toThrow();
    h.expectOnlyValidModelRequests();
  });
});
