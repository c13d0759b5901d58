import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signDecision } from '../../src/common/decision-signing';
import { startApiServer } from '../../src/api/server';
import { readTokenFile, TokenVerifier } from '../../src/api/tokens';
import { DecisionRefusedError } from '../../src/common/errors';
import { exportHistoryFixture } from '../support/fixture-export';
import { apiCaller, TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { startHarness, type Harness } from '../support/harness';
import { turnEvents, type TurnStreamEvent } from '../support/stream-bodies';

// The HTTP API against the real stack: tokens and roles on every /v1 route,
// a message sent, each waiting call listed with its tool, arguments and
// requester, decisions recorded under the token's subject, four eyes, calls
// named as the approver saw them, a turn followed as server-sent events, and
// the trust boundary: the worker holds the API's decision key and refuses
// decisions the API did not sign.

const TOKENS = TEST_TOKENS;
const KEY = TEST_DECISION_KEY;

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  h = await startHarness({ textDeltaChars: 2, decisionTrust: { keys: [KEY] } });
  api = await startApiServer({ client: h.client, tokens: TOKENS, decisions: { signingKey: KEY } });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

const call = apiCaller(() => api.url);

describe('the HTTP API', () => {
  it('listens on 127.0.0.1, answers /healthz and /openapi.json without a token, and documents every /v1 route with bearer auth', async () => {
    expect(new URL(api.url).hostname).toBe('127.0.0.1');
    expect((await call('GET', '/healthz')).json).toEqual({ ok: true });
    const { status, json } = await call('GET', '/openapi.json');
    expect(status).toBe(200);
    expect(json.openapi).toMatch(/^3\./);
    const routes = Object.keys(json.paths);
    expect(routes).toEqual(
      expect.arrayContaining([
        '/v1/conversations/{id}/messages',
        '/v1/conversations/{id}',
        '/v1/conversations/{id}/transcript',
        '/v1/approvals',
        '/v1/conversations/{id}/decisions',
        '/v1/conversations/{id}/cancel',
        '/v1/conversations/{id}/events',
      ]),
    );
    for (const route of routes)
      for (const op of Object.values(json.paths[route]) as { security?: unknown }[])
        expect(op.security).toEqual([{ bearer: [] }]);
  });

  it('answers 401 on every /v1 route without a token or with an unknown one, and 403 to a token without the role', async () => {
    const { json: doc } = await call('GET', '/openapi.json');
    const needs: Record<string, string> = {
      'post /v1/conversations/{id}/messages': 'requester',
      'get /v1/conversations/{id}': 'any',
      'get /v1/conversations/{id}/transcript': 'any',
      'get /v1/approvals': 'approver',
      'post /v1/conversations/{id}/decisions': 'approver',
      'post /v1/conversations/{id}/cancel': 'requester',
      'post /v1/conversations/{id}/come-backs': 'requester',
      'post /v1/conversations/{id}/come-backs/{comeBackId}/cancel': 'requester',
      'post /v1/conversations/{id}/regenerate': 'requester',
      'get /v1/conversations/{id}/events': 'any',
      'post /v1/conversations/{id}/forks': 'any',
      'post /v1/conversations/{id}/grants/{grantId}/revoke': 'approver',
      'get /v1/conversations/{id}/superseded': 'any',
      'get /v1/conversations/{id}/ui-messages': 'any',
      'get /v1/audit': 'operator',
      'get /v1/notifications': 'operator',
      'post /v1/notifications/{eventId}/resend': 'operator',
      'post /v1/events': 'events',
      'get /v1/schedules': 'operator',
      'post /v1/schedules': 'operator',
      'get /v1/schedules/{id}': 'operator',
      'delete /v1/schedules/{id}': 'operator',
      'post /v1/schedules/{id}/pause': 'operator',
      'post /v1/schedules/{id}/resume': 'operator',
      'post /v1/schedules/{id}/trigger': 'operator',
      'post /v1/schedules/{id}/backfill': 'operator',
    };
    let checked = 0;
    for (const [route, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(ops)) {
        const key = `${method} ${route}`;
        expect(Object.keys(needs)).toContain(key);
        const url = route
          .replace('{id}', 'no-such-conversation')
          .replace('{eventId}', 'no-such-event')
          .replace('{grantId}', 'no-such-grant')
          .replace('{comeBackId}', 'no-such-come-back');
        const none = await call(method.toUpperCase(), url);
        expect(none.status, key).toBe(401);
        expect(none.json.error.code).toBe('unauthorized');
        expect((await call(method.toUpperCase(), url, token('z'))).status, key).toBe(401);
        // A token without the role: the approver cannot send messages or export the audit, the requester cannot decide
        // or list approvals, the operator cannot send events.
        const wrongFor: Record<string, string | undefined> = {
          requester: token('b'),
          approver: token('a'),
          operator: token('b'),
          events: token('c'),
        };
        const wrong = wrongFor[needs[key]];
        if (wrong) {
          const refused = await call(method.toUpperCase(), url, wrong, method === 'post' ? {} : undefined);
          expect(refused.status, key).toBe(403);
          expect(refused.json.error.code).toBe('forbidden');
        }
        checked++;
      }
    }
    expect(checked).toBe(Object.keys(needs).length);
  });

  it("a requester sends a message; the call is listed with its tool, arguments, requester and age; an approver approves it; the decision carries the token's subject, authenticated", async () => {
    const id = h.newConversationId('api');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_api',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 12_000, reason: 'broken' },
          },
        ],
      },
      { content: 'Refunded.' },
    );
    const sent = await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Refund Ada' });
    expect(sent.status).toBe(202);
    const listed = async (query = '') =>
      ((await call('GET', `/v1/approvals${query}`, token('b'))).json.approvals as any[]).filter(
        (a) => a.conversationId === id,
      );
    await expect.poll(async () => (await listed()).length, { timeout: 20_000 }).toBe(1);
    const [seen] = await listed();
    expect(seen).toMatchObject({
      toolCallId: 'call_api',
      toolName: 'issue_refund',
      arguments: { order_id: 'ord_1001', amount_cents: 12_000, reason: 'broken' },
      requestedBy: ['alice@example.com'],
      callKey: `${id}/msg-1/call-0`,
    });
    expect(seen.ageMs).toBeGreaterThanOrEqual(0);
    // Filters, answered by visibility.
    expect(await listed('?tool=issue_refund&requester=alice%40example.com')).toHaveLength(1);
    expect(await listed('?tool=find_customer')).toHaveLength(0);
    expect(await listed('?requester=bob%40example.com')).toHaveLength(0);
    expect(await listed('?minAgeSeconds=3600')).toHaveLength(0);
    const state = await call('GET', `/v1/conversations/${id}`, token('b'));
    expect(state.json.pendingApprovals.map((p: any) => p.toolCallId)).toEqual(['call_api']);

    // A decidedBy in the body is not part of the contract: it is refused, not used.
    const typed = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
      decision: 'approve',
      toolCallIds: ['call_api'],
      decidedBy: 'mallory',
    });
    expect(typed.status).toBe(400);
    const decided = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
      decision: 'approve',
      toolCallIds: ['call_api'],
    });
    expect(decided.status).toBe(200);
    expect(decided.json).toMatchObject({
      decidedBy: 'bob@example.com',
      results: [{ toolCallId: 'call_api', applied: true }],
    });
    const turn = await h.client.waitForTurn(id, sent.json.messageId);
    expect(turn.outcome).toBe('answered');
    const records = await h.pool.query(
      'SELECT decided_by, authenticated FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [id],
    );
    expect(records.rows).toEqual([{ decided_by: 'bob@example.com', authenticated: true }]);
    const transcript = await call('GET', `/v1/conversations/${id}/transcript?limit=2`, token('a'));
    expect(transcript.json.messages.map((m: any) => m.message.role)).toEqual(['user', 'assistant']);
    expect(transcript.json.next).toBe(transcript.json.messages[1].seq);
  });

  it('a decision names its calls: of two waiting calls, approving the one the approver saw leaves the other waiting', async () => {
    const id = h.newConversationId('api-bulk');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_seen',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 11_000, reason: 'a' },
          },
          {
            id: 'call_new',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'b' },
          },
        ],
      },
      { content: 'Done.' },
    );
    await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Two refunds' });
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(2);
    const decided = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
      decision: 'approve',
      toolCallIds: ['call_seen'],
    });
    expect(decided.json.results).toEqual([expect.objectContaining({ toolCallId: 'call_seen', applied: true })]);
    expect((await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_new']);
    // An unknown call id is refused with a stable code and changes nothing.
    const unknown = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
      decision: 'approve',
      toolCallIds: ['call_typo'],
    });
    expect(unknown.status).toBe(409);
    expect(unknown.json.error.code).toBe('decision_refused');
    await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
      decision: 'reject',
      toolCallIds: ['call_new'],
      reason: 'one is enough',
    });
    await expect.poll(async () => (await h.client.state(id)).status, { timeout: 20_000 }).toBe('idle');
  });

  it("four eyes: whoever sent the turn's message cannot approve its calls; another approver can", async () => {
    const id = h.newConversationId('api-four-eyes');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_own',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 15_000, reason: 'mine' },
          },
        ],
      },
      { content: 'Refunded.' },
    );
    const sent = await call('POST', `/v1/conversations/${id}/messages`, token('d'), { text: 'Refund my own order' });
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    expect((await h.client.state(id)).pendingApprovals[0].requestedBy).toEqual(['dave@example.com']);
    const own = await call('POST', `/v1/conversations/${id}/decisions`, token('d'), {
      decision: 'approve',
      toolCallIds: ['call_own'],
    });
    expect(own.status).toBe(403);
    expect(own.json.error.code).toBe('four_eyes');
    expect(own.json.error.message).toContain('dave@example.com sent the request');
    expect((await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_own']);
    const other = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
      decision: 'approve',
      toolCallIds: ['call_own'],
    });
    expect(other.status).toBe(200);
    expect((await h.client.waitForTurn(id, sent.json.messageId)).outcome).toBe('answered');
  });

  it('a decision made on a stale view approves only the call it named: a later call under the same provider id keeps waiting', async () => {
    const id = h.newConversationId('api-stale');
    // The provider restarts its ids: both turns ask for "functions.issue_refund:0".
    const reused = 'functions.issue_refund:0';
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: reused,
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 11_000, reason: 'first' },
          },
        ],
      },
      {
        toolCalls: [
          {
            id: reused,
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 19_000, reason: 'second' },
          },
        ],
      },
      { content: 'Second refunded.' },
    );
    await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Refund 110' });
    const waiting = async () =>
      ((await call('GET', '/v1/approvals', token('b'))).json.approvals as any[]).filter((a) => a.conversationId === id);
    await expect.poll(async () => (await waiting()).length, { timeout: 20_000 }).toBe(1);
    const [stale] = await waiting();
    expect(stale.arguments.amount_cents).toBe(11_000);
    // A new message interrupts the turn; the next turn asks for a refund of 190 under the same id.
    await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'No, refund 190' });
    await expect
      .poll(async () => (await waiting()).map((a) => a.arguments.amount_cents), { timeout: 20_000 })
      .toEqual([19_000]);
    const [fresh] = await waiting();
    expect(fresh.toolCallId).toBe(stale.toolCallId);
    expect(fresh.callKey).not.toBe(stale.callKey);
    // The approver decides on what they saw: the first call, by its key.
    const decided = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
      decision: 'approve',
      callKeys: [stale.callKey],
    });
    expect(decided.status).toBe(409);
    expect(decided.json.error.code).toBe('decision_refused');
    expect((await h.client.state(id)).pendingApprovals.map((p) => p.callKey)).toEqual([fresh.callKey]);
    const refunds = await h.pool.query(
      "SELECT count(*)::int AS n FROM refunds WHERE order_id = 'ord_2001' AND amount_cents = 19000",
    );
    expect(refunds.rows[0].n).toBe(0);
    await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
      decision: 'reject',
      callKeys: [fresh.callKey],
      reason: 'ask again tomorrow',
    });
    await expect.poll(async () => (await h.client.state(id)).status, { timeout: 20_000 }).toBe('idle');
  });

  it('follows a turn as server-sent events: the approval it waits on, its status, and its outcome with the answer', async () => {
    const id = h.newConversationId('api-sse');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_sse',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 12_500, reason: 'late' },
          },
        ],
      },
      { content: 'Refund of 125.00 issued.' },
    );
    const sent = await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Refund 125' });
    const response = await fetch(`${api.url}/v1/conversations/${id}/events?messageId=${sent.json.messageId}`, {
      headers: { authorization: `Bearer ${token('a')}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const events: TurnStreamEvent[] = [];
    let approved = false;
    for await (const e of turnEvents(response.body!)) {
      events.push(e);
      if (e.event === 'approval' && !approved) {
        approved = true;
        await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
          decision: 'approve',
          toolCallIds: ['call_sse'],
        });
      }
    }
    const names = events.map((e) => e.event);
    expect(names).toContain('tool_call');
    expect(events.find((e) => e.event === 'approval')!.data).toMatchObject({
      toolCallId: 'call_sse',
      toolName: 'issue_refund',
      requestedBy: ['alice@example.com'],
    });
    expect(events.filter((e) => e.event === 'status').map((e) => e.data.status)).toContain('awaiting_approval');
    expect(names[names.length - 1]).toBe('turn');
    expect(events[events.length - 1].data).toMatchObject({
      outcome: 'answered',
      answer: 'Refund of 125.00 issued.',
      requestedBy: ['alice@example.com'],
    });
  });

  it('the trust boundary: a decision the API did not sign is refused by the worker (signal and update); a tampered one too', async () => {
    const id = h.newConversationId('api-raw');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_raw',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 17_000, reason: 'raw' },
          },
        ],
      },
      { content: 'Refunded.' },
    );
    const sent = await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Refund 170' });
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    const [pending] = (await h.client.state(id)).pendingApprovals;

    // A raw signal, as `temporal workflow signal` would send it: refused, and said so in the state.
    await h.client.signalDecision(id, {
      decisionId: 'raw-1',
      decision: 'approve',
      toolCallId: 'call_raw',
      decidedBy: 'bob@example.com',
    });
    await expect
      .poll(async () => (await h.client.state(id)).refusedDecisions.map((r) => r.decisionId), { timeout: 20_000 })
      .toContain('raw-1');
    expect((await h.client.state(id)).refusedDecisions.find((r) => r.decisionId === 'raw-1')!.problem).toMatch(
      /not signed.*decide through the API/,
    );
    // The same through the update: refused with the reason.
    await expect(
      h.client.decide(id, { decisionId: 'raw-2', decision: 'approve', toolCallId: 'call_raw' }),
    ).rejects.toThrow(DecisionRefusedError);
    // Signed by the API's key, then its decider changed: the signature no longer matches.
    const signed = {
      decisionId: 'raw-3',
      decision: 'approve' as const,
      toolCallId: 'call_raw',
      callKey: pending.callKey,
      decidedBy: 'bob@example.com',
      sentAt: new Date().toISOString(),
    };
    const tampered = { ...signed, signature: signDecision(KEY, id, signed), decidedBy: 'mallory' };
    await expect(h.client.decide(id, tampered)).rejects.toThrow(/signature does not match/);
    // Signed for another conversation: refused as well.
    await expect(
      h.client.decide(id, {
        ...signed,
        decisionId: 'raw-4',
        signature: signDecision(KEY, 'other-conversation', { ...signed, decisionId: 'raw-4' }),
      }),
    ).rejects.toThrow(/signature does not match/);
    expect((await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_raw']);
    const none = await h.pool.query(
      'SELECT count(*)::int AS n FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [id],
    );
    expect(none.rows[0].n).toBe(0);

    // Signed as the API signs it: applied, authenticated.
    await h.client.decide(id, {
      ...signed,
      decisionId: 'raw-5',
      signature: signDecision(KEY, id, { ...signed, decisionId: 'raw-5' }),
    });
    expect((await h.client.waitForTurn(id, sent.json.messageId)).outcome).toBe('answered');
    const records = await h.pool.query(
      'SELECT decision_id, decided_by, authenticated FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [id],
    );
    expect(records.rows).toEqual([{ decision_id: 'raw-5', decided_by: 'bob@example.com', authenticated: true }]);
    await h.client.end(id);
    await h.temporal.workflow.getHandle(id).result();
    await exportHistoryFixture(h.temporal, id, 'signed-decisions');
  });

  it('refuses malformed requests with invalid_request, naming the field', async () => {
    const empty = await call('POST', '/v1/conversations/x/messages', token('a'), { text: '' });
    expect(empty.status).toBe(400);
    expect(empty.json.error.code).toBe('invalid_request');
    expect(empty.json.error.message).toContain('text');
    const noCalls = await call('POST', '/v1/conversations/x/decisions', token('b'), {
      decision: 'approve',
      toolCallIds: [],
    });
    expect(noCalls.status).toBe(400);
    const quoted = await call('GET', "/v1/approvals?tool=x'%20OR%20'1", token('b'));
    expect(quoted.status).toBe(400);
    expect(quoted.json.error.message).toContain('quotes');
  });
});

describe('a worker without decision keys', () => {
  it('applies an unsigned decision and records it as unauthenticated', async () => {
    const open = await startHarness();
    try {
      const id = open.newConversationId('unsigned');
      open.model.enqueue(
        {
          toolCalls: [
            {
              id: 'call_u',
              name: 'issue_refund',
              arguments: { order_id: 'ord_1001', amount_cents: 13_000, reason: 'u' },
            },
          ],
        },
        { content: 'Refunded.' },
      );
      const messageId = await open.client.sendMessage(id, 'Refund 130');
      await expect.poll(async () => (await open.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
      await open.client.signalDecision(id, {
        decisionId: 'unsigned-1',
        decision: 'approve',
        decidedBy: 'whoever typed this',
      });
      expect((await open.client.waitForTurn(id, messageId)).outcome).toBe('answered');
      const records = await open.pool.query(
        'SELECT decided_by, authenticated FROM durable_agent.approval_decisions WHERE conversation_id = $1',
        [id],
      );
      expect(records.rows).toEqual([{ decided_by: 'whoever typed this', authenticated: false }]);
    } finally {
      await open.stop();
    }
  });
});

describe('API tokens', () => {
  it('are refused when short, without subject or role, or shared; a token file others can read is refused', () => {
    expect(() => new TokenVerifier([{ subject: 'x', roles: ['approver'], token: 'short' }])).toThrow(
      /shorter than 32 characters/,
    );
    expect(() => new TokenVerifier([{ subject: '', roles: ['approver'], token: token('x') }])).toThrow(
      /has no subject/,
    );
    expect(() => new TokenVerifier([{ subject: 'x', roles: ['root' as never], token: token('x') }])).toThrow(
      /needs roles from requester, approver, operator, events/,
    );
    expect(() => new TokenVerifier([TOKENS[0], { ...TOKENS[0], subject: 'other' }])).toThrow(/another entry uses/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'api-tokens-'));
    try {
      const file = path.join(dir, 'tokens.json');
      fs.writeFileSync(file, JSON.stringify(TOKENS), { mode: 0o644 });
      fs.chmodSync(file, 0o644);
      expect(() => readTokenFile(file)).toThrow(/can be read by others \(mode 644\): run `chmod 600/);
      fs.chmodSync(file, 0o600);
      expect(new TokenVerifier(readTokenFile(file)).verify(token('b'))?.subject).toBe('bob@example.com');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
