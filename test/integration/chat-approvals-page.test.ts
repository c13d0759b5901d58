import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { backofficeTools } from '../../src/demo/tools';
import { agent } from '../../src/tools/agents';
// @ts-expect-error -- a plain ESM script without declarations
import { buildChatPage } from '../../scripts/build-chat-page.mjs';
import { apiCaller, TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { launchChromium } from '../support/browser';
import { startHarness, type Harness } from '../support/harness';

// Approvals on the example chat page under four eyes, in Chromium against the
// real stack, with two people in two browser contexts: alice asks (requester),
// bob decides (approver). Alice's page shows who may decide instead of buttons
// she cannot use, sends nothing more while the call waits, and streams bob's
// decision and the rest of the answer without a reload; a call waiting inside
// an agent called as a tool shows in the parent's chat and bob decides it there.

const tools = backofficeTools();
const refunds = tools.filter((t) => t.name === 'issue_refund');
const refunder = agent({ name: 'refunder', instructions: 'REFUNDER: issue refunds.', tools: refunds });
const desk = agent({
  name: 'desk',
  instructions: 'DESK: help, refund, or ask the refunder.',
  tools: [...refunds, refunder.asTool({ toolName: 'ask_refunder' })],
});

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
/** The same, holding a response for a decision 1.5 s only: the page resumes. */
let shortHold: Awaited<ReturnType<typeof startApiServer>>;
let browser: Browser;
let scratch: string;
beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'chat-approvals-'));
  const bundle = (await buildChatPage(path.join(scratch, 'app.js'))) as string;
  h = await startHarness({
    textDeltaChars: 2,
    tools,
    agents: [desk, refunder],
    defaultAgent: 'desk',
    decisionTrust: { keys: [TEST_DECISION_KEY] },
  });
  // Four eyes on (the default): whoever sent the request may not approve its calls.
  api = await startApiServer({
    client: h.client,
    tokens: TEST_TOKENS,
    decisions: { signingKey: TEST_DECISION_KEY },
    chat: { pageBundle: bundle },
  });
  shortHold = await startApiServer({
    client: h.client,
    tokens: TEST_TOKENS,
    decisions: { signingKey: TEST_DECISION_KEY },
    chat: { pageBundle: bundle, holdForDecisionMs: 1_500 },
  });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await api?.stop();
  await shortHold?.stop();
  await h?.stop();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

const call = apiCaller(() => api.url);

/** A person's chat page: its requests to the chat endpoint and its reloads are counted from sign-in on. */
interface ChatTab {
  context: BrowserContext;
  page: Page;
  posts: () => number;
  gets: () => number;
  navigations: () => number;
}

/** Opens the chat page of conversation `id` in a browser context of its own, signed in with `secret`. */
async function openChat(id: string, secret: string, subject: string, base = api.url): Promise<ChatTab> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('pageerror', (err) => console.error('page error:', err.message));
  await page.goto(`${base}/chat?conversation=${id}`);
  await page.fill('input[name=token]', secret);
  await page.click('button:has-text("Sign in")');
  await page.waitForSelector('[data-testid=subject]');
  expect(await page.textContent('[data-testid=subject]')).toBe(subject);
  let posts = 0;
  let gets = 0;
  let navigations = 0;
  page.on('request', (request) => {
    const { pathname } = new URL(request.url());
    if (request.method() === 'POST' && pathname === '/v1/chat') posts++;
    if (request.method() === 'GET' && pathname.startsWith('/v1/chat/')) gets++;
  });
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) navigations++;
  });
  return { context, page, posts: () => posts, gets: () => gets, navigations: () => navigations };
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill('input[aria-label=Message]', text);
  await page.click('button:has-text("Send")');
}

const waitingCall = (page: Page) => page.locator('.tool[data-state=approval-requested]');

describe('approvals on the example chat page, four eyes on', () => {
  it("the requester sees who may decide, then the approver's decision and the rest of the answer, without a reload", async () => {
    const id = h.newConversationId('chat-4eyes');
    h.model.enqueue(
      {
        content: 'Refunding.',
        toolCalls: [
          {
            id: 'call_r',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 11_000, reason: 'late' },
          },
        ],
      },
      { content: 'Refunded 110.00 on ord_1001.' },
    );
    const alice = await openChat(id, token('a'), 'alice@example.com');
    await send(alice.page, 'Refund 110.00 on ord_1001');
    await waitingCall(alice.page).waitFor({ timeout: 20_000 });
    // Alice may not decide: the approval request names the rule instead of offering buttons.
    expect(await alice.page.locator('.tool button').count()).toBe(0);
    expect(await alice.page.textContent('[data-testid=who-decides]')).toContain(
      'an approver other than alice@example.com (four eyes',
    );
    await alice.page.evaluate(() => Object.assign(globalThis, { beforeDecision: true }));

    const bob = await openChat(id, token('b'), 'bob@example.com');
    const approve = waitingCall(bob.page).locator('button:has-text("Approve")');
    await approve.waitFor({ timeout: 20_000 });
    expect(await waitingCall(bob.page).locator('button').allTextContents()).toEqual(['Approve', 'Reject']);
    const decidedAt = Date.now();
    await approve.click();
    await alice.page.waitForSelector('text=Refunded 110.00 on ord_1001.', { timeout: 20_000 });
    const latencyMs = Date.now() - decidedAt;
    console.log(
      `requester's page showed the decision and the answer ${latencyMs} ms after the approver pressed Approve`,
    );

    // The decision shows as the AI SDK's approval response, then the call's output, on the page that never reloaded.
    expect(await alice.page.textContent('.tool [data-testid=decided]')).toBe('approved');
    expect(await alice.page.getAttribute('.tool', 'data-state')).toBe('output-available');
    expect(await alice.page.evaluate(() => (globalThis as { beforeDecision?: boolean }).beforeDecision)).toBe(true);
    expect(alice.navigations()).toBe(0);
    expect(alice.posts()).toBe(1); // the message; the decision came on the same response
    const recorded = await h.pool.query(
      'SELECT decided_by FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [id],
    );
    expect(recorded.rows).toEqual([{ decided_by: 'bob@example.com' }]);
    await bob.context.close();
    await alice.context.close();
  });

  it('the requester gets no button she cannot use and the page sends nothing more while the call waits; a rejection shows as denied', async () => {
    const id = h.newConversationId('chat-own');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_own',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 20_000, reason: 'damaged' },
          },
        ],
      },
      { content: 'I did not refund it.' },
    );
    const alice = await openChat(id, token('a'), 'alice@example.com');
    await send(alice.page, 'Refund 200.00 on ord_2001');
    await waitingCall(alice.page).waitFor({ timeout: 20_000 });
    expect(await alice.page.locator('button:has-text("Approve"), button:has-text("Reject")').count()).toBe(0);
    const [postsThen, getsThen] = [alice.posts(), alice.gets()];
    // 16 s: past the response's first keep-alive comment (every 15 s), which the AI SDK's parser skips.
    await new Promise((resolve) => setTimeout(resolve, 16_000));
    console.log(
      `requests from the requester's page while the call waited 16 s: ${alice.posts() - postsThen} POST, ${alice.gets() - getsThen} GET`,
    );
    expect(await alice.page.textContent('#status')).toBe('streaming'); // the response still open, no error
    expect(await alice.page.locator('p.error').count()).toBe(0);
    expect([alice.posts(), alice.gets()]).toEqual([postsThen, getsThen]);
    expect(postsThen).toBe(1);
    expect(await alice.page.locator('[data-testid=who-decides]').count()).toBe(1); // said once
    expect((await h.client.state(id)).pendingApprovals).toHaveLength(1);

    const [pending] = (await h.client.state(id)).pendingApprovals;
    const rejected = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
      decision: 'reject',
      callKeys: [pending.callKey],
      reason: 'over the limit',
    });
    expect(rejected.status).toBe(200);
    await alice.page.waitForSelector('text=I did not refund it.', { timeout: 20_000 });
    expect(await alice.page.getAttribute('.tool', 'data-state')).toBe('output-denied');
    expect(await alice.page.textContent('.tool [data-testid=decided]')).toBe('rejected: over the limit');
    expect(alice.navigations()).toBe(0);
    await alice.context.close();
  });

  it('the requester may write while the call waits for someone else: the message ends the held response and interrupts the turn; the page then shows the new answer and the interrupted turn as it ended', async () => {
    const id = h.newConversationId('chat-write-held');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_held',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 10_600, reason: 'late' },
          },
        ],
      },
      { content: 'Fine, no refund then.' },
    );
    const alice = await openChat(id, token('a'), 'alice@example.com');
    await send(alice.page, 'Refund 106.00 on ord_2001');
    await waitingCall(alice.page).waitFor({ timeout: 20_000 });
    expect(await alice.page.textContent('#status')).toBe('streaming'); // the response is held for bob's decision
    expect(await alice.page.isEnabled('input[aria-label=Message]')).toBe(true);
    await send(alice.page, 'Never mind, do not refund it');
    await alice.page.waitForSelector('text=Fine, no refund then.', { timeout: 20_000 });
    // Once the new answer ended, the page read the conversation again: the interrupted call no longer asks.
    await expect.poll(() => waitingCall(alice.page).count(), { timeout: 10_000 }).toBe(0);
    expect(await alice.page.locator('li.user').allTextContents()).toEqual([
      'Refund 106.00 on ord_2001',
      'Never mind, do not refund it',
    ]);
    expect(await alice.page.locator('li.assistant').count()).toBe(2);
    expect(await alice.page.locator('p.error').count()).toBe(0);
    expect(await alice.page.textContent('#status')).toBe('ready');
    const state = await h.client.state(id);
    expect(state.pendingApprovals).toEqual([]);
    expect(state.recentTurns.map((t) => t.outcome)).toEqual(['interrupted', 'answered']);
    expect([alice.posts(), alice.navigations()]).toEqual([2, 0]);
    await alice.context.close();
  });

  it("in a conversation that queues new messages, the requester's message written while the call waits is answered after the approver's decision ends the held turn, both answers on the page without a reload", async () => {
    const id = h.newConversationId('chat-queue-held');
    // The chat route starts conversations with the default input: a first message through the client sets the policy.
    h.model.enqueue(
      { content: 'Hello, how can I help?' },
      {
        toolCalls: [
          {
            id: 'call_queued',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 10_700, reason: 'late' },
          },
        ],
      },
      { content: 'Refunded 107.00 on ord_2001.' },
      { content: 'The refund shows within 5 days.' },
    );
    const hello = await h.client.sendMessage(id, 'Hello', {
      input: { onNewMessage: 'queue' },
      sentBy: 'alice@example.com',
    });
    expect((await h.client.waitForTurn(id, hello, 20_000)).outcome).toBe('answered');
    const alice = await openChat(id, token('a'), 'alice@example.com');
    await alice.page.waitForSelector('text=Hello, how can I help?', { timeout: 20_000 });
    await send(alice.page, 'Refund 107.00 on ord_2001');
    await waitingCall(alice.page).waitFor({ timeout: 20_000 });
    expect(await alice.page.textContent('#status')).toBe('streaming'); // held for bob's decision
    await send(alice.page, 'When will I see it?');
    // The message waits behind the held turn: the page shows it sent, with no error, and the call still waiting.
    await expect
      .poll(() => alice.page.locator('li.user').allTextContents(), { timeout: 10_000 })
      .toContain('When will I see it?');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 10_000 }).toBe(1);
    expect(await alice.page.textContent('#status')).toBe('submitted'); // no part of its turn yet
    expect(await alice.page.locator('p.error').count()).toBe(0);

    const [pending] = (await h.client.state(id)).pendingApprovals;
    const approved = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
      decision: 'approve',
      callKeys: [pending.callKey],
    });
    expect(approved.status).toBe(200);
    for (const answer of ['Refunded 107.00 on ord_2001.', 'The refund shows within 5 days.'])
      await alice.page.waitForSelector(`text=${answer}`, { timeout: 20_000 });
    await expect.poll(() => alice.page.textContent('#status'), { timeout: 10_000 }).toBe('ready');
    expect(await alice.page.locator('li.user').allTextContents()).toEqual([
      'Hello',
      'Refund 107.00 on ord_2001',
      'When will I see it?',
    ]);
    expect(await alice.page.locator('p.error').count()).toBe(0);
    expect(await alice.page.locator('li.assistant').count()).toBe(3);
    expect(await alice.page.getAttribute('.tool', 'data-state')).toBe('output-available');
    expect(await alice.page.textContent('.tool [data-testid=decided]')).toBe('approved');
    expect([alice.posts(), alice.navigations()]).toEqual([2, 0]);
    const state = await h.client.state(id);
    expect(state.pendingApprovals).toEqual([]);
    expect(state.recentTurns.map((t) => t.outcome)).toEqual(['answered', 'answered', 'answered']);
    const applied = await h.pool.query('SELECT amount_cents FROM refunds WHERE idempotency_key LIKE $1', [`${id}/%`]);
    expect(applied.rows).toEqual([{ amount_cents: 10_700 }]);
    await alice.context.close();
  });

  it("a call waiting inside an agent called as a tool shows in the parent's chat, with the agents that ask, and an approver decides it there", async () => {
    const id = h.newConversationId('chat-below');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_ask', name: 'ask_refunder', arguments: { input: 'refund 120.00 on ord_2001' } }] },
      {
        toolCalls: [
          {
            id: 'call_below',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'late' },
          },
        ],
      },
      { content: 'Refund issued.' },
      { content: 'The refunder refunded 120.00 on ord_2001.' },
    );
    const alice = await openChat(id, token('a'), 'alice@example.com');
    await send(alice.page, 'Refund 120.00 on ord_2001');
    await waitingCall(alice.page).waitFor({ timeout: 20_000 });
    const asked = await waitingCall(alice.page).textContent();
    expect(asked).toContain('issue_refund');
    expect(asked).toContain('desk › refunder'); // the agents down to the one asking
    expect(await alice.page.locator('.tool button').count()).toBe(0);

    const bob = await openChat(id, token('b'), 'bob@example.com');
    const approve = waitingCall(bob.page).locator('button:has-text("Approve")');
    await approve.waitFor({ timeout: 20_000 });
    expect(await waitingCall(bob.page).textContent()).toContain('desk › refunder');
    await approve.click();
    for (const page of [bob.page, alice.page])
      await page.waitForSelector('text=The refunder refunded 120.00 on ord_2001.', { timeout: 20_000 });
    expect(await alice.page.textContent('.tool [data-testid=decided]')).toBe('approved');
    expect(alice.navigations()).toBe(0);
    // The decision reached the child conversation, where the call waited, made by bob.
    const recorded = await h.pool.query(
      'SELECT conversation_id, decided_by FROM durable_agent.approval_decisions WHERE conversation_id LIKE $1',
      [`${id}%`],
    );
    expect(recorded.rows).toHaveLength(1);
    expect(recorded.rows[0].decided_by).toBe('bob@example.com');
    expect(recorded.rows[0].conversation_id).not.toBe(id);
    await bob.context.close();
    await alice.context.close();
  });

  it('a wait longer than the hold ends the response saying others decide; the page resumes and still sees the decision without a reload', async () => {
    const id = h.newConversationId('chat-long-wait');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_long',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 10_500, reason: 'late' },
          },
        ],
      },
      { content: 'Refunded 105.00 on ord_2001 after a while.' },
    );
    const alice = await openChat(id, token('a'), 'alice@example.com', shortHold.url);
    await send(alice.page, 'Refund 105.00 on ord_2001');
    await waitingCall(alice.page).waitFor({ timeout: 20_000 });
    // Each response holds 1.5 s, then the page resumes: after 7 s it has resumed at least twice, a second apart.
    await new Promise((resolve) => setTimeout(resolve, 7_000));
    const resumed = alice.gets();
    console.log(`the requester's page resumed ${resumed} times in 7 s of waiting`);
    expect(resumed).toBeGreaterThanOrEqual(2);
    expect(resumed).toBeLessThanOrEqual(4);
    const [pending] = (await h.client.state(id)).pendingApprovals;
    const approved = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
      decision: 'approve',
      callKeys: [pending.callKey],
    });
    expect(approved.status).toBe(200);
    await alice.page.waitForSelector('text=Refunded 105.00 on ord_2001 after a while.', { timeout: 20_000 });
    expect(await alice.page.textContent('.tool [data-testid=decided]')).toBe('approved');
    expect(await alice.page.locator('li.assistant').count()).toBe(1);
    expect([alice.posts(), alice.navigations()]).toEqual([1, 0]);
    await alice.context.close();
  });
});
