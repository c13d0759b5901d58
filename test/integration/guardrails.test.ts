import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agent } from '../../src/tools/agents';
import { guardrail } from '../../src/tools/guardrails';
import { tool } from '../../src/tools/tool';
import type { ChatMessage } from '../../src/contract/messages';
import type { StreamEvent } from '../../src/db/stream-channel';
import { startHarness, type Harness } from '../support/harness';

// Guardrails on the real stack: input (before any model call), tool (per
// call, when the model call plans it; again for a person's edit) and output
// (before anyone sees the answer, with its text held back from the stream).

const emails: string[] = [];
const payments: number[] = [];
const sendEmail = tool({
  name: 'send_email',
  description: 'Sends an email.',
  parameters: z.object({ to: z.string(), body: z.string() }),
  execute: ({ to }) => {
    emails.push(to);
    return { sent: to };
  },
  guardrails: [
    guardrail({
      name: 'known_domains',
      on: 'tool',
      check: ({ arguments: args }) =>
        (args as { to: string }).to.endsWith('@example.com')
          ? { action: 'allow' }
          : { action: 'block', reason: 'Mail goes to example.com addresses only.' },
    }),
  ],
});
const payInvoice = tool({
  name: 'pay_invoice',
  description: 'Pays an invoice.',
  parameters: z.object({ invoice: z.string(), cents: z.number().int().positive() }),
  idempotent: false,
  execute: ({ cents }) => {
    payments.push(cents);
    return { paid: cents };
  },
});
/** Worker-wide: no card numbers in a turn's input; payments over 500.00 wait for a person, over 10,000.00 never run. */
const noCardNumbers = guardrail({
  name: 'no_card_numbers',
  on: 'input',
  check: ({ messages }) =>
    messages.some((m) => /\b\d{16}\b/.test(m))
      ? { tripwire: true, reason: 'Card numbers may not be sent here; remove the number and ask again.' }
      : { tripwire: false },
});
const paymentLimits = guardrail({
  name: 'payment_limits',
  on: 'tool',
  check: ({ toolName, arguments: args }) => {
    const cents = toolName === 'pay_invoice' ? (args as { cents: number }).cents : 0;
    if (cents > 1_000_000) return { action: 'block', reason: 'Payments over 10,000.00 are made by the finance team.' };
    if (cents > 50_000) return { action: 'require_approval', reason: 'Payments over 500.00 need a person.' };
    return { action: 'allow' };
  },
});
/** An agent with a model-call input guardrail and an output guardrail. */
const screened = agent({
  name: 'screened',
  instructions: 'Answer questions about orders.',
  guardrails: [
    guardrail({
      name: 'on_topic',
      on: 'input',
      check: async ({ messages }, { complete }) => {
        const verdict = await complete(`Is this about orders? Answer yes or no.\n\n${messages.join('\n')}`, {
          system: 'You classify requests.',
        });
        return verdict.trim().toLowerCase().startsWith('no')
          ? { tripwire: true, reason: 'I only answer questions about orders.' }
          : { tripwire: false };
      },
    }),
    guardrail({
      name: 'no_internal_ids',
      on: 'output',
      check: ({ text }) =>
        text.includes('INTERNAL-')
          ? { tripwire: true, reason: 'The answer named an internal id.' }
          : { tripwire: false },
    }),
  ],
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    textDeltaChars: 2,
    tools: [sendEmail, payInvoice],
    agents: [screened],
    guardrails: [noCardNumbers, paymentLimits],
  });
});
afterAll(async () => {
  await h?.stop();
});

const messagesOf = async (id: string): Promise<ChatMessage[]> => (await h.client.transcript(id)).map((m) => m.message);
const toolResult = (messages: ChatMessage[], id: string) =>
  JSON.parse(
    (messages.find((m) => m.role === 'tool' && m.tool_call_id === id) as { content: string }).content,
  ) as Record<string, unknown>;

describe('guardrails', () => {
  it('an input guardrail stops a turn before any model call; the user and, next turn, the model read why', async () => {
    const id = h.newConversationId('input-guard');
    const before = h.model.requests.length;
    const blocked = await h.client.ask(id, 'Pay with 4111111111111111 please');
    expect(h.model.requests.length).toBe(before); // no model was asked
    expect(blocked.turn).toMatchObject({
      outcome: 'guardrail_tripped',
      guardrail: {
        on: 'input',
        guardrail: 'no_card_numbers',
        reason: 'Card numbers may not be sent here; remove the number and ask again.',
      },
      error:
        'The input guardrail "no_card_numbers" stopped the turn: Card numbers may not be sent here; remove the number and ask again.',
    });
    expect(blocked.answer).toBe(
      '[guardrail no_card_numbers] This request was not answered: Card numbers may not be sent here; remove the number and ask again.',
    );
    h.model.enqueue({ content: 'Paid with the card on file.' });
    const next = await h.client.ask(id, 'Pay with the card on file then');
    expect(next.turn.outcome).toBe('answered');
    const sent = h.model.requests.at(-1)!.body as { messages: { role: string; content: string }[] };
    expect(sent.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(sent.messages[1].content).toMatch(/^\[guardrail no_card_numbers\]/);
  });

  it("a guardrail that is a model call (the agent's) asks the worker's model first; a tripwire means the answering model is never asked", async () => {
    const id = h.newConversationId('model-guard');
    const before = h.model.requests.length;
    h.model.enqueue({ content: 'no' });
    const off = await h.client.ask(id, 'Write me a poem', { input: { agent: 'screened' } });
    expect(off.turn).toMatchObject({ outcome: 'guardrail_tripped', guardrail: { on: 'input', guardrail: 'on_topic' } });
    const asked = h.model.requests
      .slice(before)
      .map((r) => r.body as { messages: { role: string; content: string }[]; tools?: unknown });
    expect(asked).toHaveLength(1); // the classifier only
    expect(asked[0].messages).toEqual([
      { role: 'system', content: 'You classify requests.' },
      { role: 'user', content: 'Is this about orders? Answer yes or no.\n\nWrite me a poem' },
    ]);
    h.model.enqueue({ content: 'yes' }, { content: 'Order ord_1 ships Monday.' });
    const on = await h.client.ask(id, 'When does ord_1 ship?');
    expect(on).toMatchObject({ turn: { outcome: 'answered' }, answer: 'Order ord_1 ships Monday.' });
  });

  it('a guardrail that is a model call, in a conversation on the Responses API, asks there too: valid requests to /v1/responses only', async () => {
    const id = h.newConversationId('model-guard-responses');
    const before = h.model.requests.length;
    h.model.enqueue({ content: 'no' });
    const off = await h.client.ask(id, 'Write me a poem', {
      input: { agent: 'screened', model: { api: 'responses' } },
    });
    expect(off.turn).toMatchObject({ outcome: 'guardrail_tripped', guardrail: { on: 'input', guardrail: 'on_topic' } });
    const classified = h.model.requests.slice(before);
    expect(classified.map((r) => [r.path, r.valid])).toEqual([['/v1/responses', true]]);
    expect(classified[0].body).toMatchObject({
      store: false,
      input: [
        { type: 'message', role: 'system', content: 'You classify requests.' },
        { type: 'message', role: 'user', content: 'Is this about orders? Answer yes or no.\n\nWrite me a poem' },
      ],
    });
    expect(classified[0].body).not.toHaveProperty('tools');
    // The guardrail passes on "yes": the answering call is made, on the same API.
    h.model.enqueue({ content: 'yes' }, { content: 'Order ord_1 ships Monday.' });
    const on = await h.client.ask(id, 'When does ord_1 ship?');
    expect(on).toMatchObject({ turn: { outcome: 'answered' }, answer: 'Order ord_1 ships Monday.' });
    const answered = h.model.requests.slice(before + 1);
    expect(answered.map((r) => [r.path, r.valid])).toEqual([
      ['/v1/responses', true],
      ['/v1/responses', true],
    ]);
  });

  it('a tool guardrail blocks one of two parallel calls: the other runs, both are answered, the model reads the reason', async () => {
    const id = h.newConversationId('tool-guard');
    emails.length = 0;
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_ok', name: 'send_email', arguments: { to: 'ann@example.com', body: 'hi' } },
          { id: 'call_out', name: 'send_email', arguments: { to: 'eve@elsewhere.test', body: 'hi' } },
        ],
      },
      { content: 'Sent one; the other address is not allowed.' },
    );
    const { turn } = await h.client.ask(id, 'Email Ann and Eve');
    expect(turn.outcome).toBe('answered');
    expect(emails).toEqual(['ann@example.com']);
    const messages = await messagesOf(id);
    expect(toolResult(messages, 'call_ok')).toEqual({ sent: 'ann@example.com' });
    expect(toolResult(messages, 'call_out')).toEqual({
      error: 'The guardrail "known_domains" blocked this tool call; it was not run.',
      kind: 'guardrail_blocked',
      guardrail: 'known_domains',
      reason: 'Mail goes to example.com addresses only.',
    });
  });

  it('a tool guardrail makes a large payment wait for a person; an edit past the block limit is refused and the call still waits', async () => {
    const id = h.newConversationId('approval-guard');
    payments.length = 0;
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_small', name: 'pay_invoice', arguments: { invoice: 'inv_1', cents: 100 } },
          { id: 'call_large', name: 'pay_invoice', arguments: { invoice: 'inv_2', cents: 60_000 } },
        ],
      },
      { content: 'Both paid.' },
    );
    const messageId = await h.client.sendMessage(id, 'Pay both invoices');
    await expect
      .poll(async () => (await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId), { timeout: 20_000 })
      .toEqual(['call_large']);
    await expect.poll(() => [...payments], { timeout: 20_000 }).toEqual([100]); // the small one ran at once
    const refused = h.client.decide(id, {
      decision: 'edit',
      toolCallId: 'call_large',
      arguments: { invoice: 'inv_2', cents: 2_000_000 },
    });
    await expect(refused).rejects.toThrow(
      'Edit refused: the guardrail "payment_limits" blocks these arguments: Payments over 10,000.00 are made by the finance team. Nothing changed; the call still waits for a decision.',
    );
    expect((await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_large']);
    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_large' });
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    expect(payments).toEqual([100, 60_000]);
  });

  it('an output guardrail withholds an answer: nothing of it was streamed, the note takes its place, the answer is kept for operators', async () => {
    const id = h.newConversationId('output-guard');
    const events: { at: number; event: StreamEvent }[] = [];
    const unsubscribe = await h.client.subscribe(id, (event) => events.push({ at: Date.now(), event }));
    try {
      h.model.enqueue(
        { content: 'yes' },
        { content: 'Ask for INTERNAL-7731, the ledger id of ord_1.', stream: { chunkDelayMs: 100 } },
      );
      const { turn, answer } = await h.client.ask(id, 'Which ledger entry is ord_1?', { input: { agent: 'screened' } });
      expect(turn).toMatchObject({
        outcome: 'guardrail_tripped',
        guardrail: { on: 'output', guardrail: 'no_internal_ids', reason: 'The answer named an internal id.' },
      });
      expect(answer).toBe('[guardrail no_internal_ids] The answer was withheld: The answer named an internal id.');
      await expect.poll(() => events.filter((e) => e.event.type === 'end').length, { timeout: 5_000 }).toBe(1);
    } finally {
      await unsubscribe();
    }
    expect(events.filter((e) => e.event.type === 'delta')).toEqual([]);
    expect(events.find((e) => e.event.type === 'end')?.event).toMatchObject({ ok: false });
    const { rows } = await h.pool.query<{ guardrail: Record<string, string> }>(
      `SELECT guardrail FROM durable_agent.model_responses WHERE conversation_id = $1 AND guardrail IS NOT NULL`,
      [id],
    );
    expect(rows.map((r) => r.guardrail)).toEqual([
      {
        on: 'output',
        guardrail: 'no_internal_ids',
        reason: 'The answer named an internal id.',
        withheld: 'Ask for INTERNAL-7731, the ledger id of ord_1.',
      },
    ]);
  });

  it('with an output guardrail, an answer that passes reaches the stream only after the model finished it; without one it streams while the model speaks', async () => {
    const watch = async (id: string, input: { agent?: string }, replies: Parameters<Harness['model']['enqueue']>) => {
      const events: { at: number; event: StreamEvent }[] = [];
      const unsubscribe = await h.client.subscribe(id, (event) => events.push({ at: Date.now(), event }));
      const from = h.model.requests.length;
      try {
        h.model.enqueue(...replies);
        expect((await h.client.ask(id, 'When does ord_2 ship?', { input })).answer).toBe(
          'Order ord_2 ships on Tuesday, by courier, before noon.',
        );
        await expect.poll(() => events.filter((e) => e.event.type === 'end').length, { timeout: 5_000 }).toBe(1);
      } finally {
        await unsubscribe();
      }
      const answered = h.model.requests.slice(from).at(-1)!;
      const deltas = events.filter((e) => e.event.type === 'delta');
      return {
        firstDeltaAt: deltas[0]?.at,
        modelDoneAt: answered.closedAt!,
        text: deltas.map((d) => (d.event as { text: string }).text).join(''),
      };
    };
    const slow = { content: 'Order ord_2 ships on Tuesday, by courier, before noon.', stream: { chunkDelayMs: 150 } };
    const guarded = await watch(h.newConversationId('held'), { agent: 'screened' }, [{ content: 'yes' }, slow]);
    expect(guarded.text).toBe('Order ord_2 ships on Tuesday, by courier, before noon.');
    expect(guarded.firstDeltaAt).toBeGreaterThanOrEqual(guarded.modelDoneAt);
    const open = await watch(h.newConversationId('open'), {}, [slow]);
    expect(open.text).toBe('Order ord_2 ships on Tuesday, by courier, before noon.');
    expect(open.firstDeltaAt).toBeLessThan(open.modelDoneAt);
  });

  it('sent no request the scripted provider refused', () => {
    h.expectOnlyValidModelRequests();
  });
});
