import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../src/api/server';
import { readTokenFile, TokenVerifier, type ApiTokenConfig } from '../src/api/tokens';
import { startHarness, type Harness } from './support/harness';

// The HTTP API against the real stack: tokens and roles on every /v1 route,
// a message sent, the approval listed from visibility, a decision recorded
// under the token's subject, and a decision that names its calls.

const token = (c: string) => c.repeat(40);
const TOKENS: ApiTokenConfig[] = [
  { subject: 'alice@example.com', roles: ['requester'], token: token('a') },
  { subject: 'bob@example.com', roles: ['approver'], token: token('b') },
  { subject: 'carol@example.com', roles: ['operator'], token: token('c') },
];

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  h = await startHarness();
  api = await startApiServer({ client: h.client, tokens: TOKENS });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

async function call(method: string, route: string, who?: string, body?: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(`${api.url}${route}`, {
    method,
    headers: { ...(who ? { authorization: `Bearer ${who}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: await response.json().catch(() => undefined) };
}

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
      ]),
    );
    for (const route of routes) for (const op of Object.values(json.paths[route]) as { security?: unknown }[]) expect(op.security).toEqual([{ bearer: [] }]);
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
    };
    let checked = 0;
    for (const [route, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(ops)) {
        const key = `${method} ${route}`;
        expect(Object.keys(needs)).toContain(key);
        const url = route.replace('{id}', 'no-such-conversation');
        const none = await call(method.toUpperCase(), url);
        expect(none.status, key).toBe(401);
        expect(none.json.error.code).toBe('unauthorized');
        expect((await call(method.toUpperCase(), url, token('z'))).status, key).toBe(401);
        // A token without the role: the approver cannot send messages, the requester cannot decide or list approvals.
        const wrong = needs[key] === 'requester' ? token('b') : needs[key] === 'approver' ? token('a') : undefined;
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

  it('a requester sends a message; the approval is listed; an approver approves the call by id; the decision carries the token\'s subject, not a typed name', async () => {
    const id = h.newConversationId('api');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_api', name: 'issue_refund', arguments: { order_id: 'ord_1001', amount_cents: 12_000, reason: 'broken' } }] },
      { content: 'Refunded.' },
    );
    const sent = await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Refund Ada' });
    expect(sent.status).toBe(202);
    await expect.poll(async () => (await call('GET', '/v1/approvals', token('b'))).json.conversations.map((c: any) => c.conversationId), { timeout: 20_000 }).toContain(id);
    const state = await call('GET', `/v1/conversations/${id}`, token('b'));
    expect(state.json.pendingApprovals.map((p: any) => p.toolCallId)).toEqual(['call_api']);

    // A decidedBy in the body is not part of the contract: it is refused, not used.
    const typed = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), { decision: 'approve', toolCallIds: ['call_api'], decidedBy: 'mallory' });
    expect(typed.status).toBe(400);
    const decided = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), { decision: 'approve', toolCallIds: ['call_api'] });
    expect(decided.status).toBe(200);
    expect(decided.json).toMatchObject({ decidedBy: 'bob@example.com', results: [{ toolCallId: 'call_api', applied: true }] });
    const turn = await h.client.waitForTurn(id, sent.json.messageId);
    expect(turn.outcome).toBe('answered');
    const records = await h.pool.query('SELECT decided_by FROM durable_agent.approval_decisions WHERE conversation_id = $1', [id]);
    expect(records.rows).toEqual([{ decided_by: 'bob@example.com' }]);
    const transcript = await call('GET', `/v1/conversations/${id}/transcript?limit=2`, token('a'));
    expect(transcript.json.messages.map((m: any) => m.message.role)).toEqual(['user', 'assistant']);
    expect(transcript.json.next).toBe(transcript.json.messages[1].seq);
  });

  it('a decision names its calls: of two waiting calls, approving the one the approver saw leaves the other waiting', async () => {
    const id = h.newConversationId('api-bulk');
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_seen', name: 'issue_refund', arguments: { order_id: 'ord_2001', amount_cents: 11_000, reason: 'a' } },
          { id: 'call_new', name: 'issue_refund', arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'b' } },
        ],
      },
      { content: 'Done.' },
    );
    await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Two refunds' });
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(2);
    const decided = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), { decision: 'approve', toolCallIds: ['call_seen'] });
    expect(decided.json.results).toEqual([expect.objectContaining({ toolCallId: 'call_seen', applied: true })]);
    expect((await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_new']);
    // An unknown call id is refused with a stable code and changes nothing.
    const unknown = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), { decision: 'approve', toolCallIds: ['call_typo'] });
    expect(unknown.status).toBe(409);
    expect(unknown.json.error.code).toBe('decision_refused');
    await call('POST', `/v1/conversations/${id}/decisions`, token('b'), { decision: 'reject', toolCallIds: ['call_new'], reason: 'one is enough' });
    await expect.poll(async () => (await h.client.state(id)).status, { timeout: 20_000 }).toBe('idle');
  });

  it('refuses malformed requests with invalid_request, naming the field', async () => {
    const empty = await call('POST', '/v1/conversations/x/messages', token('a'), { text: '' });
    expect(empty.status).toBe(400);
    expect(empty.json.error.code).toBe('invalid_request');
    expect(empty.json.error.message).toContain('text');
    const noCalls = await call('POST', '/v1/conversations/x/decisions', token('b'), { decision: 'approve', toolCallIds: [] });
    expect(noCalls.status).toBe(400);
  });
});

describe('API tokens', () => {
  it('are refused when short, without subject or role, or shared; a token file others can read is refused', () => {
    expect(() => new TokenVerifier([{ subject: 'x', roles: ['approver'], token: 'short' }])).toThrow(/shorter than 32 characters/);
    expect(() => new TokenVerifier([{ subject: '', roles: ['approver'], token: token('x') }])).toThrow(/has no subject/);
    expect(() => new TokenVerifier([{ subject: 'x', roles: ['root' as never], token: token('x') }])).toThrow(/needs roles from requester, approver, operator/);
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
