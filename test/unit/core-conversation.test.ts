import { describe, expect, it } from 'vitest';
import { ConversationCore } from '../../src/core/conversation';
import { DEDUP_MEMORY } from '../../src/contract';
import { assistantWithCalls, CoreDriver, deadlinePasses, decide, verdict } from '../support/core-driver';

// Unit tests of the conversation core (src/core/conversation.ts): no Temporal, no database.
// CoreDriver sequences the core's methods as the workflow edge does; the rules are the core's.

const answer = (content: string) => ({ role: 'assistant' as const, content });
const kindOf = (content: string) => (JSON.parse(content) as { kind?: string }).kind;
const toolMessages = (d: CoreDriver) =>
  d.transcript().filter((m) => m.role === 'tool') as { tool_call_id: string; content: string }[];

describe('ConversationCore: turns', () => {
  it('answers a message: stores it, asks the model by reference with tools on, and records the answered turn', () => {
    const d = new CoreDriver({ systemPrompt: 'Be brief.' });
    d.userMessage({ text: 'hello', messageId: 'm-1' });
    expect(d.transcript().map((m) => m.role)).toEqual(['system', 'user']);
    expect(d.request).toMatchObject({
      conversationId: 'conv-1',
      throughSeq: 1,
      omitSeqs: [],
      synthesized: [],
      toolChoice: 'auto',
    });
    expect(d.published.status).toBe('running');
    d.modelAnswers(answer('hi'), []);
    expect(d.turns).toEqual([{ messageIds: ['m-1'], firstSeq: 1, outcome: 'answered', steps: 1, answerSeq: 2 }]);
    expect(d.core.state()).toMatchObject({ status: 'idle', steps: 1, messageCount: 3, queuedMessages: 0 });
    expect(d.published.status).toBe('idle');
  });

  it('asks the model call to write a final answer itself: the turn ends with nothing left to write', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'hello' });
    expect(d.request).toMatchObject({ throughSeq: 0, answerSeq: 1 });
    d.modelAnswers(answer('hi'), []);
    expect(d.core.takeWrites()).toEqual({ messages: [] });
    expect(d.transcript().map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('a turn stopped while its model call runs supersedes what that call may have written at its answer seq', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'first' });
    d.modelAnswers(answer('one'), []);
    d.userMessage({ text: 'second' });
    expect(d.request).toMatchObject({ answerSeq: 3 });
    d.db.messages[3] = answer('written by the call, never taken'); // the call wrote its answer, then the turn stopped
    d.cancelTurn('no');
    expect(d.turns.at(-1)).toMatchObject({ outcome: 'cancelled', steps: 0 });
    expect(d.db.stoppedAnswers).toEqual([answer('written by the call, never taken')]);
    expect(d.transcript().map((m) => m.content)).toEqual(['first', 'one', 'second']);
  });

  it('runs calls that need no approval at once, stores their results in call order, then asks the model again', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'look up two orders' });
    const { message, plans } = assistantWithCalls([{ id: 'call_a' }, { id: 'call_b' }]);
    d.modelAnswers(message, plans);
    expect(d.core.state().runningToolCalls).toEqual(['call_a', 'call_b']);
    const [a, b] = d.calls;
    expect([a.key, b.key]).toEqual(['conv-1/msg-1/call-0', 'conv-1/msg-1/call-1']);
    d.toolReports(b, { content: '"B"' });
    expect(d.stage).toBe('calls'); // call_a still runs
    d.toolReports(a, { content: '"A"' });
    expect(toolMessages(d)).toEqual([
      { role: 'tool', tool_call_id: 'call_a', content: '"A"' },
      { role: 'tool', tool_call_id: 'call_b', content: '"B"' },
    ]);
    expect(d.stage).toBe('model');
    expect(d.request?.throughSeq).toBe(3);
  });

  it('fails the turn when the model call fails, and clears lastError once a later turn answers', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'one' });
    d.modelFails('provider said 400');
    expect(d.core.state()).toMatchObject({ status: 'failed', lastError: 'Model call failed: provider said 400' });
    d.userMessage({ text: 'two' });
    d.modelAnswers(answer('ok'), []);
    expect(d.core.state()).toMatchObject({ status: 'idle', lastError: undefined });
  });

  it('turns tools off at maxSteps, and settles calls the model asks for anyway as not run, failing the turn', () => {
    const d = new CoreDriver({ maxSteps: 1 });
    d.userMessage({ text: 'go' });
    const first = assistantWithCalls([{ id: 'call_1' }]);
    d.modelAnswers(first.message, first.plans);
    d.toolReports(d.calls[0], { content: '"done"' });
    expect(d.request?.toolChoice).toBe('none');
    const second = assistantWithCalls([{ id: 'call_2', needsApproval: true }]);
    d.modelAnswers(second.message, second.plans);
    const last = toolMessages(d).at(-1)!;
    expect(JSON.parse(last.content)).toMatchObject({ kind: 'tool_failed', reason: 'not_run_max_steps' });
    expect(d.starts.has('conv-1/msg-4/call-0')).toBe(false);
    expect(d.turns.at(-1)).toMatchObject({
      outcome: 'failed',
      steps: 2,
      error: expect.stringContaining('maxSteps (1)'),
    });
  });

  it('settles a call the worker could not plan, or could not run, as tool_failed without running it', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'go' });
    const { message, plans } = assistantWithCalls([
      { id: 'call_x', problem: { reason: 'unknown_tool', message: 'No tool "x".' } },
      { id: 'call_y' },
    ]);
    d.modelAnswers(message, plans.slice(0, 1)); // no plan for call_y
    expect(toolMessages(d).map((m) => JSON.parse(m.content))).toEqual([
      { kind: 'tool_failed', reason: 'unknown_tool', error: 'No tool "x".' },
      { kind: 'tool_failed', reason: 'error', error: 'The worker returned no plan for tool call call_y.' },
    ]);
    expect(d.starts.size).toBe(0);
  });
});

describe('ConversationCore: the inbox', () => {
  it('interrupt: a new message stops the turn, keeps finished results, settles the rest, then answers the new message', () => {
    const d = new CoreDriver({ onNewMessage: 'interrupt' });
    d.userMessage({ text: 'refund both', messageId: 'm-1' });
    const { message, plans } = assistantWithCalls([
      { id: 'call_1' },
      { id: 'call_2' },
      { id: 'call_3', needsApproval: true },
    ]);
    d.modelAnswers(message, plans);
    d.toolReports(d.calls[0], { content: '"first done"' });
    d.userMessage({ text: 'stop, only the first', messageId: 'm-2' });
    expect(toolMessages(d).map((m) => (m.content.startsWith('"') ? m.content : kindOf(m.content)))).toEqual([
      '"first done"',
      'interrupted',
      'cancelled',
    ]);
    expect(d.turns[0]).toMatchObject({
      messageIds: ['m-1'],
      outcome: 'interrupted',
      error: 'a new user message interrupted the turn',
    });
    expect(d.stage).toBe('model'); // the new message's turn started
    expect(d.transcript().at(-1)).toEqual({ role: 'user', content: 'stop, only the first' });
  });

  it('queue: a new message waits for the turn to finish, then gets its own turn', () => {
    const d = new CoreDriver({ onNewMessage: 'queue' });
    d.userMessage({ text: 'one', messageId: 'm-1' });
    d.userMessage({ text: 'two', messageId: 'm-2' });
    expect(d.core.state().queuedMessages).toBe(1);
    d.modelAnswers(answer('first answer'), []);
    expect(d.turns[0].messageIds).toEqual(['m-1']);
    expect(d.stage).toBe('model');
    d.modelAnswers(answer('second answer'), []);
    expect(d.turns.map((t) => t.messageIds)).toEqual([['m-1'], ['m-2']]);
  });

  it('ignores a message id already received, and refuses a malformed message with a clear lastError', () => {
    const d = new CoreDriver({ onNewMessage: 'queue' });
    d.userMessage({ text: 'one', messageId: 'm-1' });
    d.userMessage({ text: 'one again', messageId: 'm-1' });
    expect(d.core.state().queuedMessages).toBe(0);
    d.userMessage({ text: '   ' });
    expect(d.core.state().lastError).toBe('Ignored a userMessage signal: "text" must be a non-empty string');
    d.userMessage('just a string');
    expect(d.core.state().lastError).toContain('expected an object like {"text": "..."}');
    expect(d.transcript().filter((m) => m.role === 'user')).toHaveLength(1);
  });

  it('cancel: stops the running turn; with no turn it does nothing; before a queued turn starts, that turn starts cancelled', () => {
    const d = new CoreDriver();
    d.cancelTurn();
    expect(d.turns).toEqual([]);
    d.userMessage({ text: 'go', messageId: 'm-1' });
    d.cancelTurn('wrong customer');
    expect(d.turns[0]).toMatchObject({ outcome: 'cancelled', error: 'the user cancelled the turn (wrong customer)' });

    // A message received while the edge is between turns (not yet taken), then a cancel: its turn starts stopped.
    const core = new ConversationCore('conv-2', {}, d.env);
    core.receiveUserMessage({ text: 'queued', messageId: 'q-1' });
    expect(core.cancelTurn()).toBe(false);
    expect(core.carryOver().pendingCancel).toBe('the user cancelled the turn');
    core.takeTurn();
    expect(core.beginTurn()).toBe(true);
    expect(core.turnStopped(false)).toMatchObject({ messageIds: ['q-1'], outcome: 'cancelled' });
  });

  it('ends once the turn and queued messages are done', () => {
    const d = new CoreDriver({ onNewMessage: 'queue' });
    d.userMessage({ text: 'one' });
    d.userMessage({ text: 'two' });
    d.core.end();
    d.modelAnswers(answer('1'), []);
    expect(d.closed).toBe(false);
    d.modelAnswers(answer('2'), []);
    expect(d.closed).toBe(true);
    expect(d.core.summary()).toEqual({ conversationId: 'conv-1', steps: 2, messages: 4, transcriptRepairs: 0 });
    expect(d.published.status).toBe('closed');
  });
});

describe('ConversationCore: decisions', () => {
  const waiting = (options: { approvalTimeoutMs?: number } = {}) => {
    const d = new CoreDriver({ approvalTimeoutMs: options.approvalTimeoutMs ?? 60_000 });
    d.userMessage({ text: 'refund', sentBy: 'rita' });
    const { message, plans } = assistantWithCalls([
      { id: 'call_1', name: 'issue_refund', needsApproval: true },
      { id: 'call_2', name: 'issue_refund', needsApproval: true },
    ]);
    d.modelAnswers(message, plans);
    return d;
  };

  it('shows calls awaiting approval with their keys and requester, and indexes them in the search attributes', () => {
    const d = waiting();
    d.clock += 5000;
    const requested = { requestedAt: '2026-11-23T10:00:00.000Z', ageMs: 5000, requestedBy: ['rita'] };
    expect(d.core.state().pendingApprovals).toEqual([
      { toolCallId: 'call_1', toolName: 'issue_refund', arguments: {}, ...requested, callKey: 'conv-1/msg-1/call-0' },
      { toolCallId: 'call_2', toolName: 'issue_refund', arguments: {}, ...requested, callKey: 'conv-1/msg-1/call-1' },
    ]);
    expect(d.published).toEqual({
      status: 'awaiting_approval',
      pendingApprovals: 2,
      unknownEffects: 0,
      approvals: {
        tags: ['call:conv-1/msg-1/call-0', 'call:conv-1/msg-1/call-1', 'tool:issue_refund', 'requester:rita'],
        since: Date.parse('2026-11-23T10:00:00.000Z'),
      },
      usage: { tokens: 0, costUsd: 0 },
    });
    decide(d, { decisionId: 'd-1', decision: 'approve', toolCallId: 'call_1' });
    expect(d.published.approvals?.tags).toEqual(['call:conv-1/msg-1/call-1', 'tool:issue_refund', 'requester:rita']);
    decide(d, { decisionId: 'd-2', decision: 'reject', toolCallId: 'call_2' });
    expect(d.published.approvals).toEqual({ tags: [], since: null });
  });
});

describe('ConversationCore: tokens and cost in the search attributes', () => {
  const spent = (promptTokens: number, completionTokens: number, costUsd?: number) => ({
    usage: { promptTokens, completionTokens },
    costUsd,
  });

  it("publishes the conversation's tokens and priced cost with the turn's end, and adds no upsert of their own after a model call", () => {
    const d = new CoreDriver();
    // The run's first publish carries them.
    expect(d.upserts).toEqual([
      { status: 'idle', pendingApprovals: 0, approvals: { tags: [], since: null }, usage: { tokens: 0, costUsd: 0 } },
    ]);
    d.userMessage({ text: 'look up Ada' });
    expect(d.upserts.at(-1)).toEqual({ status: 'running', pendingApprovals: 0, approvals: { tags: [], since: null } });
    const upserts = d.upserts.length;
    const { message, plans } = assistantWithCalls([{ id: 'call_1' }]);
    d.modelAnswers(message, plans, spent(1200, 30, 0.00264));
    d.toolReports(d.calls[0], { content: '"found"' });
    expect(d.upserts).toHaveLength(upserts); // the status stayed running: nothing published for the first call
    d.modelAnswers(answer('Ada is cus_ada.'), [], spent(1300, 20)); // a model without a price: tokens, no cost
    expect(d.upserts).toHaveLength(upserts + 1);
    expect(d.upserts.at(-1)).toEqual({
      status: 'idle',
      pendingApprovals: 0,
      approvals: { tags: [], since: null },
      usage: { tokens: 2550, costUsd: 0.00264 },
    });
    expect(d.core.state().usage).toEqual({
      promptTokens: 2500,
      completionTokens: 50,
      costUsd: 0.00264,
      unpricedCalls: 1,
    });

    d.userMessage({ text: 'and her orders?' });
    d.modelAnswers(answer('Two orders.'), [], spent(100, 10, 0.00028));
    expect(d.published.usage).toEqual({ tokens: 2660, costUsd: 0.00292 });
  });

  it('rides on a status change inside the turn (a call waits for approval) and is left out of a change when it did not change', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'refund' });
    const { message, plans } = assistantWithCalls([{ id: 'call_1', name: 'issue_refund', needsApproval: true }]);
    d.modelAnswers(message, plans, spent(500, 40, 0.00132));
    expect(d.upserts.at(-1)).toMatchObject({ status: 'awaiting_approval', usage: { tokens: 540, costUsd: 0.00132 } });
    decide(d, { decisionId: 'd-1', decision: 'approve' });
    expect(d.upserts.at(-1)).toMatchObject({ status: 'running', pendingApprovals: 0 });
    expect(d.upserts.at(-1)).not.toHaveProperty('usage');
    d.toolReports(d.calls[0], { content: '"refunded"' });
    d.modelAnswers(answer('Refunded.'), [], spent(0, 0, 0)); // a call that reported nothing new
    expect(d.upserts.at(-1)).toMatchObject({ status: 'idle' });
    expect(d.upserts.at(-1)).not.toHaveProperty('usage');
    expect(d.published.usage).toEqual({ tokens: 540, costUsd: 0.00132 });
  });

  it("carries them across continue-as-new: the next run's first publish has the totals, and its turns add to them", () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'one' });
    d.modelAnswers(answer('first'), [], spent(1000, 100, 0.0028));
    d.continueAsNew();
    expect(d.core.state().runs).toBe(2);
    expect(d.upserts.at(-1)).toMatchObject({ status: 'idle', usage: { tokens: 1100, costUsd: 0.0028 } });
    d.userMessage({ text: 'two' });
    d.modelAnswers(answer('second'), [], spent(2000, 200, 0.0056));
    expect(d.published.usage).toEqual({ tokens: 3300, costUsd: 0.0084 });
  });
});

describe('ConversationCore: outcomes of calls that did not report back', () => {
  const running = (idempotent: boolean) => {
    const d = new CoreDriver();
    d.userMessage({ text: 'charge' });
    const { message, plans } = assistantWithCalls([{ id: 'call_1', name: 'charge_card', idempotent }]);
    d.modelAnswers(message, plans);
    return d;
  };

  it('a tool that is not idempotent and was cut off settles as effect_unknown, listed and counted for operators', () => {
    const d = running(false);
    const call = d.calls[0];
    d.toolReports(call, {
      message: 'timed out',
      reason: 'error',
      cutOff: 'it ran longer than its timeout of 60000 ms',
    });
    expect(kindOf(toolMessages(d)[0].content)).toBe('effect_unknown');
    expect(d.core.state()).toMatchObject({
      unknownEffectsCount: 1,
      unknownEffects: [
        {
          toolCallId: 'call_1',
          callKey: call.key,
          toolName: 'charge_card',
          why: 'it ran longer than its timeout of 60000 ms',
        },
      ],
    });
    expect(d.published.unknownEffects).toBe(1);
    expect(d.warnings).toContain('A tool that is not idempotent did not report back; its effect is unknown');
  });

  it('an idempotent tool cut off, or any tool that failed, settles as tool_failed with the reason', () => {
    const d = running(true);
    d.toolReports(d.calls[0], { message: 'timed out', reason: 'error', cutOff: 'it timed out' });
    expect(JSON.parse(toolMessages(d)[0].content)).toEqual({
      error: 'timed out',
      kind: 'tool_failed',
      reason: 'error',
    });
    const e = running(false);
    e.toolReports(e.calls[0], { message: 'Invalid arguments: amount', reason: 'invalid_arguments' });
    expect(JSON.parse(toolMessages(e)[0].content)).toMatchObject({ kind: 'tool_failed', reason: 'invalid_arguments' });
    expect(e.core.state().unknownEffectsCount).toBe(0);
  });

  it('a workflow cancel settles running calls as interrupted and records the turn as cancelled', () => {
    const d = running(true);
    d.stop(true);
    expect(kindOf(toolMessages(d)[0].content)).toBe('interrupted');
    expect(d.turns[0]).toMatchObject({ outcome: 'cancelled', error: 'the conversation was cancelled' });
  });
});

describe('ConversationCore: continue-as-new and repair', () => {
  it('carries the conversation into the next run: seqs, counters, turns, dedup memory, refusals and unknown effects', () => {
    const d = new CoreDriver({ onNewMessage: 'queue' });
    for (let i = 0; i < DEDUP_MEMORY + 5; i++) d.core.receiveUserMessage({ text: `m${i}`, messageId: `id-${i}` });
    d.advance();
    d.modelAnswers(answer('all at once'), []);
    decide(d, { decisionId: 'd-x', decision: 'approve' });
    const before = d.core.state();
    const carried = d.core.carryOver();
    expect(carried.receivedMessageIds).toHaveLength(DEDUP_MEMORY);
    expect(carried.receivedMessageIds[0]).toBe('id-5');
    d.continueAsNew();
    const after = d.core.state();
    expect(after).toEqual({ ...before, runs: 2, messages: [] });
    d.userMessage({ text: 'again', messageId: `id-${DEDUP_MEMORY + 4}` });
    expect(after.queuedMessages).toBe(0);
    expect(d.stage).toBe('idle'); // the repeated id was remembered
  });

  it('decides continue-as-new from the history length or the server suggestion', () => {
    const core = new ConversationCore('c', { continueAsNewAfterEvents: 100 }, new CoreDriver().env);
    expect(core.shouldContinueAsNew({ historyLength: 99, continueAsNewSuggested: false })).toBe(false);
    expect(core.shouldContinueAsNew({ historyLength: 100, continueAsNewSuggested: false })).toBe(true);
    expect(core.shouldContinueAsNew({ historyLength: 5, continueAsNewSuggested: true })).toBe(true);
  });

  it('repairs a transcript that broke the pairing rules before the model sees it, counting and logging it', () => {
    const d = new CoreDriver();
    d.core.store([{ message: { role: 'user', content: 'x' } }]);
    const { message } = assistantWithCalls([{ id: 'call_lost' }]);
    d.core.store([{ message }, { message: { role: 'user', content: 'y' } }]); // a bug: no result for call_lost
    expect(d.core.modelRequest()).toMatchObject({
      omitSeqs: [],
      synthesized: [{ afterSeq: 1, toolCallId: 'call_lost' }],
    });
    expect(d.core.state().transcriptRepairs).toBe(1);
    expect(d.warnings).toContain('Transcript broke the pairing rules before a model call; repaired it (this is a bug)');
  });
});

describe('ConversationCore: sizes', () => {
  const text = (kib: number, tag: string) => `${tag}:`.padEnd(kib * 1024, 'é').slice(0, (kib * 1024) / 2); // 'é' is 2 bytes

  it('refuses a user message over USER_MESSAGE_MAX_BYTES with its size and the limit', () => {
    const d = new CoreDriver();
    d.userMessage({ text: text(300, 'big') });
    expect(d.core.state().lastError).toMatch(
      /^Ignored a userMessage signal: the message is \d+ bytes; a user message may be at most 262144 bytes$/,
    );
    expect(d.core.state().messageCount).toBe(0);
  });

  it('takes at most TURN_INPUT_MAX_BYTES of queued messages into one turn (at least one); the rest get the next turn', () => {
    const core = new ConversationCore('c', {}, new CoreDriver().env);
    for (let i = 0; i < 6; i++) core.receiveUserMessage({ text: text(200, `m${i}`), messageId: `m${i}` });
    expect(core.takeTurn()).toBe(true);
    expect(core.state().messages.map((m) => m.role)).toEqual(['user', 'user', 'user', 'user', 'user']);
    expect(core.state().queuedMessages).toBe(1);
  });

  it('does not continue as new while the queued messages are over CARRIED_INBOX_MAX_BYTES; it answers them first', () => {
    const core = new ConversationCore(
      'c',
      { continueAsNewAfterEvents: 10, onNewMessage: 'queue' },
      new CoreDriver().env,
    );
    for (let i = 0; i < 5; i++) core.receiveUserMessage({ text: text(250, `m${i}`), messageId: `m${i}` });
    expect(core.shouldContinueAsNew({ historyLength: 50, continueAsNewSuggested: false })).toBe(false);
    core.takeTurn();
    expect(core.shouldContinueAsNew({ historyLength: 50, continueAsNewSuggested: false })).toBe(true);
  });
});

describe('ConversationCore: decisions in verification', () => {
  it('a decision sent in time and verified after the deadline applies to its call; the calls it does not name time out then', () => {
    const d = new CoreDriver({ approvalTimeoutMs: 60_000 });
    d.userMessage({ text: 'two refunds' });
    const { message, plans } = assistantWithCalls([
      { id: 'call_a', needsApproval: true },
      { id: 'call_b', needsApproval: true },
    ]);
    d.modelAnswers(message, plans);
    const sentAt = new Date(d.clock).toISOString();
    expect(
      decide(d, { decisionId: 'd-1', decision: 'reject', toolCallId: 'call_a', reason: 'no', sentAt }, 'signal', {
        verified: false,
      }),
    ).toEqual({
      verifying: true,
    });
    expect(d.core.decisionsVerifying()).toBe(true);
    deadlinePasses(d);
    // The deadline waits for the verdict: both calls still wait.
    expect(d.core.state().pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_a', 'call_b']);
    expect(verdict(d)).toEqual({ applied: true, ids: ['call_a'] });
    const results = (
      d.transcript().filter((m) => m.role === 'tool') as { tool_call_id: string; content: string }[]
    ).map((m) => [m.tool_call_id, kindOf(m.content)]);
    expect(results).toEqual([
      ['call_a', 'rejected'],
      ['call_b', 'approval_timeout'],
    ]);
  });

  it.each([
    ['a run begun after the patch', [] as string[]],
    ['a run begun before it', ['decision-keeps-its-calls']],
  ])(
    'a decision verified after its turn ended never decides the calls of the next turn (%s keeps its rule)',
    (_, before) => {
      const d = new CoreDriver({ onNewMessage: 'interrupt' });
      d.before = before;
      d.userMessage({ text: 'refund', messageId: 'm-1' });
      const first = assistantWithCalls([{ id: 'call_0', needsApproval: true }]);
      d.modelAnswers(first.message, first.plans);
      // Sent for every waiting call (no id), while call_0 of the first turn waits.
      expect(decide(d, { decisionId: 'd-1', decision: 'approve' }, 'signal', { verified: false })).toEqual({
        verifying: true,
      });
      d.userMessage({ text: 'no, another thing', messageId: 'm-2' }); // the first turn ends (interrupted)
      const second = assistantWithCalls([{ id: 'call_0', needsApproval: true }]); // the provider reuses the id
      d.modelAnswers(second.message, second.plans);
      const outcome = verdict(d);
      if (before.length === 0) {
        expect(outcome).toMatchObject({ refusal: expect.stringContaining('no longer wait') });
        expect(d.core.state().pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_0']); // the new call still waits for its own decision
        expect(d.starts.size).toBe(0);
      } else {
        expect(outcome).toEqual({ applied: true, ids: ['call_0'] }); // the old rule, as the run recorded it
      }
      expect(d.asked).toContain('decision-keeps-its-calls');
    },
  );

  it('the state hides a waiting call while the message that asked for it is being written', () => {
    const d = new CoreDriver();
    d.db.holdFlushes = true;
    d.userMessage({ text: 'refund' });
    const { message, plans } = assistantWithCalls([{ id: 'call_1', needsApproval: true }]);
    d.modelAnswers(message, plans);
    expect(d.db.flushHeld).toBe(true);
    expect(d.core.state()).toMatchObject({ status: 'awaiting_approval', pendingApprovals: [] });
    d.db.completeFlush();
    expect(d.core.state().pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_1']);
    expect(d.stored.map((m) => m.role)).toEqual(['user', 'assistant']);
  });
});

describe('ConversationCore: decision sizes', () => {
  it('refuses a decision whose reason or ids are longer than allowed, naming the field and the limit', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'refund' });
    const { message, plans } = assistantWithCalls([{ id: 'call_1', needsApproval: true }]);
    d.modelAnswers(message, plans);
    expect(decide(d, { decisionId: 'd-1', decision: 'reject', reason: 'r'.repeat(5000) })).toEqual({
      refusal: '"reason" is 5000 characters; it may have at most 4096',
    });
    expect(decide(d, { decisionId: 'd'.repeat(300), decision: 'approve' })).toEqual({
      refusal: '"decisionId" is 300 characters; it may have at most 256',
    });
    expect(d.core.state().pendingApprovals).toHaveLength(1);
  });
});

describe('ConversationCore: text PostgreSQL cannot store', () => {
  it('refuses a message, a decision and a cancel holding U+0000 or an unpaired surrogate, changing nothing but lastError', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'bad\u0000' });
    expect(d.core.state().lastError).toBe(
      'Ignored a userMessage signal: "text" contains U+0000 (NUL) at offset 3 (UTF-16 code units from 0), which cannot be stored; remove it (NUL characters and unpaired surrogates U+D800-U+DFFF are refused)',
    );
    expect(d.core.state().messageCount).toBe(0);
    d.userMessage({ text: 'refund', messageId: 'm-1' });
    const { message, plans } = assistantWithCalls([{ id: 'call_1', needsApproval: true }]);
    d.modelAnswers(message, plans);
    expect(decide(d, { decisionId: 'd-1', decision: 'reject', reason: 'no\ud800' })).toEqual({
      refusal: expect.stringContaining('"reason" contains U+D800 (an unpaired high surrogate) at offset 2'),
    });
    expect(d.core.cancelTurn({ reason: '\udc00' })).toBe(false);
    expect(d.core.state()).toMatchObject({
      status: 'awaiting_approval',
      lastError: expect.stringContaining('Ignored a cancelTurn signal: "reason" contains U+DC00'),
    });
  });

  it('stores a note in place of messages PostgreSQL refused, keeping roles and call ids, and keeps lastError when the turn answers', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'look up two orders' });
    const { message, plans } = assistantWithCalls([{ id: 'call_a' }, { id: 'call_b' }]);
    d.modelAnswers(message, plans);
    const refusal = { message: 'constraint says no', refusedSeqs: [1, 0] };
    const notes = d.core.writeRefused([], refusal);
    expect(notes).toEqual([
      {
        seq: 1,
        message: {
          role: 'assistant',
          content: '[This message could not be stored, so its text is lost: constraint says no]',
          tool_calls: [
            { id: 'call_a', type: 'function', function: { name: 'tool', arguments: '{}' } },
            { id: 'call_b', type: 'function', function: { name: 'tool', arguments: '{}' } },
          ],
        },
      },
      {
        seq: 0,
        message: {
          role: 'user',
          content: '[This message could not be stored, so its text is lost: constraint says no]',
        },
      },
    ]);
    expect(d.core.state().lastError).toBe(
      'PostgreSQL refused to store messages 1, 0, stored a note in their place: constraint says no',
    );
    for (const call of d.calls) d.toolReports(call, { content: '"ok"' });
    d.modelAnswers(answer('done'), []);
    expect(d.turns.at(-1)?.outcome).toBe('answered');
    expect(d.core.state().lastError).toBe(
      'PostgreSQL refused to store messages 1, 0, stored a note in their place: constraint says no',
    );
    d.userMessage({ text: 'again' });
    d.modelAnswers(answer('fine'), []);
    expect(d.core.state().lastError).toBeUndefined();
  });

  it('gives up on notes PostgreSQL refuses too: nothing more to write, and lastError says the transcript lacks them', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'hello' });
    const refusal = { message: 'constraint says no', refusedSeqs: [0] };
    const notes = d.core.writeRefused([], refusal);
    expect(notes).toHaveLength(1);
    expect(d.core.writeRefused(notes, refusal)).toEqual([]);
    expect(d.core.state().lastError).toBe(
      'PostgreSQL refused to store message 0 and the notes in their place (constraint says no); the stored transcript lacks them, so later model calls fail until they are stored',
    );
  });
});

describe('ConversationCore: handoffs', () => {
  const transfer = (id: string, to: string) => ({ id, name: `transfer_to_${to}`, handoff: to });

  it("settles the first handoff at once, refuses a second, keeps the response's waiting call, and moves to the agent once the batch closes", () => {
    const d = new CoreDriver({ agent: 'triage' });
    d.userMessage({ text: 'refund ord_1 and check ord_2' });
    expect(d.request?.agent).toBe('triage');
    const { message, plans } = assistantWithCalls([
      { id: 'call_refund', name: 'issue_refund', needsApproval: true },
      transfer('call_h1', 'refunds'),
      transfer('call_h2', 'auditor'),
    ]);
    d.modelAnswers({ ...message, name: 'triage' }, plans);
    expect(d.starts.size).toBe(0);
    expect(d.core.state()).toMatchObject({ status: 'awaiting_approval', agent: 'triage' });
    expect(d.core.state().pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_refund']);
    expect(d.core.state().messages.at(-1)).toMatchObject({ role: 'assistant', agent: 'triage' });
    decide(d, { decisionId: 'd-1', decision: 'approve', toolCallId: 'call_refund' });
    d.toolReports(d.calls[0], { content: '"refunded"' });
    expect(toolMessages(d).map((m) => [m.tool_call_id, JSON.parse(m.content)])).toEqual([
      ['call_refund', 'refunded'],
      ['call_h1', { assistant: 'refunds' }],
      [
        'call_h2',
        {
          kind: 'tool_failed',
          reason: 'handoff_refused',
          error: expect.stringContaining('Only the first handoff of a response is taken (to refunds)'),
        },
      ],
    ]);
    expect(d.request?.agent).toBe('refunds');
    expect(d.core.state().agent).toBe('refunds');
    d.modelAnswers({ ...answer('done'), name: 'refunds' }, []);
    expect(d.turns.at(-1)).toMatchObject({ outcome: 'answered', steps: 2 });
  });

  it('refuses handoffs past maxHandoffsPerTurn (the agent keeps the turn), and counts again from the next turn', () => {
    const d = new CoreDriver({ agent: 'a', maxHandoffsPerTurn: 1 });
    d.userMessage({ text: 'go' });
    const first = assistantWithCalls([transfer('call_1', 'b')]);
    d.modelAnswers(first.message, first.plans);
    expect(d.request?.agent).toBe('b');
    const second = assistantWithCalls([transfer('call_2', 'a')]);
    d.modelAnswers(second.message, second.plans);
    expect(JSON.parse(toolMessages(d).at(-1)!.content)).toMatchObject({
      kind: 'tool_failed',
      reason: 'handoff_refused',
      error: expect.stringContaining('its limit'),
    });
    expect(d.request?.agent).toBe('b');
    d.modelAnswers(answer('ok'), []);
    d.userMessage({ text: 'again' });
    const third = assistantWithCalls([transfer('call_3', 'a')]);
    d.modelAnswers(third.message, third.plans);
    expect(d.request?.agent).toBe('a');
  });

  it('a turn cancelled while a call of the handoff response waits settles every call, and the handoff holds (its result is stored)', () => {
    const d = new CoreDriver({ agent: 'triage' });
    d.userMessage({ text: 'refund' });
    const { message, plans } = assistantWithCalls([
      { id: 'call_refund', needsApproval: true },
      transfer('call_h', 'refunds'),
    ]);
    d.modelAnswers(message, plans);
    d.cancelTurn('changed my mind');
    expect(toolMessages(d).map((m) => [m.tool_call_id, kindOf(m.content) ?? 'handoff'])).toEqual([
      ['call_refund', 'cancelled'],
      ['call_h', 'handoff'],
    ]);
    expect(d.turns.at(-1)?.outcome).toBe('cancelled');
    expect(d.core.state()).toMatchObject({ status: 'idle', agent: 'refunds', pendingApprovals: [] });
  });

  it('carries the current agent across continue-as-new, and keeps the agent a default-agent conversation first spoke with', () => {
    const d = new CoreDriver({ agent: 'triage' });
    d.userMessage({ text: 'go' });
    const { message, plans } = assistantWithCalls([transfer('call_h', 'refunds')]);
    d.modelAnswers(message, plans);
    d.modelAnswers(answer('done'), []);
    d.continueAsNew();
    expect(d.core.state().agent).toBe('refunds');
    d.userMessage({ text: 'next' });
    expect(d.request?.agent).toBe('refunds');

    const unnamed = new CoreDriver();
    unnamed.userMessage({ text: 'hello' });
    expect(unnamed.request?.agent).toBeUndefined();
    unnamed.modelAnswers({ ...answer('hi'), name: 'triage' }, []);
    expect(unnamed.core.state().agent).toBe('triage');
    unnamed.userMessage({ text: 'again' });
    expect(unnamed.request?.agent).toBe('triage');
  });

  it('sends no agent and changes nothing for a conversation of one unnamed agent', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'go' });
    expect(d.request).not.toHaveProperty('agent');
    expect(d.core.state()).not.toHaveProperty('agent');
    d.modelAnswers(answer('ok'), []);
    expect(d.core.carryOver()).not.toHaveProperty('agent');
  });
});

describe('ConversationCore: agents called as tools', () => {
  const ask = (id: string, agent: string, input: string) => ({
    id,
    name: `ask_${agent}`,
    subAgent: agent,
    idempotent: false,
    arguments: JSON.stringify({ input }),
  });
  const caller = {
    conversationId: 'conv-1',
    rootConversationId: 'conv-1',
    callKey: 'conv-1/msg-1/call-0',
    toolName: 'ask_auditor',
    path: ['desk', 'auditor'],
    requestedBy: ['alice'],
    task: 'check ord_1',
  };

  it('starts the child with the task, its path and the settings it inherits; its answer settles the call by reference', () => {
    const d = new CoreDriver({
      agent: 'desk',
      budget: { turnTokens: 5000 },
      maxSteps: 4,
      model: { model: 'm' },
      systemPrompt: 'not inherited',
    });
    d.userMessage({ text: 'check ord_1', sentBy: 'alice' });
    const { message, plans } = assistantWithCalls([ask('call_a', 'auditor', 'check ord_1')]);
    d.modelAnswers({ ...message, name: 'desk' }, plans);
    const [call] = d.calls;
    expect(d.runs.get(call)).toEqual({
      kind: 'startAgent',
      start: {
        workflowId: 'conv-1~auditor~2-0',
        input: {
          model: { model: 'm' },
          maxSteps: 4,
          budget: { turnTokens: 5000 },
          agent: 'auditor',
          calledBy: { ...caller, callKey: 'conv-1/msg-2/call-0', callerAgent: 'desk', rootTurn: 1 },
        },
        summary: 'auditor agent for ask_auditor, call 1 of turn 1',
        timeoutMs: 60_000, // the agent tool's timeoutMs, from its plan
      },
    });
    d.subAgentEnds(call, {
      conversationId: 'conv-1~auditor~2-0',
      steps: 1,
      messages: 2,
      transcriptRepairs: 0,
      lastTurn: { agent: 'auditor', outcome: 'answered', answer: { responseKey: 'resp-9', text: 'fine (preview)' } },
    });
    expect(toolMessages(d)).toEqual([{ role: 'tool', tool_call_id: 'call_a', content: 'answer stored under resp-9' }]);
    expect(d.stage).toBe('model');
  });

  it("settles the call as tool_failed when the child's turn did not answer, saying how it ended", () => {
    const d = new CoreDriver({ agent: 'desk' });
    d.userMessage({ text: 'go' });
    const { message, plans } = assistantWithCalls([ask('call_a', 'auditor', 'go')]);
    d.modelAnswers(message, plans);
    d.subAgentEnds(d.calls[0], {
      conversationId: 'child',
      steps: 0,
      messages: 1,
      transcriptRepairs: 0,
      lastTurn: { outcome: 'budget_exceeded', error: 'The turn used 10 tokens' },
    });
    expect(JSON.parse(toolMessages(d)[0].content)).toEqual({
      kind: 'tool_failed',
      reason: 'error',
      error: 'The auditor agent did not answer (child): its turn ended as budget_exceeded: The turn used 10 tokens',
    });
  });

  it('refuses a call past maxAgentDepth at once, with the path in its words', () => {
    const d = new CoreDriver({ agent: 'auditor', calledBy: caller, maxAgentDepth: 1 }, 'conv-1~auditor~1-0');
    d.advance();
    const { message, plans } = assistantWithCalls([ask('call_deeper', 'checker', 'deeper')]);
    d.modelAnswers(message, plans);
    expect(d.starts.size).toBe(0);
    expect(JSON.parse(toolMessages(d)[0].content)).toMatchObject({
      kind: 'tool_failed',
      reason: 'agent_too_deep',
      error: expect.stringContaining('at most 1 deep (maxAgentDepth), and this one is 1 deep (desk > auditor)'),
    });
  });

  it('a child answers its task in one turn as asked by the top-level requester, refuses user messages, never continues as new, and returns its answer', () => {
    const d = new CoreDriver({ agent: 'auditor', calledBy: caller }, 'conv-1~auditor~1-0');
    d.advance();
    expect(d.transcript()).toEqual([{ role: 'user', content: 'check ord_1' }]);
    expect(d.core.state()).toMatchObject({ status: 'running', calledBy: caller });
    const { message, plans } = assistantWithCalls([{ id: 'call_r', name: 'issue_refund', needsApproval: true }]);
    d.modelAnswers(message, plans);
    expect(d.core.approvalRequests()[0].requestedBy).toEqual(['alice']);
    d.userMessage({ text: 'a message for the child', sentBy: 'mallory' });
    expect(d.core.state().lastError).toContain('answers only that task; send messages to conv-1');
    expect(d.core.state().queuedMessages).toBe(0);
    decide(d, { decisionId: 'd-1', decision: 'reject', toolCallId: 'call_r', reason: 'no' });
    expect(d.core.shouldContinueAsNew({ historyLength: 10_000, continueAsNewSuggested: true })).toBe(false);
    d.modelAnswers({ role: 'assistant', content: 'ord_1 is fine', name: 'auditor' }, []);
    expect(d.closed).toBe(true);
    expect(d.core.summary()).toMatchObject({
      conversationId: 'conv-1~auditor~1-0',
      lastTurn: {
        agent: 'auditor',
        outcome: 'answered',
        answer: { responseKey: expect.any(String), text: 'ord_1 is fine' },
      },
    });
  });

  it('a child reports the calls waiting in it once written; its caller waits on them (status, search attributes, state) while the call runs', () => {
    const child = new CoreDriver({ agent: 'auditor', calledBy: caller }, 'conv-1~auditor~1-0');
    child.advance();
    expect(child.core.reportForCaller()).toBeUndefined(); // nothing waits: nothing to say
    const { message, plans } = assistantWithCalls([{ id: 'call_r', name: 'issue_refund', needsApproval: true }]);
    child.modelAnswers(message, plans);
    const report = child.core.reportForCaller()!;
    expect(report).toMatchObject({
      callKey: caller.callKey,
      waiting: [
        {
          conversationId: 'conv-1~auditor~1-0',
          agentPath: ['desk', 'auditor'],
          toolCallId: 'call_r',
          toolName: 'issue_refund',
          requestedBy: ['alice'],
        },
      ],
    });
    expect(child.core.reportForCaller()).toBeUndefined(); // unchanged: said once

    const parent = new CoreDriver({ agent: 'desk' });
    parent.userMessage({ text: 'check ord_1', sentBy: 'alice' });
    const asked = assistantWithCalls([ask('call_a', 'auditor', 'check ord_1')]);
    parent.modelAnswers(asked.message, asked.plans);
    expect(parent.core.subAgentWaiting({ callKey: 'conv-1/msg-9/call-0', waiting: report.waiting })).toBe(false); // no such running call
    expect(parent.core.subAgentWaiting({ callKey: parent.calls[0].key, waiting: 'nonsense' })).toBe(false);
    expect(parent.core.subAgentWaiting({ callKey: parent.calls[0].key, waiting: report.waiting })).toBe(true);
    parent.publish();
    expect(parent.core.state()).toMatchObject({
      status: 'awaiting_approval',
      pendingApprovals: [],
      waitingBelow: [{ toolCallId: 'call_r', agentPath: ['desk', 'auditor'] }],
    });
    expect(parent.published).toMatchObject({
      pendingApprovals: 1,
      approvals: { tags: expect.arrayContaining(['tool:issue_refund', 'requester:alice']) },
    });

    decide(child, { decisionId: 'd-1', decision: 'approve', toolCallId: 'call_r' });
    const cleared = child.core.reportForCaller()!;
    expect(cleared.waiting).toEqual([]);
    parent.core.subAgentWaiting(cleared);
    expect(parent.core.state().status).toBe('running');
    expect(parent.core.state().waitingBelow).toBeUndefined();
  });
});

describe('ConversationCore: edit and respond', () => {
  const all = ['approve', 'reject', 'edit', 'respond'] as const;

  it('an edit runs the call with the person’s arguments, saying whose and what the model asked; the record keeps both', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'refund', sentBy: 'alice' });
    const { message, plans } = assistantWithCalls([
      { id: 'call_r', name: 'issue_refund', needsApproval: true, decisions: [...all], arguments: '{"amount":150}' },
    ]);
    d.modelAnswers(message, plans);
    expect(d.core.state().pendingApprovals[0].decisions).toEqual([...all]);
    const [call] = d.calls;
    const edit = {
      decisionId: 'd-1',
      decision: 'edit',
      toolCallId: 'call_r',
      arguments: { amount: 120 },
      decidedBy: 'bob',
    } as const;
    const verify = d.core.receiveDecision(edit, 'update');
    expect(verify).toMatchObject({
      kind: 'verify',
      input: { conversationId: 'conv-1', decision: edit, edit: { toolName: 'issue_refund' } },
    });
    if (verify.kind !== 'verify') throw new Error('the edit was not sent to verification');
    d.core.verificationEnded();
    expect(d.core.decisionVerified(verify.pending, {})).toMatchObject({
      kind: 'record',
      record: { decision: 'edit', arguments: '{"amount":120}', modelArguments: '{"amount":150}', decidedBy: 'bob' },
    });
    expect(d.core.startCall(call)).toMatchObject({
      kind: 'runTool',
      request: { arguments: '{"amount":120}', edited: { by: 'bob', modelArguments: '{"amount":150}' } },
    });
  });

  it('respond settles the call with the person’s answer without running it; a kind the tool does not allow is refused and changes nothing', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'go' });
    const { message, plans } = assistantWithCalls([
      { id: 'call_a', needsApproval: true, decisions: [...all] },
      { id: 'call_b', needsApproval: true, decisions: ['approve', 'reject', 'edit'] },
    ]);
    d.modelAnswers(message, plans);
    expect(
      decide(d, { decisionId: 'd-1', decision: 'respond', toolCallId: 'call_b', response: 'done by hand' }, 'update'),
    ).toEqual({
      refusal:
        'Tool call "call_b" (tool) does not allow "respond": its tool allows approve, reject, edit. Nothing was decided; the call still waits (conversation conv-1).',
    });
    expect(
      decide(d, { decisionId: 'd-2', decision: 'respond', toolCallId: 'call_a', response: 'done by hand' }, 'update'),
    ).toMatchObject({ applied: true });
    decide(d, { decisionId: 'd-3', decision: 'reject', toolCallId: 'call_b' }, 'update');
    expect(d.starts.size).toBe(0);
    expect(JSON.parse(toolMessages(d)[0].content)).toEqual({
      kind: 'responded',
      note: 'A person answered this call in place of the tool; the tool did not run.',
      by: null,
      response: 'done by hand',
    });
  });
});

describe('ConversationCore: typed output', () => {
  const spec = {
    schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
    name: 'count',
  };
  const mismatch = (problem: string) => ({ ok: false as const, problem, retries: 1, schemaName: 'count' });

  it('asks for the output in every model call, and records the checked value with the answered turn', () => {
    const d = new CoreDriver({ output: spec });
    d.userMessage({ text: 'count', messageId: 'm-1' });
    expect(d.request?.output).toEqual(spec);
    d.modelAnswers(answer('{"n":3}'), [], undefined, { output: { ok: true, value: { n: 3 } } });
    expect(d.turns).toEqual([
      { messageIds: ['m-1'], firstSeq: 0, outcome: 'answered', steps: 1, answerSeq: 1, output: { n: 3 } },
    ]);
  });

  it('says a mismatch to the model in a user message and asks again; the turn answers with the second answer', () => {
    const d = new CoreDriver({ output: spec });
    d.userMessage({ text: 'count' });
    d.modelAnswers(answer('three'), [], undefined, { output: mismatch('The answer is not JSON (Unexpected token).') });
    expect(d.stage).toBe('model');
    expect(d.turns).toEqual([]);
    const note = d.request?.append?.find((e) => 'message' in e && e.message.role === 'user');
    expect(note && 'message' in note ? note.message.content : '').toMatch(
      /^\[output check\] Your answer \(1 of 2\) does not match the required output schema "count":\nThe answer is not JSON/,
    );
    d.modelAnswers(answer('{"n":3}'), [], undefined, { output: { ok: true, inAnswer: true } });
    expect(d.turns[0]).toMatchObject({ outcome: 'answered', steps: 2, answerSeq: 3, outputInAnswer: true });
    expect(d.transcript().map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
  });

  it('ends the turn as invalid_output once the retries are spent, naming the schema and the last problem; the next turn asks again from zero', () => {
    const d = new CoreDriver({ output: spec });
    d.userMessage({ text: 'count' });
    d.modelAnswers(answer('three'), [], undefined, { output: mismatch('not JSON') });
    d.modelAnswers(answer('{"n":"3"}'), [], undefined, { output: mismatch('output/n must be integer') });
    expect(d.turns[0]).toMatchObject({
      outcome: 'invalid_output',
      steps: 2,
      answerSeq: 3,
      error: 'The model\'s answer did not match the output schema "count" (answer 2 of 2): output/n must be integer',
    });
    expect(d.core.state()).toMatchObject({ status: 'idle', lastError: d.turns[0].error });
    d.userMessage({ text: 'again' });
    d.modelAnswers(answer('x'), [], undefined, { output: mismatch('not JSON') });
    expect(d.stage).toBe('model'); // a retry of its own
  });
});
