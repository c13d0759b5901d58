import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { findPairingProblems, type PairingItem } from '../../src/core/pairing';
import type { ChatMessage } from '../../src/contract/messages';
import { assistantWithCalls, CoreDriver, decide } from '../support/core-driver';

// Regenerate in the pure core (src/core/regenerate.ts), through the same driver as the workflow's other unit tests:
// which requests it takes and refuses, what the regenerated turn supersedes, writes and asks the model, and the call
// keys of its calls (new ones: a call asked for again waits for a new approval and runs again).

const answer = (content: string) => ({ role: 'assistant' as const, content });
const refund = (id: string) =>
  assistantWithCalls([{ id, name: 'issue_refund', needsApproval: true, idempotent: false }]);

/** Asks for a regeneration as the update does (validator, then handler); its answer, or the refusal it throws. */
function regenerate(d: CoreDriver, request: unknown = {}): { requestId: string; started: boolean } | string {
  try {
    d.core.regenerate(request, 'check');
    const result = d.core.regenerate(request, 'update')!;
    d.advance();
    return result;
  } catch (err) {
    return (err as Error).message;
  }
}

describe('regenerate (core)', () => {
  it('supersedes what the last turn stored after its user message, and asks the model again from there', () => {
    const d = new CoreDriver({ systemPrompt: 'Be brief.' });
    d.userMessage({ text: 'hello', messageId: 'm-1' });
    d.modelAnswers(answer('first answer'), [], { usage: { promptTokens: 10, completionTokens: 5 } });
    const result = regenerate(d, { requestId: 'r-1', sentBy: 'rita' });
    expect(result).toEqual({ requestId: 'r-1', fromSeq: 2, started: true });
    expect(d.db.superseded).toEqual([answer('first answer')]);
    expect(d.stored.map((m) => m.role)).toEqual(['system', 'user']);
    expect(d.request).toMatchObject({ throughSeq: 1, turnFromSeq: 1 });
    expect(d.request?.append).toBeUndefined();
    expect(d.core.state()).toMatchObject({ status: 'running', currentTurn: { messageIds: ['r-1'], firstSeq: 1 } });
    d.modelAnswers(answer('second answer'), [], { usage: { promptTokens: 12, completionTokens: 6 } });
    expect(d.stored).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hello' },
      answer('second answer'),
    ]);
    const state = d.core.state();
    expect(state.recentTurns).toMatchObject([
      { messageIds: ['m-1'], outcome: 'answered', answerSeq: 2, supersededBy: 'r-1' },
      { messageIds: ['r-1'], firstSeq: 1, outcome: 'answered', answerSeq: 2, requestedBy: ['rita'] },
    ]);
    // The superseded answer's tokens stay counted.
    expect(state.usage).toMatchObject({ promptTokens: 22, completionTokens: 11 });
    expect(state).toMatchObject({ messageCount: 3, regenerations: 1 });
  });

  it('refuses while a turn runs, with messages waiting, with nothing to regenerate, twice at once, and when ending', () => {
    const d = new CoreDriver();
    expect(regenerate(d)).toMatch(/^Nothing to regenerate: the conversation has answered no message yet/);
    d.userMessage({ text: 'one' });
    expect(regenerate(d)).toMatch(/^A turn is running/);
    d.modelAnswers(answer('a'), []);
    expect(regenerate(d, { requestId: 7 })).toMatch(/^Invalid regenerate request: "requestId", when given, must be/);
    // A signal refused says why in lastError; nothing starts.
    expect(d.core.regenerate({ requestId: '' }, 'signal')).toBeUndefined();
    expect(d.core.state().lastError).toMatch(/^Ignored a regenerate signal: Invalid regenerate request/);
    // Two in one workflow task: the second is refused (the first has not started yet).
    expect(d.core.regenerate({ requestId: 'r-1' }, 'update')).toMatchObject({ started: true });
    expect(() => d.core.regenerate({ requestId: 'r-2' }, 'check')).toThrow(/already asked for \(request r-1\)/);
    d.advance();
    // A resend of the same request starts nothing, also after its turn.
    expect(regenerate(d, { requestId: 'r-1' })).toMatchObject({ requestId: 'r-1', started: false });
    d.modelAnswers(answer('b'), []);
    expect(regenerate(d, { requestId: 'r-1' })).toMatchObject({ requestId: 'r-1', started: false });
    expect(d.turns).toHaveLength(2);
    d.core.s.inbox.receive({ text: 'queued', messageId: 'm-q' });
    expect(regenerate(d)).toMatch(/^1 message\(s\) wait for their turn/);
    const ending = new CoreDriver();
    ending.userMessage({ text: 'one' });
    ending.modelAnswers(answer('a'), []);
    ending.core.end();
    expect(regenerate(ending)).toMatch(/^The conversation is ending/);
  });

  it('refuses in an agent called as a tool, which answers only its task', () => {
    const caller = {
      conversationId: 'desk',
      rootConversationId: 'desk',
      callKey: 'desk/msg-1/call-0',
      toolName: 'ask_auditor',
      task: 'check',
      requestedBy: [],
      path: ['desk'],
    };
    const d = new CoreDriver({ agent: 'auditor', calledBy: caller }, 'desk~auditor~1-0');
    d.advance();
    d.modelAnswers(answer('checked'), []);
    expect(regenerate(d)).toMatch(/answers only that task; regenerate an answer of desk instead/);
  });

  it('gives the calls of a regenerated turn new keys: a refund asked for again waits for a new approval, then runs again', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'refund my order' });
    const first = refund('call_1');
    d.modelAnswers(first.message, first.plans);
    decide(d, { decisionId: 'd-1', decision: 'approve', toolCallId: 'call_1' });
    d.toolReports(d.calls[0], { content: '"refunded 1"' });
    d.modelAnswers(answer('refunded'), []);
    expect([...d.starts]).toEqual([['conv-1/msg-1/call-0', 1]]);
    expect(regenerate(d)).toMatchObject({ fromSeq: 1, started: true });
    expect(d.db.superseded.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
    const again = refund('call_1');
    d.modelAnswers(again.message, again.plans);
    expect(d.calls[0].key).toBe('conv-1/regen-1/msg-1/call-0');
    expect(d.core.state().pendingApprovals).toMatchObject([{ callKey: 'conv-1/regen-1/msg-1/call-0' }]);
    // The first turn's approval does not carry over: nothing runs until a person approves again.
    expect(d.starts.get('conv-1/regen-1/msg-1/call-0')).toBeUndefined();
    decide(d, { decisionId: 'd-2', decision: 'approve', toolCallId: 'call_1' });
    expect(d.starts.get('conv-1/regen-1/msg-1/call-0')).toBe(1);
    d.toolReports(d.calls[0], { content: '"refunded 2"' });
    d.modelAnswers(answer('refunded again'), []);
    // Later turns keep the count: their keys stay apart from any superseded turn's.
    d.userMessage({ text: 'thanks' });
    const later = assistantWithCalls([{ id: 'call_9' }]);
    d.modelAnswers(later.message, later.plans);
    expect(d.calls[0].key).toBe('conv-1/regen-1/msg-5/call-0');
  });

  it('regenerates a turn that ran in an earlier run (after continue-as-new), and counts on from there', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'one', messageId: 'm-1' });
    d.modelAnswers(answer('a'), []);
    d.userMessage({ text: 'two', messageId: 'm-2' });
    d.modelAnswers(answer('b'), []);
    d.continueAsNew();
    expect(d.core.carryOver()).toMatchObject({ lastInput: { fromSeq: 2, toSeq: 3 }, regenerations: 0 });
    expect(regenerate(d, { requestId: 'r-1' })).toMatchObject({ fromSeq: 3, started: true });
    d.modelAnswers(answer('b again'), []);
    d.continueAsNew();
    expect(d.core.carryOver()).toMatchObject({ lastInput: { fromSeq: 2, toSeq: 3 }, regenerations: 1 });
    expect(regenerate(d, { requestId: 'r-1' })).toMatchObject({ started: false }); // remembered across runs
    expect(regenerate(d, { requestId: 'r-2' })).toMatchObject({ fromSeq: 3, started: true });
    const asks = assistantWithCalls([{ id: 'call_1' }]);
    d.modelAnswers(asks.message, asks.plans);
    expect(d.calls[0].key).toBe('conv-1/regen-2/msg-3/call-0');
    expect(d.db.superseded).toEqual([answer('b'), answer('b again')]);
  });

  it('carries an accepted request not yet taken across continue-as-new', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'one' });
    d.modelAnswers(answer('a'), []);
    expect(d.core.regenerate({ requestId: 'r-1' }, 'signal')).toMatchObject({ started: true });
    d.continueAsNew();
    expect(d.core.state().currentTurn).toEqual({ messageIds: ['r-1'], firstSeq: 0 });
    expect(d.db.superseded).toEqual([answer('a')]);
  });

  it('regenerates a failed or cancelled turn; one stopped before it began supersedes nothing', () => {
    const d = new CoreDriver();
    d.userMessage({ text: 'one' });
    d.modelFails('provider said 500');
    expect(regenerate(d)).toMatchObject({ fromSeq: 1, started: true });
    d.cancelTurn();
    expect(d.turns.at(-1)).toMatchObject({ outcome: 'cancelled' });
    expect(d.db.superseded).toEqual([]); // the failed turn stored no answer
    d.core.regenerate({ requestId: 'r-2' }, 'update');
    d.core.s.stopReason = 'cancelled by the user'; // a cancel that came before the turn began
    d.advance();
    expect(d.turns.at(-1)).toMatchObject({ messageIds: ['r-2'], outcome: 'cancelled' });
    expect(d.core.state()).toMatchObject({ regenerations: 1 });
  });
});

describe('regenerate (property)', () => {
  type Step = 'message' | 'answer' | 'call' | 'toolOk' | 'fail' | 'regenerate' | 'continueAsNew' | 'cancel';
  const step = fc.constantFrom<Step>(
    'message',
    'answer',
    'answer',
    'call',
    'toolOk',
    'fail',
    'regenerate',
    'regenerate',
    'continueAsNew',
    'cancel',
  );

  it('keeps the live transcript dense and paired, the model reading all of it, and never runs a call key twice', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const d = new CoreDriver();
        let calls = 0;
        for (const s of steps) {
          if (s === 'message') d.userMessage({ text: 'hi' });
          else if (s === 'answer' && d.stage === 'model') d.modelAnswers(answer('ok'), []);
          else if (s === 'call' && d.stage === 'model') {
            const { message, plans } = assistantWithCalls([{ id: `call_${calls++}` }]);
            d.modelAnswers(message, plans);
          } else if (s === 'toolOk' && d.stage === 'calls') d.toolReports(d.calls[0], { content: '"ok"' });
          else if (s === 'fail' && d.stage === 'model') d.modelFails('no');
          else if (s === 'regenerate') {
            const before = d.core.state();
            const result = regenerate(d);
            const idle = before.status !== 'running' && before.queuedMessages === 0 && before.recentTurns.length > 0;
            expect(typeof result !== 'string').toBe(idle);
          } else if (s === 'continueAsNew' && d.stage === 'idle') d.continueAsNew();
          else if (s === 'cancel') d.cancelTurn();
          const live = d.stage === 'model' ? d.modelView() : d.stored;
          expect(live.every((m) => m !== undefined)).toBe(true);
          if (d.stage === 'model') expect(d.request!.throughSeq).toBe(live.length - 1);
          expect(findPairingProblems(live.filter((m) => m.role !== 'system').map(pairingItem))).toEqual([]);
        }
        expect([...d.starts.values()].every((n) => n === 1)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});

function pairingItem(m: ChatMessage): PairingItem {
  if (m.role === 'assistant') return { role: m.role, callIds: m.tool_calls?.map((c) => c.id) };
  if (m.role === 'tool') return { role: m.role, answers: m.tool_call_id };
  return { role: m.role };
}
