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

// The example chat page in Chromium: a file attached with its input goes to
// the model as an image part and shows in the message, also after a reload
// (read back from the API); Regenerate (useChat's regenerate()) produces the
// last answer again in place of the earlier one, which stays readable as a
// superseded message.

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let browser: Browser;
let scratch: string;
beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'chat-page-files-'));
  const bundle = (await buildChatPage(path.join(scratch, 'app.js'))) as string;
  h = await startHarness({ decisionTrust: { keys: [TEST_DECISION_KEY] } });
  api = await startApiServer({
    client: h.client,
    tokens: TEST_TOKENS,
    decisions: { signingKey: TEST_DECISION_KEY },
    chat: { pageBundle: bundle },
  });
  browser = await launchChromium();
});
afterAll(async () => {
  h?.expectOnlyValidModelRequests();
  await browser?.close();
  await api?.stop();
  await h?.stop();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

async function openChat(prefix: string): Promise<{ page: Page; id: string }> {
  const id = h.newConversationId(prefix);
  const page = await (await browser.newContext()).newPage();
  page.on('pageerror', (err) => console.error('page error:', err.message));
  await page.goto(`${api.url}/chat?conversation=${id}`);
  await page.fill('input[name=token]', token('d'));
  await page.click('button:has-text("Sign in")');
  await page.waitForSelector('[data-testid=subject]');
  return { page, id };
}

/** A 1×1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

describe('the example chat page with files and regenerate', () => {
  it('sends an attached image to the model and shows it, also after a reload; Regenerate replaces the answer, the earlier one readable', async () => {
    const { page, id } = await openChat('chat-page-files');
    h.model.enqueue({ content: 'A tiny dot.' });
    await page.setInputFiles('input[aria-label=Attach]', { name: 'dot.png', mimeType: 'image/png', buffer: PNG });
    await page.fill('input[aria-label=Message]', 'What is this?');
    await page.click('button:has-text("Send")');
    await page.waitForSelector('text=A tiny dot.', { timeout: 20_000 });
    expect(await page.getAttribute('li.user img.file', 'alt')).toBe('dot.png');
    const sent = h.model.requests.at(-1)!.body as { messages: { role: string; content: unknown }[] };
    expect(sent.messages.filter((m) => m.role === 'user')).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } },
        ],
      },
    ]);

    // After a reload the image is read back from the API (the history names the stored file).
    await page.reload();
    await page.waitForSelector('text=A tiny dot.', { timeout: 20_000 });
    const src = await page.getAttribute('li.user img.file', 'src');
    expect(src).toMatch(new RegExp(`^/v1/conversations/${id}/files/[0-9a-f]{64}$`));
    const loaded = await page.evaluate(async (url) => {
      const res = await fetch(url!);
      return { status: res.status, type: res.headers.get('content-type'), size: (await res.arrayBuffer()).byteLength };
    }, src);
    expect(loaded).toEqual({ status: 200, type: 'image/png', size: PNG.length });

    h.model.enqueue({ content: 'A single white pixel.' });
    const requests = h.model.requests.length;
    await page.click('button:has-text("Regenerate")');
    await page.waitForSelector('text=A single white pixel.', { timeout: 20_000 });
    expect(await page.locator('li.assistant').allTextContents()).toEqual(['A single white pixel.']);
    expect(h.model.requests.length).toBe(requests + 1);
    expect((await h.client.superseded(id)).map((m) => [m.reason, m.message.content])).toEqual([
      ['regenerate', 'A tiny dot.'],
    ]);
    await page.reload();
    await page.waitForSelector('text=A single white pixel.', { timeout: 20_000 });
    expect(await page.locator('li').count()).toBe(2);
    await page.context().close();
  });
});
