import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
// @ts-expect-error -- a plain ESM script without declarations
import { buildChatPage } from '../../scripts/build-chat-page.mjs';
import { TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { launchChromium } from '../support/browser';
import { startHarness, type Harness } from '../support/harness';

// The example chat page (examples/chat-page: React and the AI SDK's useChat,
// bundled with esbuild) in Chromium against the real stack: signed in with
// the session cookie, it sends, shows the approval buttons, approves and
// shows the answer; a reload in the middle of a stream resumes it.

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let browser: Browser;
let scratch: string;
beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'chat-page-'));
  const bundle = (await buildChatPage(path.join(scratch, 'app.js'))) as string;
  h = await startHarness({ textDeltaChars: 2, decisionTrust: { keys: [TEST_DECISION_KEY] } });
  // dave both asks and approves here: the page's user decides on their own calls (four eyes off for this test).
  api = await startApiServer({
    client: h.client,
    tokens: TEST_TOKENS,
    decisions: { signingKey: TEST_DECISION_KEY, allowSelfApproval: true },
    chat: { pageBundle: bundle },
  });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await api?.stop();
  await h?.stop();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

/** Opens the chat page for a new conversation and signs in with `secret`; the page and the conversation id. */
async function openChat(prefix: string, secret: string): Promise<{ page: Page; id: string }> {
  const id = h.newConversationId(prefix);
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('pageerror', (err) => console.error('page error:', err.message));
  await page.goto(`${api.url}/chat?conversation=${id}`);
  await page.fill('input[name=token]', secret);
  await page.click('button:has-text("Sign in")');
  await page.waitForSelector('[data-testid=subject]');
  expect(await page.textContent('[data-testid=subject]')).toBe('dave@example.com');
  return { page, id };
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill('input[aria-label=Message]', text);
  await page.click('button:has-text("Send")');
}

describe('the example chat page', () => {
  it('sends, shows the approval buttons, approves, and shows the answer; the decision is recorded under the signed-in person', async () => {
    const { page, id } = await openChat('chat-page', token('d'));
    h.model.enqueue(
      {
        content: 'Refunding.',
        toolCalls: [
          {
            id: 'call_r',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 15_000, reason: 'late' },
          },
        ],
      },
      { content: 'Refunded 150.00 on ord_2001.' },
    );
    await send(page, 'Refund 150.00 on ord_2001');
    await page.waitForSelector('.tool[data-state=approval-requested] button:has-text("Approve")', { timeout: 20_000 });
    expect(await page.textContent('li.assistant')).toContain('issue_refund');
    await page.click('button:has-text("Approve")');
    await page.waitForSelector('text=Refunded 150.00 on ord_2001.', { timeout: 20_000 });
    expect(await page.getAttribute('.tool', 'data-state')).toBe('output-available');
    const recorded = await h.pool.query(
      'SELECT decided_by, authenticated FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [id],
    );
    expect(recorded.rows).toEqual([{ decided_by: 'dave@example.com', authenticated: true }]);
    await page.context().close();
  });

  it('a reload in the middle of a stream resumes it: the answer shows whole, once', async () => {
    const { page } = await openChat('chat-page-reload', token('d'));
    const answer = Array.from({ length: 30 }, (_, i) => `part${i}`).join(' ');
    h.model.enqueue({ content: answer, stream: { chunkDelayMs: 1_000 } }); // three pieces of text, a second apart: the reload lands mid-stream
    await send(page, 'Tell me a long story');
    const shown = async () => (await page.locator('li.assistant').allTextContents()).join('|');
    await expect.poll(shown, { timeout: 20_000 }).toContain('part3');
    expect(await page.textContent('li.assistant')).not.toContain('part29');
    const reloadedAt = Date.now();
    await page.reload();
    await expect.poll(shown, { timeout: 20_000 }).toBe(answer);
    const request = h.model.requests.at(-1)!;
    await expect.poll(() => request.closedAt, { timeout: 20_000 }).toBeDefined();
    expect(reloadedAt).toBeLessThan(request.closedAt!); // the model was still speaking when the page reloaded
    expect(await page.locator('li.assistant').count()).toBe(1);
    await page.context().close();
  });

  it('refuses a write signed in by the cookie without its CSRF token, and a requester may not open the inbox', async () => {
    const { page, id } = await openChat('chat-page-csrf', token('d'));
    const status = await page.evaluate(
      async (chatId) =>
        (
          await fetch('/v1/chat', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              id: chatId,
              messages: [{ id: 'm', role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
            }),
          })
        ).status,
      id,
    );
    expect(status).toBe(403);
    await page.context().close();
    const requester = await browser.newContext();
    const alice = await requester.newPage();
    await alice.goto(`${api.url}/chat?conversation=${h.newConversationId('chat-page-alice')}`);
    await alice.fill('input[name=token]', token('a'));
    await alice.click('button:has-text("Sign in")');
    await alice.waitForSelector('[data-testid=subject]');
    const inbox = await alice.goto(`${api.url}/inbox`);
    expect(inbox?.status()).toBe(403);
    expect(await alice.textContent('main')).toContain('The inbox is for approvers and operators');
    await requester.close();
  });
});
