import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { backofficeTools } from '../../src/demo/tools';
import { tool } from '../../src/tools/tool';
import type { ChatMessage } from '../../src/contract/messages';
import { apiCaller, TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { runCli } from '../support/cli';
import { effectKeyOf } from '../support/effect-keys';
import { startHarness, type Harness } from '../support/harness';

// Edit and respond, the two decisions besides approve and reject, on the real
// stack: through the HTTP API (signed), its CLI, and the rules each tool sets.

let wires = 0;
const wire = tool({
  name: 'wire_money',
  description: 'Sends money; not idempotent.',
  parameters: z.object({ to: z.string(), cents: z.number().int().positive() }),
  needsApproval: true,
  idempotent: false,
  execute: () => ({ wired: ++wires }),
});
const strict = tool({
  name: 'close_account',
  description: 'Closes an account; only approve or reject.',
  parameters: z.object({ account: z.string() }),
  needsApproval: true,
  decisions: ['approve', 'reject'],
  execute: ({ account }) => ({ closed: account }),
});

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let scratch: string;
beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'edit-respond-'));
  h = await startHarness({ tools: [...backofficeTools(), wire, strict], decisionTrust: { keys: [TEST_DECISION_KEY] } });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS, decisions: { signingKey: TEST_DECISION_KEY } });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

const call = apiCaller(() => api.url);
const decide = (id: string, body: Record<string, unknown>, who = token('b')) =>
  call('POST', `/v1/conversations/${encodeURIComponent(id)}/decisions`, who, body);
const refundsFor = async (key: string) =>
  (await h.pool.query('SELECT amount_cents FROM refunds WHERE idempotency_key = $1', [key])).rows;
const messagesOf = async (id: string): Promise<ChatMessage[]> => (await h.client.transcript(id)).map((m) => m.message);
const resultOf = async (id: string, toolCallId: string) =>
  JSON.parse(
    (await messagesOf(id)).find(
      (m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool' && m.tool_call_id === toolCallId,
    )!.content,
  );

/** Sends a message through the API as alice whose turn asks for `calls`; resolves once they wait. */
async function waiting(
  prefix: string,
  calls: { id: string; name: string; arguments: Record<string, unknown> }[],
  answer: string,
) {
  const id = h.newConversationId(prefix);
  h.model.enqueue({ toolCalls: calls }, { content: answer });
  const sent = await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: `${prefix} please` });
  expect(sent.status).toBe(202);
  await expect
    .poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 })
    .toBe(calls.length);
  return { id, messageId: sent.json.messageId as string };
}

describe('edit and respond', () => {
  it('an edited refund runs once with the edited amount; the result says so, the transcript keeps the model’s arguments, the record keeps both and the editor', async () => {
    const { id, messageId } = await waiting(
      'edit-refund',
      [
        {
          id: 'call_r',
          name: 'issue_refund',
          arguments: { order_id: 'ord_2001', amount_cents: 15_000, reason: 'late' },
        },
      ],
      'Refunded 120.00.',
    );
    const [pending] = (await h.client.state(id)).pendingApprovals;
    expect(pending.decisions).toEqual(['approve', 'reject', 'edit', 'respond']);
    const own = await decide(
      id,
      {
        decision: 'edit',
        toolCallIds: ['call_r'],
        arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'late' },
      },
      token('a'),
    );
    expect(own.status).toBe(403); // four eyes: an edit runs the call, so the requester may not make it
    const edited = await decide(id, {
      decision: 'edit',
      toolCallIds: ['call_r'],
      arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'late' },
    });
    expect(edited.status).toBe(200);
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');

    const key = (await effectKeyOf(h.pool, id, 'call_r'))!;
    expect(await refundsFor(key)).toEqual([{ amount_cents: 12_000 }]);
    const result = await resultOf(id, 'call_r');
    expect(result).toMatchObject({
      edited_by: 'bob@example.com',
      arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'late' },
      model_arguments: { order_id: 'ord_2001', amount_cents: 15_000, reason: 'late' },
      result: { order_id: 'ord_2001', amount_cents: 12_000 },
    });
    const asked = (await messagesOf(id)).find((m) => m.role === 'assistant' && m.tool_calls);
    expect(
      JSON.parse((asked as Extract<ChatMessage, { role: 'assistant' }>).tool_calls![0].function.arguments).amount_cents,
    ).toBe(15_000);
    const records = await h.pool.query(
      'SELECT decision, decided_by, authenticated, arguments, model_arguments FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [id],
    );
    expect(records.rows).toEqual([
      {
        decision: 'edit',
        decided_by: 'bob@example.com',
        authenticated: true,
        arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'late' },
        model_arguments: { order_id: 'ord_2001', amount_cents: 15_000, reason: 'late' },
      },
    ]);
    h.expectOnlyValidModelRequests();
  });

  it('an edit that does not fit the tool’s schema is refused, saying why, and the call still waits', async () => {
    const { id, messageId } = await waiting(
      'edit-bad',
      [
        {
          id: 'call_r',
          name: 'issue_refund',
          arguments: { order_id: 'ord_2001', amount_cents: 11_000, reason: 'late' },
        },
      ],
      'Refunded.',
    );
    const refused = await decide(id, {
      decision: 'edit',
      toolCallIds: ['call_r'],
      arguments: { order_id: 'ord_2001', amount_cents: -5 },
    });
    expect(refused.status).toBe(409);
    expect(refused.json.error.message).toMatch(
      /Edit refused: the new arguments do not fit issue_refund: [\s\S]*at amount_cents[\s\S]*Nothing changed; the call still waits/,
    );
    expect((await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_r']);
    const missing = await decide(id, { decision: 'edit', toolCallIds: ['call_r'] });
    expect(missing.status).toBe(400);
    expect(missing.json.error.message).toContain('"arguments" go with an "edit" decision');
    // Over the worker's limits, though within the request's: refused as bad requests, saying the limit.
    const huge = await decide(id, {
      decision: 'edit',
      toolCallIds: ['call_r'],
      arguments: { order_id: 'ord_2001', amount_cents: 100, reason: 'x'.repeat(300 * 1024) },
    });
    expect(huge.status).toBe(400);
    expect(huge.json.error.message).toMatch(
      /"arguments" are \d+ bytes of JSON; they may have at most 262144\. Nothing was decided\./,
    );
    const emoji = await decide(id, {
      decision: 'respond',
      toolCallIds: ['call_r'],
      response: '\u{1F600}'.repeat(20_000),
    });
    expect(emoji.status).toBe(400);
    expect(emoji.json.error.message).toContain(
      '"response" is 40000 characters; it may have at most 32768. Nothing was decided.',
    );
    expect((await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_r']);
    expect((await decide(id, { decision: 'approve', toolCallIds: ['call_r'] })).status).toBe(200);
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    expect(await refundsFor((await effectKeyOf(h.pool, id, 'call_r'))!)).toEqual([{ amount_cents: 11_000 }]);
  });

  it("respond settles the call with the person's answer, marked as theirs; the tool does not run", async () => {
    const { id, messageId } = await waiting(
      'respond',
      [
        {
          id: 'call_r',
          name: 'issue_refund',
          arguments: { order_id: 'ord_2001', amount_cents: 13_000, reason: 'late' },
        },
      ],
      'Understood: refunded by hand.',
    );
    const answered = await decide(id, {
      decision: 'respond',
      toolCallIds: ['call_r'],
      response: 'Refunded by hand in the till: 130.00.',
    });
    expect(answered.status).toBe(200);
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    expect(await refundsFor((await effectKeyOf(h.pool, id, 'call_r'))!)).toEqual([]);
    expect(await resultOf(id, 'call_r')).toMatchObject({
      kind: 'responded',
      by: 'bob@example.com',
      response: 'Refunded by hand in the till: 130.00.',
    });
    const records = await h.pool.query(
      'SELECT decision, response FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [id],
    );
    expect(records.rows).toEqual([{ decision: 'respond', response: 'Refunded by hand in the till: 130.00.' }]);
    h.expectOnlyValidModelRequests();
  });

  it('each tool sets what may be decided: respond is off for a tool that is not idempotent, and a tool may allow only approve and reject', async () => {
    const { id, messageId } = await waiting(
      'kinds',
      [
        { id: 'call_w', name: 'wire_money', arguments: { to: 'acme', cents: 500 } },
        { id: 'call_c', name: 'close_account', arguments: { account: 'acc_1' } },
      ],
      'Done.',
    );
    const pending = (await h.client.state(id)).pendingApprovals;
    expect(pending.map((p) => [p.toolName, p.decisions])).toEqual([
      ['wire_money', ['approve', 'reject', 'edit']],
      ['close_account', ['approve', 'reject']],
    ]);
    const respond = await decide(id, { decision: 'respond', toolCallIds: ['call_w'], response: 'sent by hand' });
    expect(respond.status).toBe(409);
    expect(respond.json.error.message).toContain(
      'Tool call "call_w" (wire_money) does not allow "respond": its tool allows approve, reject, edit.',
    );
    const edit = await decide(id, { decision: 'edit', toolCallIds: ['call_c'], arguments: { account: 'acc_2' } });
    expect(edit.status).toBe(409);
    expect(edit.json.error.message).toContain('does not allow "edit"');
    const before = wires;
    expect(
      (await decide(id, { decision: 'edit', toolCallIds: ['call_w'], arguments: { to: 'acme', cents: 400 } })).status,
    ).toBe(200);
    expect((await decide(id, { decision: 'reject', toolCallIds: ['call_c'], reason: 'not today' })).status).toBe(200);
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    expect(wires).toBe(before + 1);
    expect(await resultOf(id, 'call_w')).toMatchObject({
      arguments: { to: 'acme', cents: 400 },
      model_arguments: { to: 'acme', cents: 500 },
    });
  });

  it('the CLI edits with approve --edit and answers with respond, through the API', async () => {
    const env = { AGENT_API_URL: api.url, AGENT_API_TOKEN: token('b'), AGENT_DATA_DIR: scratch };
    const { id, messageId } = await waiting(
      'cli-edit',
      [
        {
          id: 'call_r',
          name: 'issue_refund',
          arguments: { order_id: 'ord_2001', amount_cents: 14_000, reason: 'late' },
        },
        { id: 'call_w', name: 'wire_money', arguments: { to: 'acme', cents: 900 } },
      ],
      'Both settled.',
    );
    const edited = await runCli(['approve', id, 'call_w', '--edit', '{"to":"acme","cents":800}'], env);
    expect(edited.stdout).toContain('Approved with edited arguments {"to":"acme","cents":800} as bob@example.com');
    const responded = await runCli(['respond', id, 'call_r', '--text', 'Refund handled by the store.'], env);
    expect(responded.stdout).toContain('Answered as bob@example.com: issue_refund [call_r]; the tool does not run');
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    expect(await resultOf(id, 'call_w')).toMatchObject({
      edited_by: 'bob@example.com',
      arguments: { to: 'acme', cents: 800 },
    });
    expect(await resultOf(id, 'call_r')).toMatchObject({ kind: 'responded', response: 'Refund handled by the store.' });
    const badJson = await runCli(['approve', id, 'call_w', '--edit', '{oops'], env).catch(
      (err: { stderr: string }) => err,
    );
    expect((badJson as { stderr: string }).stderr).toContain('--edit takes the arguments as a JSON object');
  });

  it('the inbox page edits (checking the JSON before sending) and responds, in Chromium', async () => {
    const CHROMIUM = '/usr/bin/chromium';
    if (!fs.existsSync(CHROMIUM))
      throw new Error(
        `This test drives Debian's Chromium at ${CHROMIUM}; install it (apt-get install chromium; .ci/run does).`,
      );
    const { id, messageId } = await waiting(
      'inbox-edit',
      [
        {
          id: 'call_r',
          name: 'issue_refund',
          arguments: { order_id: 'ord_2001', amount_cents: 16_000, reason: 'late' },
        },
        {
          id: 'call_p',
          name: 'issue_refund',
          arguments: { order_id: 'ord_2001', amount_cents: 10_500, reason: 'late' },
        },
      ],
      'One edited, one answered.',
    );
    const [edit, answer] = (await h.client.state(id)).pendingApprovals;
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    try {
      const page = await (await browser.newContext()).newPage();
      await page.goto(`${api.url}/inbox`);
      await page.fill('input[name=token]', token('b'));
      await page.click('button:has-text("Sign in")');
      await page.goto(`${api.url}/inbox/conversations/${encodeURIComponent(id)}`);
      const item = page.locator(`[data-call-key="${edit.callKey}"]`);
      await item.locator('[data-testid=edit] summary').click();
      const editor = item.locator('textarea[name=arguments]');
      expect(JSON.parse(await editor.inputValue())).toEqual({
        order_id: 'ord_2001',
        amount_cents: 16_000,
        reason: 'late',
      });
      // Not JSON: the page says so and sends nothing.
      await editor.fill('{"order_id": "ord_2001", "amount_cents": 12000,');
      await item.locator('button:has-text("Run with these arguments")').click();
      expect(await item.locator('[data-testid=edit-problem]').textContent()).toMatch(
        /^The arguments are not JSON: .* Nothing was sent\.$/,
      );
      expect((await h.client.state(id)).pendingApprovals).toHaveLength(2);
      await editor.fill('{"order_id": "ord_2001", "amount_cents": 12000, "reason": "late, edited"}');
      await item.locator('button:has-text("Run with these arguments")').click();
      await page.waitForSelector('[data-flash]');
      expect(await page.textContent('[data-flash]')).toContain('You approved with your arguments call call_r');
      const other = page.locator(`[data-call-key="${answer.callKey}"]`);
      await other.locator('[data-testid=respond] summary').click();
      await other.locator('textarea[name=response]').fill('Refunded by hand at the counter.');
      await other.locator('button:has-text("Respond")').click();
      await expect
        .poll(async () => page.textContent('[data-flash]').catch(() => ''), { timeout: 10_000 })
        .toContain('You answered call call_p');
    } finally {
      await browser.close();
    }
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    expect(await refundsFor((await effectKeyOf(h.pool, id, 'call_r'))!)).toEqual([{ amount_cents: 12_000 }]);
    expect(await refundsFor((await effectKeyOf(h.pool, id, 'call_p'))!)).toEqual([]);
    expect(await resultOf(id, 'call_p')).toMatchObject({
      kind: 'responded',
      by: 'bob@example.com',
      response: 'Refunded by hand at the counter.',
    });
    h.expectOnlyValidModelRequests();
  });
});
