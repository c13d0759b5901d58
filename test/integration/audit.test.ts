import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startApiServer } from '../../src/api/server';
import type { ApiTokenConfig } from '../../src/api/tokens';
import type { AuditRecord } from '../../src/audit/record';
import { readAuditRecords } from '../../src/db/audit';
import { backofficeTools } from '../../src/demo/tools';
import { approvalPolicy } from '../../src/policies/approval-policy';
import { tool } from '../../src/tools/tool';
import { apiCaller, TEST_DECISION_KEY, token } from '../support/api';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';

// The audit export against a real worker, dev server, PostgreSQL and the HTTP API: people decide through the API
// (signed: an edit, a rejection with a reason, two leads' N-of-2 approval), rules allow and deny without a person, a
// regenerated turn asks for a call again; then `cli audit export` writes every decision of the range, with who, when,
// the call and its arguments, the verdict, the rule and the signed decision, and nothing outside it; `cli audit verify`
// finds every signature valid, and names the lines of an export changed afterwards. `GET /v1/audit` answers the same
// lines, for operators only, with clear refusals of a bad range.

const KEY = TEST_DECISION_KEY;
const TOKENS: ApiTokenConfig[] = [
  { subject: 'alice@example.com', roles: ['requester'], token: token('a') },
  { subject: 'bob@example.com', roles: ['approver'], token: token('b') },
  { subject: 'carol@example.com', roles: ['operator'], token: token('c') },
  { subject: 'lea@example.com', roles: ['approver'], groups: ['leads'], token: token('l') },
  { subject: 'leo@example.com', roles: ['approver'], groups: ['leads'], token: token('m') },
];

const closeAccount = tool({
  name: 'close_account',
  description: 'Closes a customer account.',
  parameters: z.object({ customer_id: z.string() }),
  execute: ({ customer_id }) => `Closed ${customer_id}.`,
});
const deleteCustomer = tool({
  name: 'delete_customer',
  description: 'Deletes a customer.',
  parameters: z.object({ customer_id: z.string() }),
  execute: ({ customer_id }) => `Deleted ${customer_id}.`,
});

const POLICY = approvalPolicy([
  { name: 'small-refunds', outcome: 'allow', tools: ['issue_refund'], where: { amount_cents: { lte: 5_000 } } },
  { name: 'close-needs-two-leads', outcome: 'ask', tools: ['close_account'], groups: ['leads'], approvals: 2 },
  { name: 'never-delete', outcome: 'deny', tools: ['delete_customer'], reason: 'Customers are never deleted here.' },
]);

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let env: Record<string, string>;
let dir: string;
beforeAll(async () => {
  h = await startHarness({
    decisionTrust: { keys: [KEY] },
    approvalPolicy: POLICY,
    tools: [...backofficeTools(), closeAccount, deleteCustomer],
  });
  api = await startApiServer({ client: h.client, tokens: TOKENS, decisions: { signingKey: KEY } });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'audit-'));
  // PostgreSQL and the API's keys only: an export needs no Temporal, a verification no database.
  env = {
    DATABASE_URL: h.databaseUrl,
    AGENT_DATA_DIR: dir,
    AGENT_DECISION_KEYS: `${KEY.id}:${KEY.secret}`,
  };
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const call = apiCaller(() => api.url);
const listed = async (id: string) =>
  ((await call('GET', '/v1/approvals', token('b'))).json.approvals as any[]).filter((a) => a.conversationId === id);
const decide = async (id: string, who: string, body: Record<string, unknown>) => {
  const decided = await call('POST', `/v1/conversations/${id}/decisions`, who, body);
  expect(decided.status, JSON.stringify(decided.json)).toBe(200);
};
/** One past the latest decision's time: where a range that must include everything decided so far ends. */
const afterLatestDecision = async (): Promise<Date> => {
  const { rows } = await h.pool.query<{ at: Date }>(
    'SELECT max(decided_at) AS at FROM durable_agent.approval_decisions',
  );
  return new Date(rows[0].at.getTime() + 1);
};
/** A refund a rule allows, asked for and answered in one turn: a decision of the rule, recorded with the message. */
async function allowedRefund(id: string, orderId: string, cents: number): Promise<void> {
  h.model.enqueue(
    {
      toolCalls: [
        {
          id: 'call_small',
          name: 'issue_refund',
          arguments: { order_id: orderId, amount_cents: cents, reason: 'late' },
        },
      ],
    },
    { content: 'Refunded.' },
  );
  await h.client.ask(id, `Refund ${cents} cents`);
}
const lines = (text: string): AuditRecord[] =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as AuditRecord);
/** A failed CLI run's output and exit code. */
const failure = (err: unknown) => err as { code: number; stdout: string; stderr: string };

describe('the audit export', () => {
  it('exports every decision of the range with who, when, the call, its arguments, the verdict, the rule and the signature; verify finds them valid and names lines changed since', async () => {
    const outside = h.newConversationId('before');
    await allowedRefund(outside, 'ord_1002', 500);
    const from = await afterLatestDecision();

    // People, through the API: bob edits one refund and rejects the other, with a reason.
    const people = h.newConversationId('people');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_a',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'broken' },
          },
          {
            id: 'call_b',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 15_000, reason: 'broken' },
          },
        ],
      },
      { content: 'Refunded 110.00; the second was a duplicate.' },
    );
    const asked = await call('POST', `/v1/conversations/${people}/messages`, token('a'), { text: 'Refund both' });
    expect(asked.status).toBe(202);
    await expect.poll(async () => (await listed(people)).length).toBe(2);
    await decide(people, token('b'), {
      decision: 'edit',
      callKeys: [`${people}/msg-1/call-0`],
      arguments: { order_id: 'ord_2001', amount_cents: 11_000, reason: 'broken' },
    });
    await decide(people, token('b'), {
      decision: 'reject',
      callKeys: [`${people}/msg-1/call-1`],
      reason: 'Duplicate of the first.',
    });
    await h.client.waitForTurn(people, asked.json.messageId);

    // Rules, without a person: a small refund allowed, a deletion denied (both decided at the same moment).
    const ruled = h.newConversationId('ruled');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_small',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 2_000, reason: 'late' },
          },
          { id: 'call_delete', name: 'delete_customer', arguments: { customer_id: 'cus_alan' } },
        ],
      },
      { content: 'Refunded 20.00; deleting is not allowed.' },
    );
    await h.client.ask(ruled, 'Refund 20 and delete Alan');

    // Two leads of two: the first approval leaves the call waiting.
    const two = h.newConversationId('two-leads');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_close', name: 'close_account', arguments: { customer_id: 'cus_grace' } }] },
      { content: 'Closed.' },
    );
    const closing = await call('POST', `/v1/conversations/${two}/messages`, token('a'), { text: 'Close Grace' });
    await expect.poll(async () => (await listed(two)).length).toBe(1);
    await decide(two, token('l'), { decision: 'approve', callKeys: [`${two}/msg-1/call-0`] });
    await decide(two, token('m'), { decision: 'approve', callKeys: [`${two}/msg-1/call-0`] });
    await h.client.waitForTurn(two, closing.json.messageId);

    // A regenerated turn asks again for a call with the same id at the same place: the first is read from the
    // superseded messages.
    const regen = h.newConversationId('regen');
    await allowedRefund(regen, 'ord_3001', 1_000);
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_small',
            name: 'issue_refund',
            arguments: { order_id: 'ord_3001', amount_cents: 1_500, reason: 'late' },
          },
        ],
      },
      { content: 'Refunded 15.00 instead.' },
    );
    const again = await h.client.regenerate(regen);
    await h.client.waitForTurn(regen, again.requestId);

    const to = await afterLatestDecision();
    const later = h.newConversationId('after');
    await allowedRefund(later, 'ord_1002', 600);
    const { rows: afterRows } = await h.pool.query(
      'SELECT decided_at FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [later],
    );
    expect(afterRows[0].decided_at.getTime()).toBeGreaterThanOrEqual(to.getTime());

    const file = path.join(dir, 'audit.jsonl');
    const exported = await runCli(
      ['audit', 'export', '--from', from.toISOString(), '--to', to.toISOString(), '--out', file],
      env,
    );
    expect(exported.stderr).toContain(
      `Exported 8 records decided from ${from.toISOString()} to ${to.toISOString()} to ${file}.`,
    );
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const text = fs.readFileSync(file, 'utf8');
    const records = lines(text);
    // Oldest first, then by decision id; nothing from before or after the range.
    const order = (r: AuditRecord) => `${r.decidedAt} ${r.decisionId}`;
    expect(records.map(order)).toEqual(records.map(order).sort());
    expect(new Set(records.map((r) => r.conversationId))).toEqual(new Set([people, ruled, two, regen]));

    const of = (id: string) => records.filter((r) => r.conversationId === id);
    const signature = { signature: expect.stringMatching(/^k1\./) };
    expect(of(people)).toEqual([
      {
        kind: 'decision',
        conversationId: people,
        decisionId: expect.any(String),
        decidedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        decidedBy: 'bob@example.com',
        authenticated: true,
        deciderGroups: null,
        via: 'update',
        verdict: 'edit',
        callStillWaits: false,
        rule: null,
        reason: null,
        response: null,
        calls: [
          {
            toolCallId: 'call_a',
            callKey: `${people}/msg-1/call-0`,
            toolName: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'broken' },
            editedArguments: { order_id: 'ord_2001', amount_cents: 11_000, reason: 'broken' },
            note: null,
          },
        ],
        superseded: false,
        supersededAt: null,
        runId: expect.any(String),
        signedDecision: expect.objectContaining({
          decision: 'edit',
          callKey: `${people}/msg-1/call-0`,
          decidedBy: 'bob@example.com',
          ...signature,
        }),
        grantId: null,
        grantAmount: null,
        grantGiven: null,
      },
      expect.objectContaining({
        kind: 'decision',
        decidedBy: 'bob@example.com',
        verdict: 'reject',
        reason: 'Duplicate of the first.',
        calls: [
          expect.objectContaining({
            toolCallId: 'call_b',
            callKey: `${people}/msg-1/call-1`,
            toolName: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 15_000, reason: 'broken' },
            editedArguments: null,
          }),
        ],
        signedDecision: expect.objectContaining({
          decision: 'reject',
          reason: 'Duplicate of the first.',
          ...signature,
        }),
      }),
    ]);
    expect(of(people)[0].signedDecision!.decisionId).toBe(of(people)[0].decisionId);

    expect(of(ruled).map((r) => [r.kind, r.via, r.decidedBy, r.verdict, r.rule, r.reason, r.signedDecision])).toEqual(
      expect.arrayContaining([
        ['policy', 'policy', 'rule:small-refunds', 'approve', 'small-refunds', null, null],
        ['policy', 'policy', 'rule:never-delete', 'reject', 'never-delete', 'Customers are never deleted here.', null],
      ]),
    );
    expect(of(ruled)[0].decidedAt).toBe(of(ruled)[1].decidedAt);
    expect(of(ruled).find((r) => r.rule === 'never-delete')!.calls).toEqual([
      {
        toolCallId: 'call_delete',
        callKey: `${ruled}/msg-1/call-1`,
        toolName: 'delete_customer',
        arguments: { customer_id: 'cus_alan' },
        editedArguments: null,
        note: null,
      },
    ]);

    expect(of(two).map((r) => [r.decidedBy, r.deciderGroups, r.rule, r.callStillWaits, r.authenticated])).toEqual([
      ['lea@example.com', ['leads'], 'close-needs-two-leads', true, true],
      ['leo@example.com', ['leads'], 'close-needs-two-leads', false, true],
    ]);
    expect(of(two)[0].calls[0]).toMatchObject({ toolName: 'close_account', arguments: { customer_id: 'cus_grace' } });
    expect(of(two)[1].signedDecision).toMatchObject({ deciderGroups: ['leads'], ...signature });

    const [first, second] = of(regen);
    expect(first.calls[0]).toMatchObject({
      callKey: `${regen}/msg-1/call-0`,
      arguments: { amount_cents: 1_000 },
      note: expect.stringMatching(/^read from superseded_messages: .* \(regenerate\)$/),
    });
    expect(second.calls[0]).toMatchObject({
      callKey: `${regen}/regen-1/msg-1/call-0`,
      arguments: { amount_cents: 1_500 },
      note: null,
    });

    // Every signed decision checks out with the API's key; the rules' own have nothing to check.
    const verified = await runCli(['audit', 'verify', file], env);
    expect(verified.stdout).toContain(`Checked 8 records of ${file} with key k1:`);
    expect(verified.stdout).toContain('  4 valid');
    expect(verified.stdout).toContain('  4 unsigned (4 decided by a rule)');
    expect((await runCli(['audit', 'verify', '-'], env, text)).stdout).toContain('  4 valid');

    // Changed after the export: a verdict, a decider, and a signed decision's own reason.
    const lineOf = (pick: (r: AuditRecord) => boolean) => records.findIndex(pick);
    const rejected = lineOf((r) => r.verdict === 'reject' && r.kind === 'decision');
    const lea = lineOf((r) => r.decidedBy === 'lea@example.com');
    const edit = lineOf((r) => r.verdict === 'edit');
    const changed = records.map((r, i) =>
      i === rejected
        ? { ...r, verdict: 'approve' }
        : i === lea
          ? { ...r, decidedBy: 'mallory@example.com' }
          : i === edit
            ? { ...r, signedDecision: { ...r.signedDecision!, reason: 'looked fine' } }
            : r,
    );
    const tampered = path.join(dir, 'tampered.jsonl');
    fs.writeFileSync(tampered, changed.map((r) => `${JSON.stringify(r)}\n`).join(''));
    const refused = failure(await runCli(['audit', 'verify', tampered], env).catch((err: unknown) => err));
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain('  1 valid');
    expect(refused.stdout).toContain('  1 invalid (signature does not match)');
    expect(refused.stdout).toContain('  2 mismatched');
    const at = (i: number) => `line ${i + 1} (decision ${records[i].decisionId} of ${records[i].conversationId})`;
    expect(refused.stdout).toContain(
      `${at(rejected)}: mismatch: verdict: the signed decision says "reject", the record "approve".`,
    );
    expect(refused.stdout).toContain(
      `${at(lea)}: mismatch: decided by: the signed decision says "lea@example.com", the record "mallory@example.com".`,
    );
    expect(refused.stdout).toContain(`${at(edit)}: invalid: the signature does not match`);

    // Without the API's keys there is nothing to verify with, and the CLI says what to set.
    const keyless = failure(
      await runCli(['audit', 'verify', file], { ...env, AGENT_DECISION_KEYS: '' }).catch((err: unknown) => err),
    );
    expect(keyless.stderr).toContain('No decision keys: AGENT_DECISION_KEYS and AGENT_DECISION_KEYS_FILE are not set');

    // The same lines through the HTTP API, by the CLI with an operator's token and by a plain GET.
    const remote = await runCli(['audit', 'export', '--from', from.toISOString(), '--to', to.toISOString()], {
      ...env,
      DATABASE_URL: '',
      AGENT_API_URL: api.url,
      AGENT_API_TOKEN: token('c'),
    });
    expect(remote.stdout).toBe(text);
    const query = `from=${encodeURIComponent(from.toISOString())}&to=${encodeURIComponent(to.toISOString())}`;
    const response = await fetch(`${api.url}/v1/audit?${query}`, {
      headers: { authorization: `Bearer ${token('c')}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8');
    expect(await response.text()).toBe(text);

    // Read a page of one, two or three at a time (the two rules' decisions share their time), the same records.
    for (const pageRows of [1, 3]) {
      const pages: AuditRecord[][] = [];
      for await (const page of readAuditRecords(h.pool, h.tables, { from, to }, pageRows)) pages.push(page);
      expect(pages.length).toBe(Math.ceil(8 / pageRows));
      expect(pages.flat()).toEqual(records);
    }
    h.expectOnlyValidModelRequests();
  });

  it('GET /v1/audit is for operators, and refuses a range that is not one with 400 saying why', async () => {
    const get = (query: string, who = token('c')) => call('GET', `/v1/audit${query}`, who);
    expect((await get('?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z', token('b'))).json.error.code).toBe(
      'forbidden',
    );
    const refusal = async (query: string) => {
      const answer = await get(query);
      expect(answer.status, query).toBe(400);
      expect(answer.json.error.code).toBe('invalid_request');
      return answer.json.error.message as string;
    };
    expect(await refusal('?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z')).toContain(
      '"to" (2026-01-01T00:00:00.000Z) must be after "from" (2026-01-02T00:00:00.000Z)',
    );
    expect(await refusal('?from=2025-01-01T00:00:00Z&to=2026-06-01T00:00:00Z')).toContain(
      'The range spans 516 days; one export covers at most 366',
    );
    expect(await refusal('?from=2026-01-01&to=2026-01-02T00:00:00Z')).toContain('from must be an ISO 8601 date-time');
    expect(await refusal('?from=2026-01-01T00:00:00Z')).toContain('to is missing: give an ISO 8601 date-time');
    // A range with nothing in it: an empty body.
    const empty = await fetch(`${api.url}/v1/audit?from=2000-01-01T00:00:00Z&to=2000-01-02T00:00:00Z`, {
      headers: { authorization: `Bearer ${token('c')}` },
    });
    expect(empty.status).toBe(200);
    expect(await empty.text()).toBe('');
    // The CLI refuses the same range before reading anything.
    const cli = failure(
      await runCli(['audit', 'export', '--from', '2026-01-02', '--to', '2026-01-01'], env).catch((err: unknown) => err),
    );
    expect(cli.stderr).toContain('error: "to" (2026-01-01T00:00:00.000Z) must be after "from"');
  });
});
