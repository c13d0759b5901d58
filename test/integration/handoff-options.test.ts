import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defaultPayloadConverter } from '@temporalio/common';
import { startHarness, type Harness } from '../support/harness';
import { agent } from '../../src/tools/agents';
import { handoff } from '../../src/tools/handoff';
import { backofficeTools } from '../../src/demo/tools';
import { conversationActivityType, type ModelCallResult } from '../../src/contract/activities';

// Handoffs as the OpenAI Agents SDK writes them, on the real stack: the SDK's tool names, strict schemas as the
// scripted model server checks them, and each option of handoff(agent, options).

const tools = backofficeTools();
const named = (...names: string[]) => tools.filter((t) => names.includes(t.name));
let writerEnabled = true;
const onHandoffRuns: unknown[] = [];
const auditor = agent({ name: 'auditor', instructions: 'AUDITOR' });
const agents = [
  agent({
    name: 'front-desk',
    instructions: 'FRONT-DESK',
    tools: [...named('find_customer'), auditor.asTool({ toolName: 'audit' })],
    handoffs: [
      'billing-team',
      handoff('writer', { isEnabled: async (ctx) => writerEnabled && ctx.agent === 'front-desk' }),
    ],
  }),
  agent({ name: 'billing-team', instructions: 'BILLING-TEAM' }),
  auditor,
  agent({ name: 'writer', instructions: 'WRITER' }),
  agent({
    name: 'intake',
    instructions: 'INTAKE',
    tools: named('list_orders'),
    handoffs: [
      handoff('refunds-desk', {
        inputType: z.object({ reason: z.string() }),
        onHandoff: (ctx, input) => {
          onHandoffRuns.push({ conversationId: ctx.conversationId, target: ctx.target, input });
          return { ticket: `T-${ctx.toolCallId}` };
        },
        inputFilter: { dropToolCalls: true },
      }),
      handoff('writer', { toolNameOverride: 'to_writer', inputFilter: { keepLast: 1 } }),
    ],
  }),
  agent({ name: 'refunds-desk', instructions: 'REFUNDS-DESK' }),
];

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ tools, agents, defaultAgent: 'front-desk' });
});
afterAll(async () => {
  await h?.stop();
});

type WireTool = { type: string; function: { name: string; parameters?: Record<string, unknown>; strict?: boolean } };
type WireMessage = { role: string; content: unknown; tool_calls?: unknown[] };
type WireBody = { messages: WireMessage[]; tools?: WireTool[] };
const body = (request: Record<string, unknown>) => request as unknown as WireBody;
const requestsSince = (from: number) =>
  h.model.requests.slice(from).map((r) => body(r.body as Record<string, unknown>));
const results = async (id: string) =>
  (await h.client.transcript(id)).flatMap((m) =>
    m.message.role === 'tool' ? [[m.message.tool_call_id, JSON.parse(m.message.content as string)]] : [],
  );
/** The plans of every model call of the conversation, as its workflow history records them. */
const plansOf = async (id: string) => {
  const { events } = await h.temporal.workflow.getHandle(id).fetchHistory();
  const scheduled = new Set(
    (events ?? [])
      .filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === conversationActivityType('callModel'),
      )
      .map((e) => String(e.eventId)),
  );
  return (events ?? [])
    .filter((e) => scheduled.has(String(e.activityTaskCompletedEventAttributes?.scheduledEventId ?? '')))
    .flatMap(
      (e) =>
        defaultPayloadConverter.fromPayload<ModelCallResult>(
          e.activityTaskCompletedEventAttributes!.result!.payloads![0],
        ).calls,
    );
};

describe('handoffs with the SDK’s names and strict schemas', () => {
  it('the model server receives strict handoff and agent tools named as the SDK names them; a call of the old name is still taken', async () => {
    const id = h.newConversationId('sdk-names');
    const from = h.model.requests.length;
    h.model.enqueue(
      { toolCalls: [{ id: 'call_old', name: 'transfer_to_billing-team', arguments: {} }] },
      { content: 'Billing here.' },
    );
    const { turn, answer } = await h.client.ask(id, 'SDK-NAMES-1 billing please');
    expect(turn).toMatchObject({ outcome: 'answered', steps: 2 });
    expect(answer).toBe('Billing here.');
    const [first, second] = requestsSince(from);
    const offered = new Map(first.tools!.map((t) => [t.function.name, t.function]));
    expect([...offered.keys()]).toEqual(['find_customer', 'audit', 'transfer_to_billing_team', 'transfer_to_writer']);
    for (const name of ['audit', 'transfer_to_billing_team', 'transfer_to_writer']) {
      expect(offered.get(name)).toMatchObject({ strict: true, parameters: { additionalProperties: false } });
      const parameters = offered.get(name)!.parameters!;
      expect(parameters.required).toEqual(Object.keys(parameters.properties as object));
    }
    expect(offered.get('transfer_to_billing_team')!.parameters).toEqual({
      type: 'object',
      properties: {},
      required: [],
      additionalProperties: false,
    });
    // find_customer's query has minLength, which strict mode refuses: it is sent without strict.
    expect(offered.get('find_customer')!.strict).toBe(false);
    expect(second.messages[0]).toEqual({ role: 'system', content: 'BILLING-TEAM' });
    expect(await results(id)).toEqual([['call_old', { assistant: 'billing-team' }]]);
    expect((await h.client.state(id)).agent).toBe('billing-team');
    h.expectOnlyValidModelRequests();
  });

  it('isEnabled is evaluated per model call: a disabled handoff is not offered, and a call of it is an unknown tool', async () => {
    const id = h.newConversationId('is-enabled');
    const from = h.model.requests.length;
    writerEnabled = false;
    try {
      h.model.enqueue(
        { toolCalls: [{ id: 'call_w', name: 'transfer_to_writer', arguments: {} }] },
        { content: 'Staying here.' },
      );
      const { turn } = await h.client.ask(id, 'ENABLED-1 write it');
      expect(turn).toMatchObject({ outcome: 'answered', steps: 2 });
    } finally {
      writerEnabled = true;
    }
    const [first] = requestsSince(from);
    expect(first.tools!.map((t) => t.function.name)).not.toContain('transfer_to_writer');
    expect(await results(id)).toEqual([
      ['call_w', expect.objectContaining({ kind: 'tool_failed', reason: 'unknown_tool' })],
    ]);
    expect((await h.client.state(id)).agent).toBe('front-desk');
    h.expectOnlyValidModelRequests();
  });
});

describe('handoff(agent, options)', () => {
  it('inputType checks the arguments (a mismatch stays), onHandoff runs and is recorded, dropToolCalls filters what the new agent is sent', async () => {
    const id = h.newConversationId('handoff-input');
    const from = h.model.requests.length;
    h.model.enqueue(
      { toolCalls: [{ id: 'call_orders', name: 'list_orders', arguments: { customer_id: 'cus_ada' } }] },
      { toolCalls: [{ id: 'call_bad', name: 'transfer_to_refunds_desk', arguments: { reason: 7 } }] },
      {
        content: 'Passing you to refunds.',
        toolCalls: [{ id: 'call_good', name: 'transfer_to_refunds_desk', arguments: { reason: 'late' } }],
      },
      { content: 'Refunds desk: on it.' },
    );
    const { turn } = await h.client.ask(id, 'HANDOFF-INPUT-1 refund my late order', { input: { agent: 'intake' } });
    expect(turn).toMatchObject({ outcome: 'answered', steps: 4 });
    expect((await h.client.state(id)).agent).toBe('refunds-desk');

    const transcriptResults = await results(id);
    expect(transcriptResults[1]).toEqual([
      'call_bad',
      expect.objectContaining({ kind: 'tool_failed', reason: 'invalid_arguments' }),
    ]);
    expect(transcriptResults[1][1].error).toMatch(/reason/);
    expect(transcriptResults[2]).toEqual([
      'call_good',
      { assistant: 'refunds-desk', input: { reason: 'late' }, inputFilter: { dropToolCalls: true } },
    ]);
    expect(onHandoffRuns).toContainEqual({ conversationId: id, target: 'refunds-desk', input: { reason: 'late' } });
    expect(onHandoffRuns.filter((r) => (r as { conversationId: string }).conversationId === id)).toHaveLength(1);
    const plans = await plansOf(id);
    expect(plans.find((p) => p.toolCallId === 'call_good')).toMatchObject({
      handoff: 'refunds-desk',
      handoffRecord: {
        toolName: 'transfer_to_refunds_desk',
        input: { reason: 'late' },
        onHandoff: { returned: { ticket: 'T-call_good' } },
        inputFilter: { dropToolCalls: true },
      },
    });
    expect(plans.find((p) => p.toolCallId === 'call_bad')).toMatchObject({ problem: { reason: 'invalid_arguments' } });

    const requests = requestsSince(from);
    const intake = requests[0];
    expect(intake.tools!.find((t) => t.function.name === 'transfer_to_refunds_desk')!.function).toMatchObject({
      strict: true,
      parameters: { properties: { reason: { type: 'string' } }, required: ['reason'], additionalProperties: false },
    });
    const refundsDesk = requests[3];
    expect(refundsDesk.messages).toEqual([
      { role: 'system', content: 'REFUNDS-DESK' },
      { role: 'user', content: 'HANDOFF-INPUT-1 refund my late order' },
      { role: 'assistant', content: 'Passing you to refunds.' },
    ]);
    // What the new agent was sent is stored with its request's report.
    const stored = await h.pool.query<{ context_budget: { handoffFilter?: unknown } }>(
      `SELECT context_budget FROM ${h.tables.modelResponses} WHERE conversation_id = $1 AND context_budget ? 'handoffFilter'`,
      [id],
    );
    expect(stored.rows[0].context_budget.handoffFilter).toMatchObject({
      agent: 'refunds-desk',
      filter: { dropToolCalls: true },
      omitted: 5,
      firstSeq: 0, // no system message is stored: the user's message is seq 0
    });
    h.expectOnlyValidModelRequests();
  });

  it('toolNameOverride names the tool; keepLast sends the last N messages before the handoff, for every call of the new agent', async () => {
    const id = h.newConversationId('keep-last');
    h.model.enqueue({ content: 'Noted.' });
    await h.client.ask(id, 'KEEP-LAST-1 earlier question', { input: { agent: 'intake' } });
    const from = h.model.requests.length;
    h.model.enqueue(
      { toolCalls: [{ id: 'call_to_writer', name: 'to_writer', arguments: {} }] },
      { content: 'Writer: done.' },
    );
    await h.client.ask(id, 'KEEP-LAST-2 write it up');
    h.model.enqueue({ content: 'Writer again.' });
    await h.client.ask(id, 'KEEP-LAST-3 once more');
    const [intake, writer, writerLater] = requestsSince(from);
    expect(intake.tools!.map((t) => t.function.name)).toContain('to_writer');
    expect(writer.messages).toEqual([
      { role: 'system', content: 'WRITER' },
      { role: 'user', content: 'KEEP-LAST-2 write it up' },
      expect.objectContaining({ role: 'assistant', tool_calls: [expect.objectContaining({ id: 'call_to_writer' })] }),
      {
        role: 'tool',
        tool_call_id: 'call_to_writer',
        content: JSON.stringify({ assistant: 'writer', inputFilter: { keepLast: 1 } }),
      },
    ]);
    // A later turn of the new agent applies the same filter: the earlier turn stays out, what followed is sent.
    expect(writerLater.messages.map((m) => m.content)).toEqual([
      'WRITER',
      'KEEP-LAST-2 write it up',
      null,
      JSON.stringify({ assistant: 'writer', inputFilter: { keepLast: 1 } }),
      'Writer: done.',
      'KEEP-LAST-3 once more',
    ]);
    expect((await h.client.state(id)).agent).toBe('writer');
    // A fork right after the handoff (its result at seq 4) goes on with the agent it handed to, though the handoff's
    // tool is not named transfer_to_<agent>.
    const transcript = await h.client.transcript(id);
    expect(transcript[4].message).toMatchObject({ role: 'tool', tool_call_id: 'call_to_writer' });
    const fork = await h.client.fork(id, { seq: 4 });
    await expect.poll(async () => (await h.client.state(fork.conversationId)).agent).toBe('writer');
    h.expectOnlyValidModelRequests();
  });
});
