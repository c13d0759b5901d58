import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ChatMessage } from '../../src/contract/messages';
import { agent } from '../../src/tools/agents';
import type { ToolCallContext } from '../../src/tools/call-context';
import { guardrail } from '../../src/tools/guardrails';
import { tool } from '../../src/tools/tool';
import { startHarness, type Harness } from '../support/harness';

// `needsApproval` as an async function of the arguments and the call's context, on the real
// stack: it runs in the model call's activity, its outcome is part of the recorded plan, and
// the workflow, rebuilt from its history after the worker dropped it from its cache (it keeps
// two conversations), never runs it again. A tool guardrail gets the same context.

let h: Harness;
/** What each run of the needsApproval function saw. */
const checks: {
  args: { customer_id: string; amount_cents: number };
  context: Omit<ToolCallContext, 'messages' | 'signal'>;
  said: string[];
}[] = [];
/** What each run of the tool guardrail saw. */
const guarded: { toolCallId: string; requestedBy: readonly string[]; rootConversationId: string; messages: number }[] =
  [];

/** The customer's lifetime value: what their orders came to, looked up in PostgreSQL. */
const lifetimeValueCents = async (customer: string): Promise<number> =>
  Number(
    (
      await h.pool.query<{ total: string }>(
        'SELECT coalesce(sum(total_cents), 0) AS total FROM public.orders WHERE customer_id = $1',
        [customer],
      )
    ).rows[0].total,
  );

const credit = tool({
  name: 'credit_customer',
  description: 'Credits a customer.',
  parameters: z.object({ customer_id: z.string(), amount_cents: z.number().int().positive() }),
  // Refunds over the customer's lifetime value need approval, and so does any credit once a chargeback was mentioned.
  needsApproval: async (args, ctx) => {
    const said = (await ctx.messages()).flatMap((m: ChatMessage) => (m.role === 'user' ? [m.content] : []));
    const { conversationId, rootConversationId, requestedBy, agent, toolCallId } = ctx;
    const context = { conversationId, rootConversationId, requestedBy, agent, toolCallId };
    checks.push({ args, context, said });
    return args.amount_cents > (await lifetimeValueCents(args.customer_id)) || said.some((s) => /chargeback/i.test(s));
  },
  execute: ({ amount_cents }) => `credited ${amount_cents}`,
});
const watcher = guardrail({
  name: 'watch_credits',
  on: 'tool',
  async check(_call, ctx) {
    guarded.push({
      toolCallId: ctx.toolCallId,
      requestedBy: ctx.requestedBy,
      rootConversationId: ctx.rootConversationId,
      messages: (await ctx.messages()).length,
    });
    return { action: 'allow' };
  },
});
const desk = agent({ name: 'desk', instructions: 'DESK: credit customers.', tools: [credit], guardrails: [watcher] });

beforeAll(async () => {
  h = await startHarness({ tools: [credit], agents: [desk], maxCachedConversations: 2 });
});
afterAll(async () => {
  await h?.stop();
});

const creditCall = (id: string, cents: number) => ({
  id,
  name: 'credit_customer',
  arguments: { customer_id: 'cus_ada', amount_cents: cents },
});
const waitingCalls = async (id: string, count: number) => {
  await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(count);
  return (await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId);
};

describe('needsApproval as an async function of the call and its context', () => {
  it("asks a person for a credit over the customer's lifetime value only, runs once per call, and replay does not run it again", async () => {
    const id = h.newConversationId('ltv');
    const ltv = await lifetimeValueCents('cus_ada');
    h.model.enqueue(
      { toolCalls: [creditCall('call_small', 500), creditCall('call_big', ltv + 1)] },
      { content: 'LTV-1 done.' },
    );
    const messageId = await h.client.sendMessage(id, 'LTV-1 credit Ada twice', {
      input: { agent: 'desk' },
      sentBy: 'alice',
    });
    expect(await waitingCalls(id, 1)).toEqual(['call_big']);
    // Two other conversations' turns take the worker's two cache places: the decision replays this one from history.
    for (const other of ['LTV-other-1', 'LTV-other-2']) {
      h.model.enqueue({ content: `${other} hello.` });
      await h.client.ask(h.newConversationId('ltv-other'), `${other} hi`, { input: { agent: 'desk' } });
    }
    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_big', decidedBy: 'ops@example.com' });
    expect(await h.client.waitForTurn(id, messageId)).toMatchObject({ outcome: 'answered' });

    // One run per planned call, though every workflow task replayed the model call's result from history.
    // The calls of one answer are planned side by side: in either order.
    const ours = checks
      .filter((c) => c.context.conversationId === id)
      .sort((a, b) => a.context.toolCallId.localeCompare(b.context.toolCallId));
    expect(ours.map((c) => [c.context.toolCallId, c.args.amount_cents])).toEqual([
      ['call_big', ltv + 1],
      ['call_small', 500],
    ]);
    expect(ours[1].context).toEqual({
      conversationId: id,
      rootConversationId: id,
      requestedBy: ['alice'],
      agent: 'desk',
      toolCallId: 'call_small',
    });
    expect(ours[1].said).toEqual(['LTV-1 credit Ada twice']);
    const results = (await h.client.transcript(id))
      .map((m) => m.message)
      .flatMap((m) => (m.role === 'tool' ? [[m.tool_call_id, m.content]] : []));
    expect(results).toEqual([
      ['call_small', 'credited 500'],
      ['call_big', `credited ${ltv + 1}`],
    ]);
    // The tool guardrail saw the same context.
    expect(
      guarded.filter((g) => g.rootConversationId === id).sort((a, b) => a.toolCallId.localeCompare(b.toolCallId)),
    ).toEqual([
      { toolCallId: 'call_big', requestedBy: ['alice'], rootConversationId: id, messages: 1 },
      { toolCallId: 'call_small', requestedBy: ['alice'], rootConversationId: id, messages: 1 },
    ]);
    h.expectOnlyValidModelRequests();
  });

  it('reads the earlier messages: after a chargeback was mentioned, even a small credit waits for a person', async () => {
    const id = h.newConversationId('chargeback');
    h.model.enqueue(
      { content: 'LTV-2 noted.' },
      { toolCalls: [creditCall('call_after', 100)] },
      { content: 'LTV-2 ok.' },
    );
    await h.client.ask(id, 'LTV-2 Ada filed a chargeback last week', { input: { agent: 'desk' }, sentBy: 'bob' });
    const messageId = await h.client.sendMessage(id, 'LTV-2 credit her 1 dollar', { sentBy: 'bob' });
    expect(await waitingCalls(id, 1)).toEqual(['call_after']);
    await h.client.decide(id, {
      decision: 'reject',
      toolCallId: 'call_after',
      reason: 'no',
      decidedBy: 'ops@example.com',
    });
    expect(await h.client.waitForTurn(id, messageId)).toMatchObject({ outcome: 'answered' });
    const ours = checks.filter((c) => c.context.conversationId === id);
    expect(ours).toHaveLength(1);
    expect(ours[0].said).toEqual(['LTV-2 Ada filed a chargeback last week', 'LTV-2 credit her 1 dollar']);
    expect(ours[0].context.requestedBy).toEqual(['bob']);
    h.expectOnlyValidModelRequests();
  });
});
