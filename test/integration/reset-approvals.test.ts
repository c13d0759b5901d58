import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { callInstanceKey } from '../../src/core/effect-keys';
import { apiCaller, TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';
import { pairingProblemsOf } from '../support/pairing';
import { historyOf, lastTask, resetTo, waitForApproval, waitForTurns } from '../support/temporal-reset';

// An operator resets a conversation with reapplying turned off (`temporal workflow reset --reapply-exclude All`) to
// before a turn whose refund was approved, and the user's message is sent again: the model asks for the same refund,
// under the same call key as the call the abandoned run had decided. That call waits for a person, so it is in every
// approvers' list (the API's, the inbox's, the CLI's `pending`, the backlog) and shows undecided in the chat's reads;
// approving it there runs it (the ledger answers: one refund).

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let cliEnv: Record<string, string>;
beforeAll(async () => {
  h = await startHarness({ decisionTrust: { keys: [TEST_DECISION_KEY] } });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS, decisions: { signingKey: TEST_DECISION_KEY } });
  cliEnv = {
    TEMPORAL_ADDRESS: h.temporalAddress,
    DATABASE_URL: h.databaseUrl,
    TEMPORAL_TASK_QUEUE: h.taskQueue,
    AGENT_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'reset-approvals-')),
  };
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

const call = apiCaller(() => api.url);
const alice = token('a');
const bob = token('b');

const refund = {
  id: 'call_big',
  name: 'issue_refund',
  arguments: { order_id: 'ord_2001', amount_cents: 11_000, reason: 'damaged' },
};

const refundsOf = async (id: string) =>
  (
    await h.pool.query<{ amount_cents: number }>(
      'SELECT amount_cents FROM refunds WHERE idempotency_key LIKE $1 ORDER BY id',
      [`${id}/%`],
    )
  ).rows.map((r) => r.amount_cents);

const decisionsOf = async (id: string) =>
  (
    await h.pool.query<{ decided_by: string; superseded: boolean }>(
      `SELECT decided_by, superseded_at IS NOT NULL AS superseded FROM durable_agent.approval_decisions
        WHERE conversation_id = $1 ORDER BY decided_at`,
      [id],
    )
  ).rows;

/** Bob's session on the inbox page: its cookie and the form's CSRF token. */
async function inboxSession(): Promise<{ cookie: string; page: () => Promise<string> }> {
  const signIn = await fetch(`${api.url}/inbox/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: bob }),
    redirect: 'manual',
  });
  expect(signIn.status).toBe(303);
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0];
  return { cookie, page: async () => (await fetch(`${api.url}/inbox`, { headers: { cookie } })).text() };
}

/** Alice sends `text` through the API; bob approves the call it waits on through the API; the turn answers. */
async function refundApprovedThroughApi(id: string, text: string): Promise<void> {
  h.model.enqueue({ toolCalls: [refund] }, { content: 'Refunded 110.00 on ord_2001.' });
  expect((await call('POST', `/v1/conversations/${id}/messages`, alice, { text })).status).toBe(202);
  await waitForApproval(h, id);
  const decided = await call('POST', `/v1/conversations/${id}/decisions`, bob, {
    toolCallIds: ['call_big'],
    decision: 'approve',
  });
  expect(decided, JSON.stringify(decided.json)).toMatchObject({ status: 200 });
  await waitForTurns(h, id, 2);
}

describe('a call asked again after an operator reset without reapplying', () => {
  it('is in GET /v1/approvals, the inbox, cli pending and the backlog, shows undecided, and approving it in the inbox refunds once', async () => {
    const id = h.newConversationId('reset-relisted');
    h.model.enqueue({ content: 'Hello.' });
    expect((await call('POST', `/v1/conversations/${id}/messages`, alice, { text: 'Hi' })).status).toBe(202);
    await waitForTurns(h, id, 1);
    const afterFirstTurn = lastTask(await historyOf(h, id));
    await refundApprovedThroughApi(id, 'Refund 110.00 on ord_2001');
    expect(await refundsOf(id)).toEqual([11_000]);
    const key = callInstanceKey(id, 3, 0);

    // Back to before the second message arrived; nothing after that point (the message, the decision) is applied again.
    await resetTo(h, id, afterFirstTurn, { reapplyExclude: 'All' });
    await waitForTurns(h, id, 1);
    expect((await h.client.state(id)).recentTurns).toHaveLength(1);

    h.model.enqueue({ toolCalls: [refund] }, { content: 'Refunded 110.00 on ord_2001, asked again.' });
    const sent = await call('POST', `/v1/conversations/${id}/messages`, alice, { text: 'Refund 110.00 on ord_2001' });
    expect(sent.status).toBe(202);
    await waitForApproval(h, id);
    expect((await h.client.state(id)).pendingApprovals.map((p) => p.callKey)).toEqual([key]);

    // The API's list of every waiting call.
    const listed = await call('GET', '/v1/approvals', bob);
    expect(listed.status).toBe(200);
    expect(listed.json.approvals.filter((c: { conversationId: string }) => c.conversationId === id)).toEqual([
      expect.objectContaining({ toolCallId: 'call_big', callKey: key, toolName: 'issue_refund' }),
    ]);
    // The CLI's pending, read from PostgreSQL.
    const pending = (await runCli(['pending'], cliEnv)).stdout.split('\n').filter((l) => l.startsWith(`${id} `));
    expect(pending).toEqual([expect.stringContaining(`call_big  issue_refund(`)]);
    expect(pending[0]).toContain(`key ${key}`);
    // The backlog counts the conversation.
    expect((await h.client.approvalBacklog()).find((b) => b.waited === 'any')?.conversations).toBe(1);
    // The chat reads no decision on it: the abandoned run's is superseded.
    expect((await h.client.callDecisions(id, [key])).size).toBe(0);
    expect(await decisionsOf(id)).toEqual([{ decided_by: 'bob@example.com', superseded: true }]);

    // The inbox lists it, and approving it there runs it.
    const inbox = await inboxSession();
    const page = await inbox.page();
    expect(page).toContain(key);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1];
    const approved = await fetch(`${api.url}/inbox/conversations/${encodeURIComponent(id)}/decisions`, {
      method: 'POST',
      headers: { cookie: inbox.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf, callKey: key, decision: 'approve' }),
      redirect: 'manual',
    });
    expect(approved.status).toBe(303);
    await waitForTurns(h, id, 2);

    // One refund: the new run's call found the effect the abandoned run's call recorded under the same key and arguments.
    expect(await refundsOf(id)).toEqual([11_000]);
    const transcript = (await h.client.transcript(id)).map((m) => m.message);
    expect(pairingProblemsOf(transcript)).toEqual([]);
    expect(transcript.at(-1)).toMatchObject({ content: 'Refunded 110.00 on ord_2001, asked again.' });
    expect(await decisionsOf(id)).toEqual([
      { decided_by: 'bob@example.com', superseded: true },
      { decided_by: 'bob@example.com', superseded: false },
    ]);
    expect((await h.client.callDecisions(id, [key])).get(key)).toMatchObject({ decision: 'approve' });
    expect((await call('GET', '/v1/approvals', bob)).json.approvals).not.toContainEqual(
      expect.objectContaining({ conversationId: id }),
    );
    h.expectOnlyValidModelRequests();
  });

  it('reset to where it waited, its decision not reapplied: it is listed again, and the new decision is the one read', async () => {
    const id = h.newConversationId('reset-waits-again');
    h.model.enqueue({ content: 'Hello.' });
    expect((await call('POST', `/v1/conversations/${id}/messages`, alice, { text: 'Hi' })).status).toBe(202);
    await waitForTurns(h, id, 1);
    h.model.enqueue({ toolCalls: [refund] }, { content: 'Refunded 110.00 on ord_2001.' });
    expect((await call('POST', `/v1/conversations/${id}/messages`, alice, { text: 'Refund 110.00' })).status).toBe(202);
    await waitForApproval(h, id);
    const waiting = lastTask(await historyOf(h, id));
    const key = callInstanceKey(id, 3, 0);
    const approved = await call('POST', `/v1/conversations/${id}/decisions`, bob, {
      toolCallIds: ['call_big'],
      decision: 'approve',
    });
    expect(approved, JSON.stringify(approved.json)).toMatchObject({ status: 200 });
    await waitForTurns(h, id, 2);

    await resetTo(h, id, waiting, { reapplyExclude: 'All' });
    await waitForApproval(h, id);
    // The abandoned run's decision took the call out of PostgreSQL's list; the list still shows it, from the state.
    await expect
      .poll(async () => (await call('GET', '/v1/approvals', bob)).json.approvals, { timeout: 15_000 })
      .toEqual([expect.objectContaining({ conversationId: id, toolCallId: 'call_big', callKey: key })]);
    const pending = (await runCli(['pending'], cliEnv)).stdout.split('\n').filter((l) => l.startsWith(`${id} `));
    expect(pending).toEqual([expect.stringContaining(`key ${key}`)]);

    h.model.enqueue({ content: 'Not refunded this time.' });
    const rejected = await call('POST', `/v1/conversations/${id}/decisions`, bob, {
      callKeys: [key],
      decision: 'reject',
      reason: 'not after all',
    });
    expect(rejected, JSON.stringify(rejected.json)).toMatchObject({ status: 200 });
    await waitForTurns(h, id, 2);
    // The refund the abandoned run made stays (PostgreSQL is not rewound); the new run's call was rejected.
    expect(await refundsOf(id)).toEqual([11_000]);
    expect((await h.client.callDecisions(id, [key])).get(key)).toMatchObject({ decision: 'reject' });
    expect(await decisionsOf(id)).toEqual([
      { decided_by: 'bob@example.com', superseded: true },
      { decided_by: 'bob@example.com', superseded: false },
    ]);
    const transcript = (await h.client.transcript(id)).map((m) => m.message);
    expect(pairingProblemsOf(transcript)).toEqual([]);
    expect(transcript.at(-1)).toMatchObject({ content: 'Not refunded this time.' });
    h.expectOnlyValidModelRequests();
  });
});
