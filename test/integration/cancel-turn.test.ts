import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backofficeTools } from '../../src/demo/tools';
import { slowExportTool } from '../support/slow-export';
import { startHarness, type Harness } from '../support/harness';

let h: Harness;
const { tool: slowExport, seen: slow } = slowExportTool();

beforeAll(async () => {
  h = await startHarness({ tools: [...backofficeTools(), slowExport] });
});
afterAll(async () => {
  await h?.stop();
});

type Message = Awaited<ReturnType<Harness['client']['transcript']>>[number]['message'];
const transcript = async (id: string): Promise<Message[]> => (await h.client.transcript(id)).map((m) => m.message);
const kindOf = (m: Message) => (m.role === 'tool' ? (JSON.parse(m.content).kind ?? 'ok') : m.role);

describe('cancelling the current turn', () => {
  it('while a tool is running: the finished result is kept, the running call is interrupted and sees its abort signal', async () => {
    slow.aborted = false;
    slow.started = false;
    const id = h.newConversationId('cancel-tool');
    h.model.enqueue({
      toolCalls: [
        { id: 'call_find', name: 'find_customer', arguments: { query: 'Ada' } },
        { id: 'call_slow', name: 'slow_export', arguments: {} },
      ],
    });
    const messageId = await h.client.sendMessage(id, 'Find Ada and export everything');
    await expect
      .poll(async () => (await h.client.state(id)).runningToolCalls, { timeout: 20_000 })
      .toEqual(['call_slow']);
    await expect.poll(() => slow.started).toBe(true);

    await h.client.cancelTurn(id, 'taking too long');
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn.outcome).toBe('cancelled');
    const messages = await transcript(id);
    expect(messages.map(kindOf)).toEqual(['user', 'assistant', 'ok', 'interrupted']);
    expect(messages[3]).toMatchObject({ tool_call_id: 'call_slow' });
    expect(JSON.parse((messages[3] as { content: string }).content)).toMatchObject({
      kind: 'interrupted',
      started: true,
    });
    await expect.poll(() => slow.aborted, { timeout: 10_000 }).toBe(true);
    expect((await h.client.state(id)).status).toBe('idle');

    h.model.enqueue({ content: 'Cancelled; what next?' });
    const next = await h.client.ask(id, 'Never mind the export');
    expect(next.answer).toBe('Cancelled; what next?');
    expect((h.requestsFor('Never mind the export')[0].messages as { role: string }[]).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'tool',
      'user',
    ]);
    h.expectOnlyValidModelRequests();
  });

  it('while the model call is in flight: the HTTP request is aborted and nothing half-done enters the transcript', async () => {
    const id = h.newConversationId('cancel-model');
    h.model.enqueue({ kind: 'hang' });
    const messageId = await h.client.sendMessage(id, 'Think for a very long time');
    await expect.poll(() => h.requestsFor('Think for a very long time').length, { timeout: 20_000 }).toBe(1);
    const request = h.model.requests[h.model.requests.length - 1];

    await h.client.cancelTurn(id);
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn.outcome).toBe('cancelled');
    expect((await transcript(id)).map((m) => m.role)).toEqual(['user']);
    await expect.poll(() => request.aborted, { timeout: 10_000 }).toBe(true);

    h.model.enqueue({ content: 'Short answer.' });
    expect((await h.client.ask(id, 'Answer briefly instead')).answer).toBe('Short answer.');
    expect((await transcript(id)).map((m) => m.role)).toEqual(['user', 'user', 'assistant']);
    h.expectOnlyValidModelRequests();
  });

  it('while waiting for approval: the waiting call is cancelled as never started, and the conversation waits for the next message', async () => {
    const id = h.newConversationId('cancel-approval');
    h.model.enqueue({
      toolCalls: [
        {
          id: 'call_big',
          name: 'issue_refund',
          arguments: { order_id: 'ord_2001', amount_cents: 30_000, reason: 'x' },
        },
      ],
    });
    const messageId = await h.client.sendMessage(id, 'Refund a lot');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    await h.client.cancelTurn(id);
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('cancelled');
    const messages = await transcript(id);
    expect(messages.map(kindOf)).toEqual(['user', 'assistant', 'cancelled']);
    expect(JSON.parse((messages[2] as { content: string }).content)).toMatchObject({
      kind: 'cancelled',
      started: false,
    });
    const state = await h.client.state(id);
    expect(state).toMatchObject({ status: 'idle', pendingApprovals: [] });
    h.expectOnlyValidModelRequests();
  });

  it('while no turn runs, a cancel changes nothing', async () => {
    const id = h.newConversationId('cancel-idle');
    h.model.enqueue({ content: 'Hi.' }, { content: 'Still fine.' });
    await h.client.ask(id, 'Hello idle');
    await h.client.cancelTurn(id);
    expect((await h.client.ask(id, 'Are you fine?')).answer).toBe('Still fine.');
    expect((await transcript(id)).map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
  });
});

describe('cancelling right after sending', () => {
  it('a cancel that comes while the ended turn still writes its end cancels the turn of the message that waits for it', async () => {
    // The previous turn's final write is held (its table locked) while a message and then a cancel arrive: the
    // cancel is meant for the message's turn, which is about to start, not for the turn that already ended. (A
    // final answer is written by its model call; a turn its budget stops after a tool call writes its end.)
    // The turn budget is what the first call spends, measured on the same question in a conversation of its own: the
    // call fits (its prompt is less), and once it is spent the turn ends before its second call.
    const findAda = { toolCalls: [{ id: 'call_cwe', name: 'find_customer', arguments: { query: 'Ada' } }] };
    const measured = h.newConversationId('cancel-while-ending-measure');
    h.model.enqueue(findAda, { content: 'Ada.' });
    await h.client.ask(measured, 'CWE first question', { input: { budget: { turnTokens: 1_000_000 } } });
    const spent = await h.pool.query<{ tokens: string }>(
      `SELECT tokens FROM ${h.tables.budgetSpend} WHERE conversation_id = $1 ORDER BY created_at LIMIT 1`,
      [measured],
    );
    const budget = { turnTokens: Number(spent.rows[0].tokens) };
    const id = h.newConversationId('cancel-while-ending');
    h.model.enqueue({ kind: 'delay', ms: 1_500, then: findAda });
    const first = await h.client.sendMessage(id, 'CWE first question', { input: { budget } });
    await expect.poll(() => h.requestsFor('CWE first question').length, { timeout: 20_000 }).toBe(3);
    const table = h.tables.conversationMessages;
    const lock = await h.pool.connect();
    let second: string;
    try {
      await lock.query('BEGIN');
      await lock.query(`LOCK TABLE ${table} IN EXCLUSIVE MODE`);
      // The answer came, and the turn's final write waits for the lock.
      const waiting = async () =>
        (
          await h.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = $1::regclass`,
            [table],
          )
        ).rows[0].n;
      await expect.poll(waiting, { timeout: 20_000 }).toBeGreaterThan(0);
      second = await h.client.sendMessage(id, 'CWE second question');
      await h.client.cancelTurn(id, 'changed my mind');
      // Both signals were handled by a workflow task while the write still waits.
      const handled = async () => {
        const events = (await h.temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
        const lastSignal = events.map((e) => Boolean(e.workflowExecutionSignaledEventAttributes)).lastIndexOf(true);
        return events.slice(lastSignal).some((e) => e.workflowTaskCompletedEventAttributes);
      };
      await expect.poll(handled, { timeout: 20_000 }).toBe(true);
    } finally {
      await lock.query('COMMIT').catch(() => undefined);
      lock.release();
    }
    expect(await h.client.waitForTurn(id, first)).toMatchObject({ outcome: 'budget_exceeded' });
    const turn = await h.client.waitForTurn(id, second);
    expect(turn).toMatchObject({
      outcome: 'cancelled',
      steps: 0,
      error: 'the user cancelled the turn (changed my mind)',
    });
    expect(h.requestsFor('CWE second question')).toEqual([]);
    expect((await transcript(id)).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    h.expectOnlyValidModelRequests();
  });

  it('a cancel while the model call writes its final answer: the turn is cancelled, and the late answer stays out of the live transcript', async () => {
    // The model call writes a final answer itself. Here that write waits for a lock while the turn is cancelled: the
    // workflow stops the turn without the answer, and its end fences the call's write off (and supersedes what the
    // call wrote before, which transcript-runs.test.ts shows), so the answer the run did not take is never live.
    const id = h.newConversationId('cancel-while-answer-written');
    h.model.enqueue({ kind: 'delay', ms: 1_500, then: { content: 'An answer nobody will take.' } });
    const messageId = await h.client.sendMessage(id, 'CWA question');
    await expect.poll(() => h.requestsFor('CWA question').length, { timeout: 20_000 }).toBe(1);
    const table = h.tables.conversationMessages;
    const lock = await h.pool.connect();
    const waitingWrites = async () =>
      (
        await h.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = $1::regclass`,
          [table],
        )
      ).rows[0].n;
    try {
      await lock.query('BEGIN');
      await lock.query(`LOCK TABLE ${table} IN EXCLUSIVE MODE`);
      // The model answered (after its delay), and the call's write of that answer waits for the lock.
      await expect.poll(waitingWrites, { timeout: 20_000 }).toBeGreaterThan(0);
      await h.client.cancelTurn(id, 'never mind');
      // The turn's end (the supersede) queues behind the answer's write.
      await expect.poll(waitingWrites, { timeout: 20_000 }).toBeGreaterThan(1);
    } finally {
      await lock.query('COMMIT').catch(() => undefined);
      lock.release();
    }
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn).toMatchObject({ outcome: 'cancelled', error: 'the user cancelled the turn (never mind)' });
    // The answer's write ran after the lock was released, and stored nothing; a next turn goes on from seq 1.
    await expect.poll(waitingWrites, { timeout: 20_000 }).toBe(0);
    expect((await transcript(id)).map((m) => m.role)).toEqual(['user']);
    expect(await h.client.superseded(id)).toEqual([]);
    h.model.enqueue({ content: 'A fresh answer.' });
    const next = await h.client.ask(id, 'CWA again');
    expect(next.answer).toBe('A fresh answer.');
    expect((await transcript(id)).map((m) => m.role)).toEqual(['user', 'user', 'assistant']);
    h.expectOnlyValidModelRequests();
  });

  it('a cancel sent right after a message cancels that turn; the message stays in the transcript, unanswered', async () => {
    const id = h.newConversationId('cancel-early');
    h.model.setResponder((request) =>
      JSON.stringify(request.body).includes('Now for real')
        ? { content: 'Later answer.' }
        : { kind: 'delay', ms: 10_000, then: { content: 'Too late.' } },
    );
    try {
      // If the cancel reaches the workflow before the turn starts, the turn starts cancelled;
      // if after, it cancels the model call. Either way the turn is cancelled without an answer.
      const messageId = await h.client.sendMessage(id, 'Oops, sent too soon');
      await h.client.cancelTurn(id);
      const turn = await h.client.waitForTurn(id, messageId);
      expect(turn).toMatchObject({ outcome: 'cancelled', steps: 0 });
      expect((await h.client.ask(id, 'Now for real')).answer).toBe('Later answer.');
    } finally {
      h.model.setResponder(undefined);
    }
    expect((await transcript(id)).map((m) => m.role)).toEqual(['user', 'user', 'assistant']);
    h.expectOnlyValidModelRequests();
  });
});
