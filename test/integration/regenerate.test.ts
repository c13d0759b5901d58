import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DefaultChatTransport, type UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { RegenerateRefusedError } from '../../src/client/client';
import { readSuperseded } from '../../src/db/transcript-store';
import { TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';
import { streamedMessage } from '../support/ui-messages';

// Regenerate against the real stack: the AI SDK's own regenerate() request
// (DefaultChatTransport, trigger regenerate-message), the HTTP API, the
// client and the CLI's `retry`. The earlier answer moves out of the live
// transcript into the superseded messages (reason regenerate); a refund the
// new answer asks for again waits for a second approval and runs once more.

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let env: Record<string, string>;
beforeAll(async () => {
  h = await startHarness({ decisionTrust: { keys: [TEST_DECISION_KEY] } });
  api = await startApiServer({
    client: h.client,
    tokens: TEST_TOKENS,
    decisions: { signingKey: TEST_DECISION_KEY },
    chat: { holdForDecisionMs: 0 }, // the requester's response ends at the approval request
  });
  env = {
    TEMPORAL_ADDRESS: h.temporalAddress,
    DATABASE_URL: h.databaseUrl,
    TEMPORAL_TASK_QUEUE: h.taskQueue,
    AGENT_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'retry-')),
  };
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

/** The transport as an app wires it: the request carries what useChat sends (trigger, messageId), all of it. */
const transportOf = (who: string) =>
  new DefaultChatTransport<UIMessage>({ api: `${api.url}/v1/chat`, headers: { authorization: `Bearer ${who}` } });

/** Sends as `who` with `trigger`, and reads the response into the message it continues (the last, when an answer). */
async function send(
  who: string,
  chatId: string,
  messages: UIMessage[],
  trigger: 'submit-message' | 'regenerate-message' = 'submit-message',
  messageId?: string,
): Promise<UIMessage> {
  const stream = await transportOf(who).sendMessages({ chatId, messages, trigger, messageId, abortSignal: undefined });
  return streamedMessage(stream, messages);
}

type ToolPart = { type: string; toolName: string; state: string; approval?: { id: string; approved?: boolean } };
const toolParts = (m: UIMessage) => m.parts.filter((p) => p.type === 'dynamic-tool') as unknown as ToolPart[];
const texts = (m: UIMessage) => m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : []));
const userMessage = (id: string, text: string): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] });
/** The person's answer on the waiting calls, as addToolApprovalResponse leaves it. */
function approve(m: UIMessage): UIMessage {
  const answered = structuredClone(m);
  for (const p of toolParts(answered))
    if (p.state === 'approval-requested')
      Object.assign(p, { state: 'approval-responded', approval: { ...p.approval, approved: true } });
  return answered;
}
const count = async (sql: string, id: string) => Number((await h.pool.query(sql, [`${id}/%`])).rows[0].n);
const ledgerRows = (id: string) =>
  count('SELECT count(*) AS n FROM durable_agent.tool_ledger WHERE idempotency_key LIKE $1', id);
const refunds = (id: string) => count('SELECT count(*) AS n FROM refunds WHERE idempotency_key LIKE $1', id);
const live = async (id: string) => (await h.client.transcript(id)).map((m) => m.message);
const superseded = async (id: string) =>
  (await readSuperseded(h.pool, h.tables, id)).map((m) => ({ seq: m.seq, reason: m.reason, message: m.message }));

describe('regenerate', () => {
  it("through the AI SDK's regenerate(): the new answer streams, the old one is superseded, and a refund asked for again runs only after a second approval", async () => {
    const id = h.newConversationId('regen-chat');
    const refund = {
      id: 'call_refund',
      name: 'issue_refund',
      arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'late' },
    };
    h.model.enqueue({ toolCalls: [refund] }, { content: 'Refunded 120.00 on ord_2001.' });
    const user = userMessage('ui-regen-1', 'Refund 120.00 on ord_2001');
    const first = await send(token('a'), id, [user]);
    const answered = await send(token('b'), id, [user, approve(first)]);
    expect(texts(answered)).toEqual(['Refunded 120.00 on ord_2001.']);
    expect([await ledgerRows(id), await refunds(id)]).toEqual([1, 1]);
    const before = await live(id);

    h.model.enqueue({ toolCalls: [refund] }, { content: 'Refunded 120.00 on ord_2001 (regenerated).' });
    // What useChat().regenerate() sends: the messages without the last answer, naming the answer it replaces.
    const again = await send(token('a'), id, [user], 'regenerate-message', answered.id);
    const [call] = toolParts(again);
    expect(call).toMatchObject({ toolName: 'issue_refund', state: 'approval-requested' });
    expect(call.approval?.id).toMatch(new RegExp(`^${id}/regen-1/msg-\\d+/call-0$`)); // a new call instance
    // Asked for again, the refund waits: the first approval does not carry over, and nothing ran.
    expect((await h.client.state(id)).pendingApprovals).toHaveLength(1);
    expect([await ledgerRows(id), await refunds(id)]).toEqual([1, 1]);
    // The earlier answer left the live transcript: the user's message, then the new answer's call, written before the wait.
    expect((await live(id)).map((m) => m.role)).toEqual(['user', 'assistant']);
    expect((await superseded(id)).map((m) => m.message)).toEqual(before.slice(1));

    const regenerated = await send(token('b'), id, [user, approve(again)]);
    expect(texts(regenerated)).toEqual(['Refunded 120.00 on ord_2001 (regenerated).']);
    expect([await ledgerRows(id), await refunds(id)]).toEqual([2, 2]);
    const now = await live(id);
    expect(now.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(now[3]).toMatchObject({ content: 'Refunded 120.00 on ord_2001 (regenerated).' });
    expect(await superseded(id)).toEqual(
      before.slice(1).map((message, i) => ({ seq: i + 1, reason: 'regenerate', message })),
    );
    const state = await h.client.state(id);
    expect(state.recentTurns.map((t) => [t.outcome, t.supersededBy !== undefined])).toEqual([
      ['answered', true],
      ['answered', false],
    ]);
    expect(state.regenerations).toBe(1);
    h.expectOnlyValidModelRequests();
  });

  it('as the example page sends it: no messages needed, the same message id again, the earlier answer readable from GET superseded; an earlier turn is refused', async () => {
    const id = h.newConversationId('regen-page');
    h.model.enqueue({ content: 'First answer.' }, { content: 'Second answer.' });
    const first = await send(token('a'), id, [userMessage('p-1', 'one')]);
    const second = await send(token('a'), id, [userMessage('p-2', 'two')]);
    expect([first.id, second.id]).toEqual(['turn-0', 'turn-2']);

    // regenerate({ messageId }) of an earlier answer: only the last answer can be produced again.
    const earlier = await fetch(`${api.url}/v1/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token('a')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id, messages: [], trigger: 'regenerate-message', messageId: first.id }),
    });
    expect(earlier.status).toBe(409);
    expect(await earlier.json()).toEqual({
      error: {
        code: 'regenerate_refused',
        message: `Message turn-0 belongs to an earlier turn (the turn from seq 0); only the last answer can be produced again. To answer from an earlier point, fork the conversation there (POST /v1/conversations/${id}/forks).`,
      },
    });

    // A page that holds only the answer (a reload without history) sends no message at all.
    h.model.enqueue({ content: 'Second answer, again.' });
    const again = await send(token('a'), id, [], 'regenerate-message', second.id);
    expect([again.id, texts(again)]).toEqual(['turn-2', ['Second answer, again.']]);
    const read = await fetch(`${api.url}/v1/conversations/${id}/superseded`, {
      headers: { authorization: `Bearer ${token('b')}` },
    });
    expect(read.status).toBe(200);
    expect((await read.json()) as unknown).toEqual({
      messages: [
        expect.objectContaining({
          seq: 3,
          reason: 'regenerate',
          message: expect.objectContaining({ role: 'assistant', content: 'Second answer.' }),
        }),
      ],
    });
    expect((await live(id)).map((m) => m.content)).toEqual(['one', 'First answer.', 'two', 'Second answer, again.']);
    h.expectOnlyValidModelRequests();
  });

  it('through the API: 202 with the new turn to follow; 409 saying why while a turn waits, and 404 for no conversation', async () => {
    const id = h.newConversationId('regen-api');
    const post = (conversationId: string, body?: unknown) =>
      fetch(`${api.url}/v1/conversations/${encodeURIComponent(conversationId)}/regenerate`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token('a')}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const missing = await post(h.newConversationId('regen-none'), {});
    expect([missing.status, ((await missing.json()) as { error: { code: string } }).error.code]).toEqual([
      404,
      'not_found',
    ]);
    h.model.enqueue({ content: 'First.' }, { content: 'Second.' });
    await h.client.ask(id, 'say something');
    const accepted = await post(id, { requestId: 'regen-api-1' });
    expect(accepted.status).toBe(202);
    expect(await accepted.json()).toEqual({ conversationId: id, messageId: 'regen-api-1', fromSeq: 1, started: true });
    expect(await h.client.waitForTurn(id, 'regen-api-1')).toMatchObject({ outcome: 'answered', answerSeq: 1 });
    expect((await live(id)).map((m) => m.role === 'assistant' && m.content)).toEqual([false, 'Second.']);
    const resent = await post(id, { requestId: 'regen-api-1' });
    expect(await resent.json()).toMatchObject({ messageId: 'regen-api-1', started: false });

    h.model.enqueue({
      toolCalls: [{ name: 'issue_refund', arguments: { order_id: 'ord_2001', amount_cents: 11_000, reason: 'x' } }],
    });
    await h.client.sendMessage(id, 'refund 110.00 on ord_2001');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    const refused = await post(id, {});
    expect(refused.status).toBe(409);
    expect(await refused.json()).toEqual({
      error: {
        code: 'regenerate_refused',
        message: 'A turn is running: wait until it ends (or cancel it), then ask for its answer again.',
      },
    });
    await expect(h.client.regenerate(id)).rejects.toBeInstanceOf(RegenerateRefusedError);
    await h.client.cancelTurn(id);
    h.expectOnlyValidModelRequests();
  });

  it('through the CLI: retry prints the new answer, directly and through the API', async () => {
    const id = h.newConversationId('regen-cli');
    h.model.enqueue({ content: 'The first answer.' });
    await h.client.ask(id, 'answer me');
    h.model.enqueue(
      { toolCalls: [{ name: 'find_customer', arguments: { query: 'Ada' } }] },
      { content: 'The second answer.' },
    );
    const { stdout } = await runCli(['retry', id], env);
    expect(stdout).toContain('⚙ find_customer');
    expect(stdout.split('The second answer.').length - 1).toBe(1);
    expect(stdout).not.toContain('The first answer.');

    h.model.enqueue({ content: 'The third answer.' });
    const remote = await runCli(['retry', id], { ...env, AGENT_API_URL: api.url, AGENT_API_TOKEN: token('a') });
    expect(remote.stdout).toContain('The third answer.');
    expect((await live(id)).map((m) => m.role)).toEqual(['user', 'assistant']);
    expect((await live(id))[1]).toMatchObject({ content: 'The third answer.' });
    expect((await superseded(id)).map((m) => m.message)).toEqual([
      { role: 'assistant', content: 'The first answer.' },
      expect.objectContaining({ role: 'assistant', tool_calls: [expect.objectContaining({ type: 'function' })] }),
      expect.objectContaining({ role: 'tool' }),
      { role: 'assistant', content: 'The second answer.' },
    ]);
    const state = await h.client.state(id);
    expect(state.recentTurns.map((t) => t.outcome)).toEqual(['answered', 'answered', 'answered']);
    h.expectOnlyValidModelRequests();
  });

  it("through the CLI: retry prints the new turn's calls once, not the old answer's, when the old answer leaves the transcript late", async () => {
    const id = h.newConversationId('regen-cli-late');
    h.model.enqueue(
      { toolCalls: [{ name: 'find_customer', arguments: { query: 'Grace' } }] },
      { content: 'The first answer.' },
    );
    await h.client.ask(id, 'find her');
    h.model.enqueue(
      { toolCalls: [{ name: 'find_customer', arguments: { query: 'Ada' } }] },
      { content: 'The second answer.' },
    );
    // The regenerated turn's first step moves the old answer out of the live transcript, after `retry` has its
    // answer. A lock on the old answer's rows holds that step back while the CLI follows the turn, as a loaded worker
    // would: the CLI reads the old answer (calls at the seqs the new turn writes its own) before it leaves.
    const lock = await h.pool.connect();
    try {
      await lock.query('BEGIN');
      await lock.query(
        `SELECT seq FROM ${h.tables.conversationMessages} WHERE conversation_id = $1 AND seq >= 1 FOR UPDATE`,
        [id],
      );
      const retried = runCli(['retry', id], env);
      await vi.waitFor(async () => expect((await h.client.state(id)).regenerations).toBe(1), {
        timeout: 30_000,
        interval: 100,
      });
      await new Promise((resolve) => setTimeout(resolve, 1_500)); // the CLI reads the transcript every 250 ms
      await lock.query('ROLLBACK');
      const { stdout } = await retried;
      expect(stdout).toContain('⚙ find_customer({"query":"Ada"})');
      expect(stdout.split('⚙ find_customer').length - 1).toBe(1);
      expect(stdout.split('↳ ').length - 1).toBe(1);
      expect(stdout).not.toContain('Grace');
      expect(stdout.split('The second answer.').length - 1).toBe(1);
    } finally {
      await lock.query('ROLLBACK').catch(() => undefined);
      lock.release();
    }
    h.expectOnlyValidModelRequests();
  });
});
