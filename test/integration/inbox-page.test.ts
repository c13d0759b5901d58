import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { apiCaller, TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { launchChromium } from '../support/browser';
import { startHarness, type Harness } from '../support/harness';

// The approval inbox in a real browser (Debian's Chromium, driven by
// playwright-core) against the real stack: a requester's message waits for
// approval; an approver signs in with their token, sees the call with its
// arguments, requester and conversation, approves with a reason and watches
// the answer arrive. Also: the session cookie's flags, CSRF and Origin
// checks, who may sign in and decide, four eyes, escaping, sign-out.

const TOKENS = TEST_TOKENS;
const KEY = TEST_DECISION_KEY;
/** Where the inbox's screenshot goes: the README's with `INBOX_SCREENSHOT=docs/inbox.png`, else a temporary file. */
const SCREENSHOT = path.resolve(process.env.INBOX_SCREENSHOT ?? path.join(os.tmpdir(), `inbox-${process.pid}.png`));

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let browser: Browser;
beforeAll(async () => {
  h = await startHarness({ decisionTrust: { keys: [KEY] } });
  api = await startApiServer({ client: h.client, tokens: TOKENS, decisions: { signingKey: KEY } });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await api?.stop();
  await h?.stop();
});

const call = apiCaller(() => api.url);

/**
 * A requester's message (through the API) whose turn asks for `issue_refund` over the approval limit; resolves once the
 * call waits in the inbox's list.
 */
async function refundWaiting(
  prefix: string,
  options: { who?: string; text: string; args: Record<string, unknown>; answer: string; slowAnswer?: boolean },
) {
  const id = h.newConversationId(prefix);
  const toolCallId = `call_${prefix.replace(/\W/g, '_')}`;
  h.model.enqueue(
    { toolCalls: [{ id: toolCallId, name: 'issue_refund', arguments: options.args }] },
    // A slow answer (keep-alive lines a second apart before the first chunk) arrives only after the page has loaded.
    { content: options.answer, ...(options.slowAnswer ? { stream: { keepAlive: 4, chunkDelayMs: 1_000 } } : {}) },
  );
  const sent = await call('POST', `/v1/conversations/${id}/messages`, options.who ?? token('a'), {
    text: options.text,
  });
  expect(sent.status).toBe(202);
  await expect
    .poll(async () => (await h.client.waitingCalls()).calls.filter((a) => a.conversationId === id).length, {
      timeout: 30_000,
    })
    .toBe(1);
  const [pending] = (await h.client.waitingCalls()).calls.filter((a) => a.conversationId === id);
  return { id, toolCallId, callKey: pending.callKey, messageId: sent.json.messageId as string };
}

/** A fresh browser context signed in to the inbox with `secret`. */
async function signedIn(secret: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  await page.goto(`${api.url}/inbox`);
  await page.fill('input[name=token]', secret);
  await page.click('button:has-text("Sign in")');
  await page.waitForSelector('[data-testid=subject]');
  return { context, page };
}

async function decisionsRecorded(id: string): Promise<{ decided_by: string; authenticated: boolean }[]> {
  return (
    await h.pool.query(
      'SELECT decided_by, authenticated FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [id],
    )
  ).rows;
}

describe('the approval inbox', () => {
  it("acceptance: an approver signs in, sees the requester's waiting refund (tool, arguments, requester, message), approves with a reason, and the page shows the turn's answer as it arrives", async () => {
    const answer = 'Refunded 120.00 to order ord_1001.';
    const waiting = await refundWaiting('inbox-accept', {
      text: 'Please refund Ada for the broken kettle',
      args: { order_id: 'ord_1001', amount_cents: 12_000, reason: 'broken kettle' },
      answer,
      slowAnswer: true,
    });

    const { context, page } = await signedIn(token('b'));
    try {
      expect(await page.textContent('[data-testid=subject]')).toBe('bob@example.com');
      const card = page.locator(`section[data-conversation="${waiting.id}"]`);
      await card.waitFor();
      const item = card.locator(`[data-call-key="${waiting.callKey}"]`);
      expect(await item.locator('.name').textContent()).toBe('issue_refund');
      expect(JSON.parse((await item.locator('[data-testid=arguments]').textContent())!)).toEqual({
        order_id: 'ord_1001',
        amount_cents: 12_000,
        reason: 'broken kettle',
      });
      expect(await item.locator('[data-testid=requested-by]').textContent()).toBe('alice@example.com');
      expect(await item.textContent()).toMatch(/waiting \d+ s/);
      expect(await card.textContent()).toContain(waiting.id);
      expect(await card.locator('.msg.user').textContent()).toContain('Please refund Ada for the broken kettle');
      expect(await card.locator('.msg.assistant').textContent()).toContain('calls issue_refund');

      // The session cookie: HttpOnly, SameSite=Strict, Path=/, and not the token.
      const cookies = await context.cookies(api.url);
      const session = cookies.find((c) => c.name === 'agent_session');
      expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/', secure: false });
      expect(session!.value).not.toContain(token('b'));
      expect(session!.value.length).toBeGreaterThanOrEqual(43); // 32 random bytes, base64url

      fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });

      await item.locator('textarea[name=reason]').fill('Kettle arrived broken; photo in ticket 4411');
      let navigations = 0;
      page.on('framenavigated', (frame) => {
        if (frame === page.mainFrame()) navigations++;
      });
      await item.locator('button:has-text("Approve")').click();
      await page.waitForURL(`${api.url}/inbox/conversations/${waiting.id}`);
      expect(await page.textContent('[data-flash]')).toContain(`You approved call ${waiting.toolCallId}`);
      // The answer streams in seconds later: the page was loaded without it and shows it by refreshing itself, without
      // a reload.
      const landed = navigations;
      expect(await page.locator('[data-testid=answer]').count()).toBe(0);
      expect(await page.locator('main').getAttribute('data-live')).toBe('true');
      await expect
        .poll(
          async () =>
            page
              .locator('[data-testid=answer]')
              .textContent()
              .catch(() => null),
          { timeout: 30_000 },
        )
        .toBe(answer);
      expect(navigations).toBe(landed);
      expect(landed).toBe(1);
      expect(await page.textContent('[data-testid=status]')).toBe('idle');
      expect(await page.textContent('[data-testid=last-turn]')).toContain('answered');
      expect(await page.locator('main').getAttribute('data-live')).toBe('false');
      expect(await page.locator('main .msg.user').first().textContent()).toContain('Please refund Ada');

      expect((await h.client.waitForTurn(waiting.id, waiting.messageId)).outcome).toBe('answered');
      expect(await decisionsRecorded(waiting.id)).toEqual([{ decided_by: 'bob@example.com', authenticated: true }]);
      const reasons = await h.pool.query(
        'SELECT reason FROM durable_agent.approval_decisions WHERE conversation_id = $1',
        [waiting.id],
      );
      expect(reasons.rows).toEqual([{ reason: 'Kettle arrived broken; photo in ticket 4411' }]);
    } finally {
      await context.close();
    }
  });

  it('sends a Content-Security-Policy with a nonce for its one inline script and style, and keeps its routes out of /openapi.json', async () => {
    const response = await fetch(`${api.url}/inbox`);
    const csp = response.headers.get('content-security-policy')!;
    expect(csp).toMatch(/default-src 'none'/);
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)![1];
    expect(csp).toContain(`style-src 'nonce-${nonce}'`);
    expect(csp).toContain("frame-ancestors 'none'");
    const body = await response.text();
    expect(body.match(/<script\b[^>]*>/g)).toEqual([`<script nonce="${nonce}">`]);
    expect(body.match(/<style\b[^>]*>/g)).toEqual([`<style nonce="${nonce}">`]);
    const doc = (await call('GET', '/openapi.json')).json;
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/inbox'))).toEqual([]);
  });

  it('refuses a wrong token (401) and a requester-only token (403) at sign-in, setting no cookie; a requester-only token cannot decide either', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(`${api.url}/inbox`);
      await page.fill('input[name=token]', token('z'));
      const [wrong] = await Promise.all([
        page.waitForResponse((r) => r.url().endsWith('/inbox/sign-in')),
        page.click('button:has-text("Sign in")'),
      ]);
      expect(wrong.status()).toBe(401);
      expect(await page.textContent('[role=alert]')).toContain('That token is not valid');
      await page.fill('input[name=token]', token('a'));
      const [requester] = await Promise.all([
        page.waitForResponse((r) => r.url().endsWith('/inbox/sign-in')),
        page.click('button:has-text("Sign in")'),
      ]);
      expect(requester.status()).toBe(403);
      expect(await page.textContent('[role=alert]')).toContain(
        'for approvers and operators; the token of alice@example.com has the role requester',
      );
      expect(await context.cookies(api.url)).toEqual([]);
      expect(await page.locator('[data-testid=subject]').count()).toBe(0);
    } finally {
      await context.close();
    }
    // Nor does a requester's bearer token decide through the form route (no session, no decision).
    const waiting = await refundWaiting('inbox-requester', {
      text: 'Refund 111',
      args: { order_id: 'ord_2001', amount_cents: 11_100, reason: 'r' },
      answer: 'Done.',
    });
    const refused = await fetch(`${api.url}/inbox/conversations/${waiting.id}/decisions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token('a')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ callKey: waiting.callKey, decision: 'approve' }).toString(),
    });
    expect(refused.status).toBe(401);
    expect((await h.client.state(waiting.id)).pendingApprovals.map((p) => p.callKey)).toEqual([waiting.callKey]);
    expect(await decisionsRecorded(waiting.id)).toEqual([]);
    await call('POST', `/v1/conversations/${waiting.id}/decisions`, token('b'), {
      decision: 'reject',
      callKeys: [waiting.callKey],
    });
    await expect.poll(async () => (await h.client.state(waiting.id)).status, { timeout: 20_000 }).toBe('idle');
  });

  it('refuses a decision POST without the CSRF token, with a wrong one, or from another origin (403), deciding nothing; the same form with its token decides', async () => {
    const waiting = await refundWaiting('inbox-csrf', {
      text: 'Refund 130',
      args: { order_id: 'ord_2001', amount_cents: 13_000, reason: 'csrf' },
      answer: 'Rejected, as asked.',
    });
    const { context, page } = await signedIn(token('b'));
    try {
      const cookie = (await context.cookies(api.url)).find((c) => c.name === 'agent_session')!;
      const csrf = await page.locator(`[data-call-key="${waiting.callKey}"] input[name=_csrf]`).getAttribute('value');
      expect(csrf).toBeTruthy();
      const post = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
        fetch(`${api.url}/inbox/conversations/${waiting.id}/decisions`, {
          method: 'POST',
          redirect: 'manual',
          headers: {
            cookie: `agent_session=${cookie.value}`,
            'content-type': 'application/x-www-form-urlencoded',
            ...headers,
          },
          body: new URLSearchParams(fields).toString(),
        });
      const form = { callKey: waiting.callKey, decision: 'approve', reason: 'forged' };
      const missing = await post(form);
      expect(missing.status).toBe(403);
      expect(await missing.text()).toContain('missing its security token (CSRF)');
      expect((await post({ ...form, _csrf: 'x'.repeat(csrf!.length) })).status).toBe(403);
      const foreign = await post({ ...form, _csrf: csrf! }, { origin: 'https://evil.example' });
      expect(foreign.status).toBe(403);
      expect(await foreign.text()).toContain('sent from another site');
      expect((await h.client.state(waiting.id)).pendingApprovals.map((p) => p.callKey)).toEqual([waiting.callKey]);
      expect(await decisionsRecorded(waiting.id)).toEqual([]);

      // The page's own form (token and Origin as the browser sends them) decides: here, a rejection.
      const item = page.locator(`[data-call-key="${waiting.callKey}"]`);
      await item.locator('textarea[name=reason]').fill('not this one');
      await item.locator('button:has-text("Reject")').click();
      await page.waitForURL(`${api.url}/inbox/conversations/${waiting.id}`);
      expect(await page.textContent('[data-flash]')).toContain(`You rejected call ${waiting.toolCallId}`);
      await expect.poll(async () => page.textContent('[data-testid=status]'), { timeout: 30_000 }).toBe('idle');
      expect(await decisionsRecorded(waiting.id)).toEqual([{ decided_by: 'bob@example.com', authenticated: true }]);
    } finally {
      await context.close();
    }
  });

  it('four eyes: an approver whose own message asked for the call sees the refusal on the page, with the reason typed kept across live refreshes; nothing is decided', async () => {
    const waiting = await refundWaiting('inbox-four-eyes', {
      who: token('d'),
      text: 'Refund my own order',
      args: { order_id: 'ord_2001', amount_cents: 15_000, reason: 'mine' },
      answer: 'Refunded.',
    });
    const { context, page } = await signedIn(token('d'));
    try {
      const item = page.locator(`[data-call-key="${waiting.callKey}"]`);
      await item.waitFor();
      expect(await item.locator('[data-testid=requested-by]').textContent()).toBe('dave@example.com');
      expect(await item.locator('.note').textContent()).toContain('four eyes');
      await item.locator('textarea[name=reason]').fill('I checked it myself');
      await item.locator('button:has-text("Approve")').click();
      await page.waitForURL(`${api.url}/inbox`);
      const flash = await page.textContent('[data-flash]');
      expect(flash).toContain('dave@example.com sent the request that asked for');
      expect(flash).toContain('(four eyes)');
      expect(await page.locator(`[data-call-key="${waiting.callKey}"] textarea[name=reason]`).inputValue()).toBe(
        'I checked it myself',
      );
      // Still there after the page has refreshed itself (a new rendering swapped in, no reload).
      const rendered = await page.locator('main').getAttribute('data-rendered');
      await expect
        .poll(async () => page.locator('main').getAttribute('data-rendered'), { timeout: 10_000 })
        .not.toBe(rendered);
      expect(page.url()).toBe(`${api.url}/inbox`);
      expect(await page.textContent('[data-flash]')).toContain('(four eyes)');
      expect(await page.locator(`[data-call-key="${waiting.callKey}"] textarea[name=reason]`).inputValue()).toBe(
        'I checked it myself',
      );
      expect((await h.client.state(waiting.id)).pendingApprovals.map((p) => p.callKey)).toEqual([waiting.callKey]);
      expect(await decisionsRecorded(waiting.id)).toEqual([]);
    } finally {
      await context.close();
    }
    const other = await call('POST', `/v1/conversations/${waiting.id}/decisions`, token('b'), {
      decision: 'approve',
      callKeys: [waiting.callKey],
    });
    expect(other.status).toBe(200);
    expect((await h.client.waitForTurn(waiting.id, waiting.messageId)).outcome).toBe('answered');
  });

  it('operators see waiting calls read-only: no decision form, and may fork at one', async () => {
    const waiting = await refundWaiting('inbox-operator', {
      text: 'Refund 140',
      args: { order_id: 'ord_2001', amount_cents: 14_000, reason: 'op' },
      answer: 'Done.',
    });
    const { context, page } = await signedIn(token('c'));
    try {
      const item = page.locator(`[data-call-key="${waiting.callKey}"]`);
      await item.waitFor();
      expect(await item.locator('.name').textContent()).toBe('issue_refund');
      expect(await item.locator('form:not([data-testid=fork])').count()).toBe(0);
      expect(await item.textContent()).toContain('Read only');
      // Operators may fork at the waiting call: a new conversation in which the call is answered as not run.
      await item.locator('button:has-text("Fork here")').click();
      const flash = (await page.locator('[data-flash]').textContent()) ?? '';
      const forkId = /into the new conversation (\S+):/.exec(flash)?.[1];
      expect(forkId, flash).toBeDefined();
      expect(page.url()).toContain(`/inbox/conversations/${encodeURIComponent(forkId!)}`);
      expect((await h.client.state(forkId!)).forkedFrom).toEqual({ conversationId: waiting.id, seq: 1 });
      expect((await h.client.state(waiting.id)).pendingApprovals).toHaveLength(1);
    } finally {
      await context.close();
    }
    await call('POST', `/v1/conversations/${waiting.id}/decisions`, token('b'), {
      decision: 'reject',
      callKeys: [waiting.callKey],
    });
    await expect.poll(async () => (await h.client.state(waiting.id)).status, { timeout: 20_000 }).toBe('idle');
  });

  it('escapes what conversations and tools say: markup in a message and in arguments is shown as text, never run', async () => {
    const text = '<img src=x onerror="window.__xss=1"> refund please';
    const waiting = await refundWaiting('inbox-xss', {
      text,
      args: { order_id: 'ord_2001', amount_cents: 16_000, reason: '</pre><script>window.__xss=2</script>\u202Eevil' },
      answer: 'Done.',
    });
    const { context, page } = await signedIn(token('b'));
    try {
      const card = page.locator(`section[data-conversation="${waiting.id}"]`);
      await card.waitFor();
      expect(await card.locator('.msg.user .text').textContent()).toBe(text);
      expect(await card.locator('[data-testid=arguments]').textContent()).toContain(
        '</pre><script>window.__xss=2</script>⟨U+202E⟩evil',
      );
      expect(await page.locator('main img, main script').count()).toBe(0);
      const rendered = await page.locator('main').getAttribute('data-rendered');
      await expect
        .poll(async () => page.locator('main').getAttribute('data-rendered'), { timeout: 10_000 })
        .not.toBe(rendered); // and after a live refresh
      expect(await card.locator('.msg.user .text').textContent()).toBe(text);
      expect(await page.locator('main img, main script').count()).toBe(0);
      expect(await page.evaluate(() => (globalThis as { __xss?: number }).__xss)).toBeUndefined();
    } finally {
      await context.close();
    }
    await call('POST', `/v1/conversations/${waiting.id}/decisions`, token('b'), {
      decision: 'reject',
      callKeys: [waiting.callKey],
    });
    await expect.poll(async () => (await h.client.state(waiting.id)).status, { timeout: 20_000 }).toBe('idle');
  });

  it('approve and grant: an approval with a grant of one call lets the next call run without waiting, the page shows the grant used up; an approver revokes another grant there', async () => {
    // An order of its own, with enough left to refund for every call here.
    await h.pool.query(
      `INSERT INTO public.orders (id, customer_id, description, total_cents) VALUES ('ord_grant', 'cus_alan', 'Grant test order', 100000)
       ON CONFLICT (id) DO NOTHING`,
    );
    const refund = (callId: string) => ({
      toolCalls: [
        {
          id: callId,
          name: 'issue_refund',
          arguments: { order_id: 'ord_grant', amount_cents: 11_000, reason: 'late' },
        },
      ],
    });
    const waiting = await refundWaiting('inbox-grant', {
      text: 'Refund 110',
      args: { order_id: 'ord_grant', amount_cents: 11_000, reason: 'late' },
      answer: 'First refunded.',
    });
    const { context, page } = await signedIn(token('b'));
    try {
      await page.goto(`${api.url}/inbox/conversations/${waiting.id}`);
      const item = page.locator(`[data-call-key="${waiting.callKey}"]`);
      await item.locator('[data-testid=grant] summary').click();
      expect(await item.locator('[data-testid=grant]').textContent()).toContain('later calls of issue_refund');
      // The call's numeric arguments are offered for an amount limit.
      expect(
        await item
          .locator('[data-testid=grant] datalist option')
          .evaluateAll((o) => o.map((e) => e.getAttribute('value'))),
      ).toEqual(['amount_cents']);
      await item.locator('input[name=grantCalls]').fill('1');
      await item.locator('button:has-text("Run it and grant")').click();
      await page.waitForURL(`${api.url}/inbox/conversations/${waiting.id}`);
      const flash = (await page.textContent('[data-flash]')) ?? '';
      expect(flash).toContain(`You approved call ${waiting.toolCallId}.`);
      expect(flash).toContain(
        'granted later calls of issue_refund in this conversation to run without asking, up to 1 later call',
      );
      const grantId = /\(grant ([^)]+)\)/.exec(flash)?.[1];
      expect(grantId, flash).toBeDefined();
      expect((await h.client.waitForTurn(waiting.id, waiting.messageId)).outcome).toBe('answered');

      // The next refund runs without waiting for anyone: the grant decides it, in bob's name.
      h.model.enqueue(refund('call_inbox_grant_2'), { content: 'Second refunded.' });
      const second = await call('POST', `/v1/conversations/${waiting.id}/messages`, token('a'), {
        text: 'Refund 110 again',
      });
      expect((await h.client.waitForTurn(waiting.id, second.json.messageId)).outcome).toBe('answered');
      const covered = await h.pool.query(
        `SELECT decided_by, via, grant_id, authenticated FROM durable_agent.approval_decisions
          WHERE conversation_id = $1 AND 'call_inbox_grant_2' = ANY (tool_call_ids)`,
        [waiting.id],
      );
      expect(covered.rows).toEqual([
        { decided_by: 'bob@example.com', via: 'grant', grant_id: grantId, authenticated: true },
      ]);

      await page.reload();
      const used = page.locator(`[data-testid=grants] [data-grant-id="${grantId}"]`);
      expect(await used.locator('[data-testid=grant-status]').textContent()).toBe('used up');
      expect(await used.locator('[data-testid=grant-use]').textContent()).toBe('1 of 1 calls');
      expect(await used.locator('[data-testid=grant-by]').textContent()).toContain('bob@example.com');
      expect(await used.locator('button:has-text("Revoke")').count()).toBe(0);

      // Spent, it covers no more: the third refund waits; approved through the API with a grant of an hour.
      h.model.enqueue(refund('call_inbox_grant_3'), { content: 'Third refunded.' });
      const third = await call('POST', `/v1/conversations/${waiting.id}/messages`, token('a'), {
        text: 'Refund 110 once more',
      });
      await expect
        .poll(async () => (await h.client.state(waiting.id)).pendingApprovals.map((p) => p.toolCallId), {
          timeout: 20_000,
        })
        .toEqual(['call_inbox_grant_3']);
      const [pending] = (await h.client.state(waiting.id)).pendingApprovals;
      const hour = await call('POST', `/v1/conversations/${waiting.id}/decisions`, token('b'), {
        decision: 'approve',
        callKeys: [pending.callKey],
        grant: { expiresInMs: 3_600_000 },
      });
      expect(hour.status).toBe(200);
      const otherId = hour.json.results[0].grant.id;
      expect((await h.client.waitForTurn(waiting.id, third.json.messageId)).outcome).toBe('answered');

      await page.reload();
      const other = page.locator(`[data-testid=grants] [data-grant-id="${otherId}"]`);
      expect(await other.locator('[data-testid=grant-status]').textContent()).toBe('live');
      expect(await other.locator('[data-testid=grant-use]').textContent()).toBe('0 calls');
      // The Revoke form is CSRF-protected like the others.
      const cookie = (await context.cookies(api.url)).find((c) => c.name === 'agent_session')!;
      const forged = await fetch(`${api.url}/inbox/conversations/${waiting.id}/grants/${otherId}/revoke`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: `agent_session=${cookie.value}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ reason: 'forged' }).toString(),
      });
      expect(forged.status).toBe(403);
      expect((await h.client.state(waiting.id)).grants?.find((g) => g.id === otherId)?.live).toBe(true);

      await other.locator('input[name=reason]').fill('one hour is too long');
      await other.locator('button:has-text("Revoke")').click();
      await page.waitForURL(`${api.url}/inbox/conversations/${waiting.id}`);
      expect(await page.textContent('[data-flash]')).toContain(`You revoked grant ${otherId}`);
      const revoked = page.locator(`[data-testid=grants] [data-grant-id="${otherId}"]`);
      expect(await revoked.locator('[data-testid=grant-status]').textContent()).toBe('revoked');
      expect(await revoked.locator('[data-testid=grant-revoked]').textContent()).toContain('by bob@example.com');
      expect((await h.client.state(waiting.id)).grants?.find((g) => g.id === otherId)).toMatchObject({
        revokedBy: 'bob@example.com',
        live: false,
      });
    } finally {
      await context.close();
    }
    // Operators see the grants, read only.
    const operator = await signedIn(token('c'));
    try {
      await operator.page.goto(`${api.url}/inbox/conversations/${waiting.id}`);
      expect(await operator.page.locator('[data-testid=grants] [data-grant-id]').count()).toBe(2);
      expect(await operator.page.locator('[data-testid=grants] button:has-text("Revoke")').count()).toBe(0);
    } finally {
      await operator.context.close();
    }
  });

  it('signs out: the session ends on the server, so its cookie no longer opens the inbox', async () => {
    const { context, page } = await signedIn(token('b'));
    try {
      const cookie = (await context.cookies(api.url)).find((c) => c.name === 'agent_session')!;
      await page.click('button:has-text("Sign out")');
      await page.waitForSelector('input[name=token]');
      expect((await context.cookies(api.url)).filter((c) => c.name === 'agent_session')).toEqual([]);
      const again = await fetch(`${api.url}/inbox`, { headers: { cookie: `agent_session=${cookie.value}` } });
      const body = await again.text();
      expect(body).toContain('Your session has ended');
      expect(body).not.toContain('bob@example.com');
    } finally {
      await context.close();
    }
  });
});
