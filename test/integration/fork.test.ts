import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { apiCaller, TEST_TOKENS, token } from '../support/api';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';

// Fork against the real stack (scripted model, Temporal dev server,
// PostgreSQL, worker, API, CLI): a fork keeps the source's transcript up to
// the fork point, runs nothing from before it again, answers a call left open
// there with its documented outcome, records its lineage, and leaves the
// source as it was. Refunds are counted in the demo's refunds table and the
// tool ledger, by the conversation their effect keys name.

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  h = await startHarness();
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

const call = apiCaller(() => api.url);
type Wire = { role: string; tool_call_id?: string; content?: string | null };
const refund = (id: string, cents: number) => ({
  id,
  name: 'issue_refund',
  arguments: { order_id: 'ord_2001', amount_cents: cents, reason: 'damaged' },
});
/** The refunds applied under the conversation's effect keys, and its ledger rows, in order. */
const refundsOf = async (id: string) => {
  const refunds = await h.pool.query<{ amount_cents: number }>(
    'SELECT amount_cents FROM refunds WHERE starts_with(idempotency_key, $1) ORDER BY id',
    [`${id}/`],
  );
  const ledger = await h.pool.query('SELECT 1 FROM durable_agent.tool_ledger WHERE starts_with(idempotency_key, $1)', [
    `${id}/`,
  ]);
  return { cents: refunds.rows.map((r) => r.amount_cents), ledgerRows: ledger.rowCount };
};
const waitForPending = async (id: string, count: number) =>
  expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(count);
/** Sends a message whose turn asks for one refund, approves it, and waits for the answer. */
const refundTurn = async (id: string, text: string, callId: string, cents: number, options = {}) => {
  h.model.enqueue({ toolCalls: [refund(callId, cents)] }, { content: `Refunded ${cents}.` });
  const messageId = await h.client.sendMessage(id, text, options);
  await waitForPending(id, 1);
  await h.client.decide(id, { decision: 'approve', toolCallId: callId, decidedBy: 'ops@example.com' });
  expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
};
const cliEnv = () => ({ ...h.temporalEnv, DATABASE_URL: h.databaseUrl, TEMPORAL_TASK_QUEUE: h.taskQueue });

describe('fork', () => {
  it('mid-conversation: the fork keeps the transcript up to the fork point, and each approved call refunds once, in its own conversation', async () => {
    const source = h.newConversationId('fork-src');
    await refundTurn(source, 'FORK1 refund A', 'call_a', 10_100, { input: { systemPrompt: 'You issue refunds.' } });
    await refundTurn(source, 'FORK1 refund B', 'call_b', 10_200);
    const before = await h.client.transcript(source);
    expect(before.map((m) => m.message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);

    const fork = await h.client.fork(source, { turn: 2 });
    expect(fork).toMatchObject({ forkedFrom: { conversationId: source, seq: 4 }, messageCount: 5, answeredCalls: [] });
    expect(await h.client.state(fork.conversationId)).toMatchObject({
      status: 'idle',
      forkedFrom: { conversationId: source, seq: 4 },
      messageCount: 5,
      pendingApprovals: [],
    });
    await refundTurn(fork.conversationId, 'FORK1 refund C in the fork', 'call_c', 10_300);

    // One refund per approved call, each in its conversation; refund A, before the fork point, did not run again.
    expect(await refundsOf(source)).toEqual({ cents: [10_100, 10_200], ledgerRows: 2 });
    expect(await refundsOf(fork.conversationId)).toEqual({ cents: [10_300], ledgerRows: 1 });

    const forked = await h.client.transcript(fork.conversationId);
    expect(forked.slice(0, 5).map((m) => m.message)).toEqual(before.slice(0, 5).map((m) => m.message));
    expect(forked.slice(5).map((m) => m.message.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(JSON.parse((forked[7].message as { content: string }).content)).toMatchObject({ amount_cents: 10_300 });
    // The model was given the copy, then the fork's message.
    const request = h.requestsFor('FORK1 refund C in the fork')[0].messages as Wire[];
    expect(request.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user']);
    expect(request.map((m) => m.content).join(' ')).not.toContain('FORK1 refund B');
    // The source is unchanged.
    expect(await h.client.transcript(source)).toEqual(before);
    expect((await h.client.state(source)).forkedFrom).toBeUndefined();
    h.expectOnlyValidModelRequests();
  });

  it('while a call waits: the fork answers it as not run and goes on; the source still waits, and approving there refunds once', async () => {
    const source = h.newConversationId('fork-wait');
    h.model.enqueue({ toolCalls: [refund('call_w', 10_400)] });
    const messageId = await h.client.sendMessage(source, 'FORK2 refund W');
    await waitForPending(source, 1);
    const { calls } = await h.client.waitingCalls({ conversationId: source });
    expect(calls).toHaveLength(1);

    // The inbox's "Fork here": at the assistant message asking for the call.
    const asking = (await h.client.transcript(source)).filter((m) => m.message.role === 'assistant').pop()!;
    const fork = await h.client.fork(source, { seq: asking.seq });
    expect(fork.answeredCalls).toEqual([{ toolCallId: 'call_w', how: 'not_run' }]);
    const forked = await h.client.transcript(fork.conversationId);
    expect(forked.map((m) => m.message.role)).toEqual(['user', 'assistant', 'tool']);
    expect(JSON.parse((forked[2].message as { content: string }).content)).toEqual({
      error: `The call was not run in this conversation: it was forked from conversation ${source} at seq 1 before the call had a result.`,
      kind: 'cancelled',
      started: false,
      reason: 'forked',
    });
    expect((await h.client.waitingCalls({ conversationId: fork.conversationId })).calls).toEqual([]);

    h.model.enqueue({ content: 'That refund was not made here.' });
    const { turn, answer } = await h.client.ask(fork.conversationId, 'FORK2 did it happen?');
    expect(turn.outcome).toBe('answered');
    expect(answer).toBe('That refund was not made here.');
    const request = h.requestsFor('FORK2 did it happen?')[0].messages as Wire[];
    expect(request.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(JSON.parse(request[2].content!)).toMatchObject({ kind: 'cancelled', reason: 'forked' });

    // The source goes on as before.
    expect((await h.client.state(source)).pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_w']);
    h.model.enqueue({ content: 'Refunded W.' });
    await h.client.decide(source, { decision: 'approve', toolCallId: 'call_w', decidedBy: 'ops@example.com' });
    expect((await h.client.waitForTurn(source, messageId)).outcome).toBe('answered');
    expect(await refundsOf(source)).toEqual({ cents: [10_400], ledgerRows: 1 });
    expect(await refundsOf(fork.conversationId)).toEqual({ cents: [], ledgerRows: 0 });
    h.expectOnlyValidModelRequests();
  });

  it('a call that ran in a batch still open at the fork point keeps its result in the fork, and never runs again', async () => {
    const source = h.newConversationId('fork-ran');
    const small = {
      id: 'call_small',
      name: 'issue_refund',
      arguments: { order_id: 'ord_1001', amount_cents: 500, reason: 'x' },
    };
    h.model.enqueue({ toolCalls: [small, refund('call_big', 10_500)] });
    const messageId = await h.client.sendMessage(source, 'FORK4 two refunds');
    await waitForPending(source, 1);
    await expect
      .poll(
        async () => (await h.client.state(source)).openCalls?.find((c) => c.toolCallId === 'call_small')?.outcome?.kind,
        {
          timeout: 20_000,
        },
      )
      .toBe('ok');
    const asking = (await h.client.transcript(source)).filter((m) => m.message.role === 'assistant').pop()!;
    const fork = await h.client.fork(source, { seq: asking.seq });
    expect(fork.answeredCalls).toEqual([
      { toolCallId: 'call_small', how: 'ran' },
      { toolCallId: 'call_big', how: 'not_run' },
    ]);
    const forked = (await h.client.transcript(fork.conversationId)).map((m) => m.message as Wire);
    expect(forked.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
    expect(JSON.parse(forked[2].content!)).toMatchObject({ order_id: 'ord_1001', amount_cents: 500 });
    expect(JSON.parse(forked[3].content!)).toMatchObject({ kind: 'cancelled', started: false, reason: 'forked' });
    h.model.enqueue({ content: 'One refund was made.' });
    expect((await h.client.ask(fork.conversationId, 'FORK4 what happened?')).turn.outcome).toBe('answered');

    h.model.enqueue({ content: 'Only the small refund.' });
    await h.client.decide(source, { decision: 'reject', toolCallId: 'call_big', decidedBy: 'ops@example.com' });
    expect((await h.client.waitForTurn(source, messageId)).outcome).toBe('answered');
    const sourceTools = (await h.client.transcript(source))
      .map((m) => m.message as Wire)
      .filter((m) => m.role === 'tool');
    expect(sourceTools[0].content).toBe(forked[2].content);
    expect(await refundsOf(source)).toEqual({ cents: [500], ledgerRows: 1 });
    expect(await refundsOf(fork.conversationId)).toEqual({ cents: [], ledgerRows: 0 });
    h.expectOnlyValidModelRequests();
  });

  it('a fork of a fork, through the API and the CLI: lineage recorded at each step, each answers, bad fork points refused', async () => {
    const source = h.newConversationId('fork-chain');
    h.model.enqueue({ content: 'Hi.' }, { content: 'Second.' });
    await h.client.ask(source, 'FORK3 hello');
    await h.client.ask(source, 'FORK3 second');
    const sourceBefore = await h.client.transcript(source);
    const path = `/v1/conversations/${source}/forks`;

    const one = h.newConversationId('fork-one');
    const created = await call('POST', path, token('a'), { turn: 2, conversationId: one });
    expect(created).toEqual({
      status: 201,
      json: { conversationId: one, forkedFrom: { conversationId: source, seq: 1 }, messageCount: 2, answeredCalls: [] },
    });
    h.model.enqueue({ content: 'One.' });
    expect((await h.client.ask(one, 'FORK3 in fork one')).answer).toBe('One.');

    const { stdout, stderr } = await runCli(['fork', one, '--seq', '3'], cliEnv());
    const two = stdout.trim();
    expect(two).toMatch(/^fork-/);
    expect(stderr).toContain(`forked from ${one} at seq 3: 4 messages`);
    h.model.enqueue({ content: 'Two.' });
    expect((await h.client.ask(two, 'FORK3 in fork two')).answer).toBe('Two.');
    const request = h.requestsFor('FORK3 in fork two')[0].messages as Wire[];
    expect(request.map((m) => m.content)).toEqual([
      'FORK3 hello',
      'Hi.',
      'FORK3 in fork one',
      'One.',
      'FORK3 in fork two',
    ]);

    expect((await call('GET', `/v1/conversations/${two}`, token('c'))).json.forkedFrom).toEqual({
      conversationId: one,
      seq: 3,
    });
    expect((await h.client.state(one)).forkedFrom).toEqual({ conversationId: source, seq: 1 });
    expect((await runCli(['show', two], cliEnv())).stdout).toContain(`forked from ${one} at seq 3`);
    expect(await h.client.transcript(source)).toEqual(sourceBefore);

    // Refusals: a fork point past the transcript (naming the last seq), an id in use, no such source, no token.
    const past = await call('POST', path, token('a'), { seq: 99 });
    expect(past.status).toBe(409);
    expect(past.json.error.code).toBe('fork_point_outside');
    expect(past.json.error.message).toMatch(/from 0 to 3 \(the last message/);
    // Without a system prompt nothing comes before turn 1: of two turns, only turn 2 is a fork point, and the refusal
    // says so, for a turn past the last and for turn 1 alike.
    for (const turn of [3, 1]) {
      const refused = await call('POST', path, token('a'), { turn });
      expect(refused.status).toBe(409);
      expect(refused.json.error.message).toBe(
        `The fork point turn must be 2 (conversation ${source} has 2 turns, and turn 1 starts it: with no system message, a fork before it would hold nothing), got ${turn}; or fork at a seq from 0 to 3.`,
      );
    }
    const taken = await call('POST', path, token('a'), { seq: 1, conversationId: one });
    expect(taken.status).toBe(409);
    expect(taken.json.error.code).toBe('conversation_exists');
    expect((await call('POST', '/v1/conversations/no-such-conversation/forks', token('a'), { seq: 0 })).status).toBe(
      404,
    );
    expect((await call('POST', path, undefined, { seq: 0 })).status).toBe(401);
    expect((await call('POST', path, token('a'), { seq: 0, turn: 1 })).status).toBe(400);
    h.expectOnlyValidModelRequests();
  });
});
