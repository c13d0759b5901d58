import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import type { ApiTokenConfig } from '../../src/api/tokens';
import { approvalPolicy } from '../../src/policies/approval-policy';
import { apiCaller, TEST_DECISION_KEY, token } from '../support/api';
import { launchChromium } from '../support/browser';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';

// "My queue" against a real worker, PostgreSQL, the HTTP API, the CLI and the
// inbox in Chromium: three calls wait, one for finance only (with an
// escalation ladder), two for any approver but whoever asked. Each person
// sees first the calls they may decide, then the others, each part oldest
// first, and for each call who may decide it, its approvals so far and its
// escalation step.

const TOKENS: ApiTokenConfig[] = [
  { subject: 'alice@example.com', roles: ['requester'], token: token('a') },
  { subject: 'bob@example.com', roles: ['approver'], token: token('b') },
  { subject: 'dave@example.com', roles: ['requester', 'approver'], token: token('d') },
  { subject: 'fiona@example.com', roles: ['approver'], groups: ['finance'], token: token('f') },
];

const POLICY = approvalPolicy([
  {
    name: 'big-refunds-to-finance',
    outcome: 'ask',
    tools: ['issue_refund'],
    where: { amount_cents: { gt: 30_000 } },
    groups: ['finance'],
    // Far off: the test sees the ladder's first step still ahead.
    escalation: [{ afterMs: 3_600_000, addGroups: ['managers'] }],
  },
]);

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let browser: Browser;
beforeAll(async () => {
  h = await startHarness({ decisionTrust: { keys: [TEST_DECISION_KEY] }, approvalPolicy: POLICY });
  api = await startApiServer({ client: h.client, tokens: TOKENS, decisions: { signingKey: TEST_DECISION_KEY } });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await api?.stop();
  await h?.stop();
});

const call = apiCaller(() => api.url);

/** A refund asked for by `who` through the API; resolves once it is listed for approvers. */
async function refundWaiting(prefix: string, who: string, amountCents: number): Promise<string> {
  const id = h.newConversationId(prefix);
  h.model.enqueue({
    toolCalls: [
      {
        id: `call_${prefix.replace(/\W/g, '_')}`,
        name: 'issue_refund',
        arguments: { order_id: 'ord_1001', amount_cents: amountCents, reason: prefix },
      },
    ],
  });
  expect((await call('POST', `/v1/conversations/${id}/messages`, who, { text: `Refund (${prefix})` })).status).toBe(
    202,
  );
  await expect
    .poll(async () => (await h.client.waitingCalls()).calls.filter((c) => c.conversationId === id).length, {
      timeout: 30_000,
    })
    .toBe(1);
  return id;
}

describe('my queue', () => {
  it('lists first what the caller may decide, at the API, in the CLI and in the inbox, with who else may, the approvals and the escalation step of each', async () => {
    const finance = await refundWaiting('queue-finance', token('a'), 40_000);
    const alices = await refundWaiting('queue-alice', token('a'), 12_000);
    const daves = await refundWaiting('queue-dave', token('d'), 13_000);

    const queueOf = async (who: string) =>
      ((await call('GET', '/v1/approvals', who)).json.approvals as any[]).map(
        (a) => `${a.conversationId} ${a.mayDecide}`,
      );
    // Bob is in no group: the finance call is not his. Fiona may decide all three, oldest first. Dave may not approve
    // what he asked for (four eyes), nor the finance call.
    expect(await queueOf(token('b'))).toEqual([`${alices} true`, `${daves} true`, `${finance} false`]);
    expect(await queueOf(token('f'))).toEqual([`${finance} true`, `${alices} true`, `${daves} true`]);
    expect(await queueOf(token('d'))).toEqual([`${alices} true`, `${finance} false`, `${daves} false`]);
    const [financeCall] = ((await call('GET', '/v1/approvals', token('b'))).json.approvals as any[]).filter(
      (a) => a.conversationId === finance,
    );
    expect(financeCall.policy).toMatchObject({
      rule: 'big-refunds-to-finance',
      groups: ['finance'],
      approvals: 1,
      approvedBy: [],
      escalated: 0,
      escalationSteps: 1,
    });

    // The CLI through the API, as bob: his two first, then the finance call, said not to be his, with its rule.
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'queue-cli-'));
    const { stdout } = await runCli(['pending'], {
      AGENT_API_URL: api.url,
      AGENT_API_TOKEN: token('b'),
      AGENT_DATA_DIR: scratch,
    });
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('2 of 3 yours to decide, listed first:');
    expect(lines.filter((l) => !l.startsWith('  ')).map((l) => l.split('  ')[0])).toEqual([
      lines[0].split('  ')[0],
      alices,
      daves,
      finance,
    ]);
    const financeLine = lines.findIndex((l) => l.startsWith(`${finance}  `));
    expect(lines[financeLine]).toMatch(/not yours to approve$/);
    expect(lines[financeLine + 1]).toBe(
      '  rule big-refunds-to-finance: members of finance decide; approvals 0 of 1; escalation step 0 of 1',
    );
    expect(lines.find((l) => l.startsWith(`${alices}  `))).not.toContain('not yours');

    // The inbox in Chromium, as bob: the same order; the finance call is read only for him and names its deciders.
    await asSignedIn(token('b'), async (page) => {
      expect(await page.textContent('[data-testid=yours]')).toBe('2 of them are yours to decide.');
      expect(await conversationsShown(page, [finance, alices, daves])).toEqual([alices, daves, finance]);
      const financeBlock = page.locator(`section[data-conversation="${finance}"] article.call`);
      expect(await financeBlock.locator('[data-testid=policy-deciders]').textContent()).toBe('members of finance');
      expect(await financeBlock.locator('[data-testid=policy-approvals]').textContent()).toBe('0 of 1');
      expect(await financeBlock.locator('[data-testid=policy-escalation]').textContent()).toBe('step 0 of 1');
      expect(await financeBlock.locator('.readonly').textContent()).toContain('members of finance');
      expect(await financeBlock.locator('button.approve').count()).toBe(0);
      const alicesBlock = page.locator(`section[data-conversation="${alices}"] article.call`);
      expect(await alicesBlock.locator('[data-testid=policy-deciders]').textContent()).toBe(
        'any approver but whoever asked, one is enough',
      );
      expect(await alicesBlock.locator('button.approve').count()).toBeGreaterThan(0);
    });
    // As fiona, all three are hers, oldest first.
    await asSignedIn(token('f'), async (page) => {
      expect(await page.textContent('[data-testid=yours]')).toBe('3 of them are yours to decide.');
      expect(await conversationsShown(page, [finance, alices, daves])).toEqual([finance, alices, daves]);
    });
  });
});

/** Runs `check` on the inbox signed in with `secret`, in a browser context of its own. */
async function asSignedIn(secret: string, check: (page: Page) => Promise<void>): Promise<void> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${api.url}/inbox`);
    await page.fill('input[name=token]', secret);
    await page.click('button:has-text("Sign in")');
    await page.waitForSelector('[data-testid=subject]');
    await check(page);
  } finally {
    await context.close();
  }
}

/** The conversations among `ids` the inbox page shows, in its order. */
async function conversationsShown(page: Page, ids: string[]): Promise<string[]> {
  const shown = await page
    .locator('section[data-conversation]')
    .evaluateAll((sections) => sections.map((s) => s.getAttribute('data-conversation') ?? ''));
  return shown.filter((c) => ids.includes(c));
}
