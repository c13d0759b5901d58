import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/contract/messages';
import { describeInvalidInput } from '../../src/contract/conversation-input-checks';
import {
  forkedCallContent,
  ForkPointError,
  planFork,
  resolveForkPoint,
  turnStarts,
  type SourceRow,
} from '../../src/db/fork-point';

// Where a fork starts and what it copies, from a transcript alone: turns
// counted from the user messages, fork points checked against the transcript
// with the limit named, and a batch the fork point falls inside completed.

const rows = (...messages: ChatMessage[]): SourceRow[] => messages.map((message, seq) => ({ seq, message }));
const user = (content: string): ChatMessage => ({ role: 'user', content });
const answer = (content: string, name?: string): ChatMessage => ({
  role: 'assistant',
  content,
  ...(name ? { name } : {}),
});
const calls = (name: string | undefined, ...ids: [string, string][]): ChatMessage => ({
  role: 'assistant',
  content: null,
  ...(name ? { name } : {}),
  tool_calls: ids.map(([id, tool]) => ({ id, type: 'function', function: { name: tool, arguments: '{}' } })),
});
const result = (id: string, content = '{"ok":true}'): ChatMessage => ({ role: 'tool', tool_call_id: id, content });

/** system, turn 1 (a call and its answer), turn 2 (two user messages taken together), turn 3 waiting on two calls. */
const transcript = rows(
  { role: 'system', content: 'be brief' }, // 0
  user('refund A'), // 1: turn 1
  calls(undefined, ['c1', 'issue_refund']), // 2
  result('c1'), // 3
  answer('refunded A'), // 4
  user('refund B'), // 5: turn 2
  user('and C'), // 6
  answer('done'), // 7
  user('refund D and E'), // 8: turn 3
  calls(undefined, ['d', 'issue_refund'], ['e', 'issue_refund']), // 9
);

describe('fork points', () => {
  it('numbers turns from 1 at each user message that does not follow another', () => {
    expect(turnStarts(transcript)).toEqual([1, 5, 8]);
  });

  it('a turn resolves to the seq before its first user message; a seq to itself', () => {
    expect(resolveForkPoint('s', transcript, { turn: 1 })).toBe(0);
    expect(resolveForkPoint('s', transcript, { turn: 2 })).toBe(4);
    expect(resolveForkPoint('s', transcript, { turn: 3 })).toBe(7);
    expect(resolveForkPoint('s', transcript, { seq: 0 })).toBe(0);
    expect(resolveForkPoint('s', transcript, { seq: 9 })).toBe(9);
  });

  it('refuses fork points outside the transcript, naming the limit', () => {
    expect(() => resolveForkPoint('s', transcript, { seq: 10 })).toThrow(
      /seq must be an integer from 0 to 9 \(the last message of conversation s\), got 10/,
    );
    expect(() => resolveForkPoint('s', transcript, { seq: -1 })).toThrow(/from 0 to 9.*got -1/);
    expect(() => resolveForkPoint('s', transcript, { seq: 1.5 })).toThrow(ForkPointError);
    expect(() => resolveForkPoint('s', transcript, { turn: 4 })).toThrow(
      /turn must be an integer from 1 to 3 \(the turns of conversation s\), got 4/,
    );
    expect(() => resolveForkPoint('s', transcript, { turn: 0 })).toThrow(/from 1 to 3/);
    expect(() => resolveForkPoint('s', [], { seq: 0 })).toThrow(/has no stored messages/);
    expect(() => resolveForkPoint('s', rows({ role: 'system', content: 'x' }), { turn: 1 })).toThrow(
      /has no turns yet.*seq from 0 to 0/,
    );
    // Without a system message, nothing comes before turn 1.
    expect(() => resolveForkPoint('s', rows(user('hi'), answer('hello')), { turn: 1 })).toThrow(
      /has one turn, which starts it.*fork at a seq from 0 to 1 instead, got turn 1/,
    );
  });

  it('without a system message, says the range that is really open: from turn 2', () => {
    const twoTurns = rows(user('hi'), answer('hello'), user('refund A'), answer('refunded'));
    expect(resolveForkPoint('s', twoTurns, { turn: 2 })).toBe(1);
    for (const turn of [5, 1, 0]) {
      expect(() => resolveForkPoint('s', twoTurns, { turn })).toThrow(
        `The fork point turn must be 2 (conversation s has 2 turns, and turn 1 starts it: with no system message, a fork before it would hold nothing), got ${turn}; or fork at a seq from 0 to 3.`,
      );
    }
    const threeTurns = rows(...twoTurns.map((r) => r.message), user('and B'), answer('refunded B'));
    expect(() => resolveForkPoint('s', threeTurns, { turn: 1 })).toThrow(
      /must be an integer from 2 to 3 \(conversation s has 3 turns, and turn 1 starts it/,
    );
    expect(() => resolveForkPoint('s', threeTurns, { turn: 1 })).toThrow(ForkPointError);
  });
});

describe('what a fork copies', () => {
  it('at the start of a turn: the messages before it, every call answered, the turns counted', () => {
    const plan = planFork('s', transcript, { turn: 2 });
    expect(plan).toMatchObject({ forkSeq: 4, open: [], turns: 1, agent: undefined });
    expect(plan.rows.map((r) => r.seq)).toEqual([0, 1, 2, 3, 4]);
  });

  it('at an assistant message whose calls have no result: the calls are left open, with their keys', () => {
    const plan = planFork('s', transcript, { seq: 9 });
    expect(plan.rows.map((r) => r.seq)).toEqual([...Array(10).keys()]);
    expect(plan.open).toEqual([
      { toolCallId: 'd', toolName: 'issue_refund', index: 0, assistantSeq: 9 },
      { toolCallId: 'e', toolName: 'issue_refund', index: 1, assistantSeq: 9 },
    ]);
    expect(plan.turns).toBe(3);
  });

  it('inside a batch: the rest of its results in the source are copied too, so each result follows its call', () => {
    const source = rows(
      user('two refunds'), // 0
      calls(undefined, ['a', 'issue_refund'], ['b', 'issue_refund']), // 1
      result('a'), // 2
      result('b', '{"kind":"rejected"}'), // 3
      answer('one refund'), // 4
    );
    for (const seq of [1, 2]) {
      const plan = planFork('s', source, { seq });
      expect(plan.rows.map((r) => r.seq)).toEqual([0, 1, 2, 3]);
      expect(plan.open).toEqual([]);
    }
  });

  it('a batch the copy has left behind (a later message follows) is not completed again', () => {
    const plan = planFork('s', transcript, { seq: 6 });
    expect(plan.open).toEqual([]);
    expect(plan.rows).toHaveLength(7);
  });

  it('the agent at the fork point: the last answer named, or the agent a taken handoff moved to', () => {
    const source = rows(
      user('hi'), // 0
      answer('triage here', 'triage'), // 1
      user('refund please'), // 2
      calls('triage', ['h1', 'transfer_to_refunds']), // 3
      result('h1', '{"assistant":"refunds"}'), // 4
      answer('refunds here', 'refunds'), // 5
    );
    expect(planFork('s', source, { seq: 2 }).agent).toBe('triage');
    expect(planFork('s', source, { seq: 4 }).agent).toBe('refunds');
    expect(planFork('s', source, { seq: 3 }).agent).toBe('refunds'); // the handoff's result is copied with it
    const refused = rows(
      user('x'),
      calls('triage', ['h1', 'transfer_to_refunds']),
      result('h1', '{"kind":"tool_failed"}'),
    );
    expect(planFork('s', refused, { seq: 2 }).agent).toBe('triage');
  });

  it("the fork's outcome for a call left open is a result of kind cancelled, not started, naming the source", () => {
    expect(JSON.parse(forkedCallContent('src-1', 9))).toEqual({
      error:
        'The call was not run in this conversation: it was forked from conversation src-1 at seq 9 before the call had a result.',
      kind: 'cancelled',
      started: false,
      reason: 'forked',
    });
  });
});

describe('forkedFrom in a conversation input', () => {
  it('is checked: a conversation id and a seq, nothing else', () => {
    expect(describeInvalidInput({ forkedFrom: { conversationId: 'a', seq: 3 } })).toEqual([]);
    for (const bad of [{ conversationId: '', seq: 1 }, { conversationId: 'a', seq: -1 }, { conversationId: 'a' }, 'a'])
      expect(describeInvalidInput({ forkedFrom: bad })).toEqual([expect.stringMatching(/^forkedFrom must be/)]);
    expect(describeInvalidInput({ forkedFrom: { conversationId: 'a', seq: 1, extra: true } })).toHaveLength(1);
  });
});
