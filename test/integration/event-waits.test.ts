import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { startApiServer } from '../../src/api/server';
import { launchChromium } from '../support/browser';
import { runCli } from '../support/cli';
import { TEST_TOKENS, token } from '../support/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventSignal } from '../../src/contract/workflow';
import type { DeliveredEvent } from '../../src/contract/events';
import { backofficeTools } from '../../src/demo/tools';
import { exportHistoryFixture } from '../support/fixture-export';
import { startHarness, type Harness } from '../support/harness';
import { tools as eventTools } from '../support/event-tools';

// Tool calls that wait for an event, against a real worker, dev server and PostgreSQL: the call waits (listed in
// event_waits, shown in the state) until an event with its name and key arrives by signal; its payload is the call's
// result, which the model reads. A wait whose deadline passes settles as event_timeout; a cancel settles it as
// cancelled; an event kept from before the wait is taken by the first call that waits for it.

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let browser: Browser;
beforeAll(async () => {
  h = await startHarness({ tools: [...backofficeTools(), ...eventTools] });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await api?.stop();
  await h?.stop();
});

const waitRows = async (id: string) =>
  (
    await h.pool.query(
      'SELECT call_key, tool_name, name, key FROM durable_agent.event_waits WHERE conversation_id = $1',
      [id],
    )
  ).rows;
const toolResults = async (id: string) =>
  (await h.client.transcript(id)).flatMap((m) => (m.message.role === 'tool' ? [JSON.parse(m.message.content)] : []));
const event = (name: string, key: string, payload: unknown): DeliveredEvent => ({
  eventId: randomUUID(),
  name,
  key,
  payload,
  sentAt: new Date().toISOString(),
});

describe('a call that waits for an event', () => {
  it("gets the event's payload as its result, which the model reads; the wait is listed and shown until then", async () => {
    const id = h.newConversationId('event-wait');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_wait', name: 'await_payment_settled', arguments: { order_id: 'ord_1001' } }] },
      { content: 'The payment settled; refunding now.' },
    );
    const messageId = await h.client.sendMessage(id, 'Refund ord_1001 once the payment has settled');
    await expect.poll(async () => (await h.client.state(id)).eventWaits?.length ?? 0, { timeout: 20_000 }).toBe(1);
    // Listed once its registration commits: from then on an event sent for it is routed to it.
    await expect.poll(async () => (await waitRows(id)).length, { timeout: 20_000 }).toBe(1);
    const state = await h.client.state(id);
    expect(state.eventWaits![0]).toMatchObject({
      toolCallId: 'call_wait',
      toolName: 'await_payment_settled',
      event: 'payment.settled',
      key: 'ord_1001',
    });
    expect(Date.parse(state.eventWaits![0].deadlineAt) - Date.parse(state.eventWaits![0].since)).toBe(60_000);
    expect(state.runningToolCalls).toEqual([]);
    // The message asking for the call is stored before it waits: the transcript shows what the conversation waits on.
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual(['user', 'assistant']);
    expect(await waitRows(id)).toEqual([
      {
        call_key: state.eventWaits![0].callKey,
        tool_name: 'await_payment_settled',
        name: 'payment.settled',
        key: 'ord_1001',
      },
    ]);

    // `show` and the inbox's page of the conversation say what it waits for.
    const shown = await runCli(['show', id], {
      TEMPORAL_ADDRESS: h.temporalAddress,
      DATABASE_URL: h.databaseUrl,
      TEMPORAL_TASK_QUEUE: h.taskQueue,
      AGENT_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'event-show-')),
    });
    expect(shown.stdout).toContain(
      `waiting for the event payment.settled with key ord_1001: await_payment_settled (call_wait), since ${state.eventWaits![0].since}, until ${state.eventWaits![0].deadlineAt}`,
    );
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${api.url}/inbox`);
      await page.fill('input[name=token]', token('b'));
      await page.click('button:has-text("Sign in")');
      await page.waitForSelector('[data-testid=subject]');
      await page.goto(`${api.url}/inbox/conversations/${encodeURIComponent(id)}`);
      expect(await page.textContent('[data-testid=event-wait]')).toMatch(
        /^payment\.settled with key ord_1001 · await_payment_settled \(call_wait\) · until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/,
      );
    } finally {
      await context.close();
    }

    // Another order's event, and a malformed one, change nothing.
    const handle = h.temporal.workflow.getHandle(id);
    await handle.signal(eventSignal, event('payment.settled', 'ord_2001', { amount_cents: 1 }));
    await handle.signal(eventSignal, { name: 'payment.settled' } as DeliveredEvent);
    const settled = event('payment.settled', 'ord_1001', { amount_cents: 12_000, settled_at: '2026-03-02T10:00:00Z' });
    await handle.signal(eventSignal, settled);
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    expect(await toolResults(id)).toEqual([
      {
        kind: 'event',
        event: 'payment.settled',
        key: 'ord_1001',
        eventId: settled.eventId,
        sentAt: settled.sentAt,
        payload: { amount_cents: 12_000, settled_at: '2026-03-02T10:00:00Z' },
      },
    ]);
    // The wait left the list with the call's result; the model read the payload.
    expect(await waitRows(id)).toEqual([]);
    expect((await h.client.state(id)).eventWaits).toBeUndefined();
    expect(JSON.stringify(h.requestsFor('once the payment has settled').at(-1))).toContain('settled_at');
    h.expectOnlyValidModelRequests();
    await exportHistoryFixture(h.temporal, id, 'event-wait');
  });

  it('settles as event_timeout when no event comes before its deadline, and the model reads that', async () => {
    const id = h.newConversationId('event-timeout');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_quick', name: 'await_quick_reply', arguments: { ticket: 'T-1' } }] },
      { content: 'No reply yet; I will follow up.' },
    );
    const messageId = await h.client.sendMessage(id, 'Wait briefly for the customer');
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    expect(await toolResults(id)).toEqual([
      {
        kind: 'event_timeout',
        event: 'customer.replied',
        key: 'T-1',
        error: 'The event customer.replied with key T-1 did not arrive within 2 s; nothing was received.',
      },
    ]);
    expect(await waitRows(id)).toEqual([]);
    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    expect(
      history.events!.filter((e) => e.timerStartedEventAttributes?.startToFireTimeout?.seconds?.toString() === '2'),
    ).toHaveLength(1);
    h.expectOnlyValidModelRequests();
  });

  it('a cancel while it waits settles it as cancelled (it waited, nothing ran), once', async () => {
    const id = h.newConversationId('event-cancel');
    h.model.enqueue({
      toolCalls: [{ id: 'call_c', name: 'await_payment_settled', arguments: { order_id: 'ord_2001' } }],
    });
    const messageId = await h.client.sendMessage(id, 'Wait for the payment');
    await expect.poll(async () => (await waitRows(id)).length, { timeout: 20_000 }).toBe(1);
    await h.client.cancelTurn(id, 'not needed any more');
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('cancelled');
    const [result] = await toolResults(id);
    expect(result).toMatchObject({ kind: 'cancelled', started: false });
    expect(result.error).toContain('stopped waiting for the event payment.settled with key ord_2001');
    expect(await toolResults(id)).toHaveLength(1);
    expect(await waitRows(id)).toEqual([]);
    // An event after the turn ended is refused by nobody and taken by nobody.
    await h.temporal.workflow.getHandle(id).signal(eventSignal, event('payment.settled', 'ord_2001', {}));
    expect(await toolResults(id)).toHaveLength(1);
  });

  it('takes an event sent before the wait at once (kept for it), and only one wait takes it', async () => {
    const key = `ord_kept_${randomUUID().slice(0, 8)}`;
    const sent = await h.client.sendEvent({ name: 'payment.settled', key, payload: { early: true } });
    expect(sent).toMatchObject({ deliveredTo: [], kept: true });
    const first = h.newConversationId('event-kept');
    const second = h.newConversationId('event-kept-2');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_k1', name: 'await_payment_settled', arguments: { order_id: key } }] },
      { content: 'It had settled already.' },
    );
    const m1 = await h.client.sendMessage(first, 'Wait for the payment (it settled already)');
    expect((await h.client.waitForTurn(first, m1)).outcome).toBe('answered');
    expect((await toolResults(first))[0]).toMatchObject({
      kind: 'event',
      eventId: sent.eventId,
      key,
      payload: { early: true },
    });
    const { rows } = await h.pool.query('SELECT taken_by FROM durable_agent.agent_events WHERE key = $1', [key]);
    expect(rows).toEqual([{ taken_by: { conversationId: first, callKey: expect.stringContaining(first) } }]);

    // The second wait finds nothing kept: it waits.
    h.model.enqueue({
      toolCalls: [{ id: 'call_k2', name: 'await_payment_settled', arguments: { order_id: key } }],
    });
    await h.client.sendMessage(second, 'Wait for the same payment');
    await expect.poll(async () => (await waitRows(second)).length, { timeout: 20_000 }).toBe(1);
    await h.client.cancelTurn(second, 'done');
    await expect.poll(async () => (await waitRows(second)).length, { timeout: 20_000 }).toBe(0);
    expect(await toolResults(second)).toEqual([expect.objectContaining({ kind: 'cancelled' })]);
  });

  it('an event sent while two conversations wait for its key reaches both, each call once', async () => {
    const key = `ord_two_${randomUUID().slice(0, 8)}`;
    const ids = [h.newConversationId('event-both-a'), h.newConversationId('event-both-b')];
    const messages: string[] = [];
    for (const [n, id] of ids.entries()) {
      // Each asks for the wait; the answers are queued once both wait (the model server answers in queue order).
      h.model.enqueue({
        toolCalls: [{ id: `call_b${n}`, name: 'await_payment_settled', arguments: { order_id: key } }],
      });
      messages.push(await h.client.sendMessage(id, `Wait for ${key} (${n})`));
      await expect.poll(async () => (await waitRows(id)).length, { timeout: 20_000 }).toBe(1);
    }
    h.model.enqueue({ content: 'It settled.' }, { content: 'It settled.' });
    const sent = await h.client.sendEvent({ name: 'payment.settled', key, payload: { amount_cents: 700 } });
    expect(sent.kept).toBe(false);
    expect(sent.deliveredTo.map((t) => t.conversationId).sort()).toEqual([...ids].sort());
    for (const [n, id] of ids.entries()) {
      expect((await h.client.waitForTurn(id, messages[n])).outcome).toBe('answered');
      expect(await toolResults(id)).toEqual([
        expect.objectContaining({ kind: 'event', eventId: sent.eventId, payload: { amount_cents: 700 } }),
      ]);
    }
    // Sent again with its id (a retry): nothing new, nobody gets it twice.
    const again = await h.client.sendEvent({
      eventId: sent.eventId,
      name: 'payment.settled',
      key,
      payload: { amount_cents: 700 },
    });
    expect(again.eventId).toBe(sent.eventId);
    for (const id of ids) expect(await toolResults(id)).toHaveLength(1);
    h.expectOnlyValidModelRequests();
  });
});
