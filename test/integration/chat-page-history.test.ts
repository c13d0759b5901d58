import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
// @ts-expect-error -- a plain ESM script without declarations
import { buildChatPage } from '../../scripts/build-chat-page.mjs';
import { TEST_TOKENS, token } from '../support/api';
import { launchChromium } from '../support/browser';
import { startHarness, type Harness } from '../support/harness';

// The example chat page starts from the conversation's history
// (GET /v1/conversations/{id}/ui-messages), in Chromium against the real
// stack: after a reload (just after a turn ended, when a reconnect still
// replays it; long after, when it answers 204; and in the middle of a
// streaming turn) the whole conversation shows, the user's messages
// included, each message once.

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
/** An API that replays no ended turn on resume: a reload there is as one more than a minute after the turn ended. */
let late: Awaited<ReturnType<typeof startApiServer>>;
let browser: Browser;
let scratch: string;
beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'chat-page-history-'));
  const bundle = (await buildChatPage(path.join(scratch, 'app.js'))) as string;
  h = await startHarness({ textDeltaChars: 2 });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS, chat: { pageBundle: bundle } });
  late = await startApiServer({
    client: h.client,
    tokens: TEST_TOKENS,
    chat: { pageBundle: bundle, replayEndedTurnMs: 0 },
  });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await api?.stop();
  await late?.stop();
  await h?.stop();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

/** Opens the chat page of conversation `id` on `base`, signed in as dave, in a browser context of its own. */
async function openChat(base: string, id: string): Promise<Page> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('pageerror', (err) => console.error('page error:', err.message));
  await page.goto(`${base}/chat?conversation=${id}`);
  await page.fill('input[name=token]', token('d'));
  await page.click('button:has-text("Sign in")');
  await page.waitForSelector('[data-testid=subject]');
  await page.waitForSelector('#status');
  return page;
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill('input[aria-label=Message]', text);
  await page.click('button:has-text("Send")');
}

/** The messages shown: their role and text. */
const shown = async (page: Page): Promise<string[]> =>
  page.locator('#messages > li').evaluateAll((items) => items.map((li) => `${li.className}: ${li.textContent}`));

/** Waits until the page shows exactly `expected` (each entry: a role and a text its message contains) and is idle. */
async function expectConversation(page: Page, expected: [role: string, text: string][]): Promise<void> {
  const matches = async () => {
    const now = await shown(page);
    return (
      now.length === expected.length &&
      expected.every(([role, text], i) => now[i].startsWith(`${role}: `) && now[i].split(text).length === 2)
    );
  };
  await expect.poll(matches, { timeout: 20_000 }).toBe(true);
  await expect.poll(() => page.textContent('#status'), { timeout: 20_000 }).toBe('ready');
  // Still so once a resumed stream (a replay of the last turn) is read whole.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect(await matches(), (await shown(page)).join('\n')).toBe(true);
}

describe('the example chat page after a reload', () => {
  it('after finished turns, just after and long after: the whole conversation, the user’s messages included, each once', async () => {
    const id = h.newConversationId('chat-history');
    const page = await openChat(api.url, id);
    h.model.enqueue(
      {
        content: 'Looking.',
        toolCalls: [{ id: 'call_list', name: 'list_orders', arguments: { customer_id: 'cus_alan' } }],
      },
      { content: 'Alan has ord_2001.' },
      { content: 'Nothing else is open.' },
    );
    await send(page, 'Which orders has Alan?');
    await page.waitForSelector('text=Alan has ord_2001.', { timeout: 20_000 });
    await expect.poll(() => page.textContent('#status'), { timeout: 20_000 }).toBe('ready');
    await send(page, 'Anything else?');
    await page.waitForSelector('text=Nothing else is open.', { timeout: 20_000 });
    const conversation: [string, string][] = [
      ['user', 'Which orders has Alan?'],
      ['assistant', 'Alan has ord_2001.'],
      ['user', 'Anything else?'],
      ['assistant', 'Nothing else is open.'],
    ];
    await expectConversation(page, conversation);

    // Just after the end: the history, then a resume that replays the last turn under the id the page holds.
    const resumed: number[] = [];
    page.on('response', (r) => r.url().endsWith(`/v1/chat/${id}/stream`) && resumed.push(r.status()));
    await page.reload();
    await expectConversation(page, conversation);
    expect(resumed).toEqual([200]);
    expect(await page.locator('li.assistant .tool[data-state=output-available]').count()).toBe(1);

    // Long after (no replay): the history alone, and the resume answers 204.
    const later = await openChat(late.url, id);
    const laterResumed: number[] = [];
    later.on('response', (r) => r.url().endsWith(`/v1/chat/${id}/stream`) && laterResumed.push(r.status()));
    await later.reload();
    await expectConversation(later, conversation);
    // The reload's resume answers 204; so does the first load's, when its answer comes after the listener was added.
    expect(laterResumed.length).toBeGreaterThan(0);
    expect(laterResumed.filter((status) => status !== 204)).toEqual([]);
    await page.context().close();
    await later.context().close();
  });

  it('in the middle of a streaming turn: the earlier turns and the user’s message show, and the answer streams on, once', async () => {
    const id = h.newConversationId('chat-history-running');
    const page = await openChat(api.url, id);
    h.model.enqueue({ content: 'First answer.' });
    await send(page, 'First question');
    await page.waitForSelector('text=First answer.', { timeout: 20_000 });
    await expect.poll(() => page.textContent('#status'), { timeout: 20_000 }).toBe('ready');
    const answer = Array.from({ length: 30 }, (_, i) => `part${i}`).join(' ');
    h.model.enqueue({ content: answer, stream: { chunkDelayMs: 1_000 } }); // three pieces, a second apart
    await send(page, 'Tell me a long story');
    await expect.poll(async () => (await shown(page)).join('|'), { timeout: 20_000 }).toContain('part3');
    const reloadedAt = Date.now();
    await page.reload();
    // The history shows the turn so far at once, before its stream is resumed.
    await expect
      .poll(async () => (await shown(page)).slice(0, 3), { timeout: 20_000 })
      .toEqual(['user: First question', 'assistant: First answer.', 'user: Tell me a long story']);
    await expectConversation(page, [
      ['user', 'First question'],
      ['assistant', 'First answer.'],
      ['user', 'Tell me a long story'],
      ['assistant', answer],
    ]);
    const request = h.model.requests.at(-1)!;
    expect(reloadedAt).toBeLessThan(request.closedAt!); // the model was still speaking when the page reloaded
    await page.context().close();
  });
});
