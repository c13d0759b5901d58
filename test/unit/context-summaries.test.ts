import { describe, expect, it } from 'vitest';
import { fitToContext } from '../../src/activities/context-budget';
import {
  chunkEnds,
  currentTurnStart,
  digestOf,
  isTurnBoundary,
  renderMessage,
  summaryNote,
  summaryRequestMessages,
  summaryStart,
  turnBoundaryAtOrBefore,
} from '../../src/activities/summary-range';
import type { ChatMessage } from '../../src/contract/messages';
import { agent, AgentRegistry } from '../../src/tools/agents';
import { ToolRegistry } from '../../src/tools/registry';

// Summaries of earlier turns: which messages a summary may replace (whole turns only, never a tool call without
// its result), how a range is cut into requests, and what the summarising model and the answering model are sent.

const call = (id: string, name = 'lookup'): ChatMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name, arguments: `{"id":"${id}"}` } }],
});
const result = (id: string, content = `result of ${id}`): ChatMessage => ({ role: 'tool', tool_call_id: id, content });
const user = (content: string): ChatMessage => ({ role: 'user', content });
const answer = (content: string): ChatMessage => ({ role: 'assistant', content });

const transcript: ChatMessage[] = [
  { role: 'system', content: 'You help with orders.' },
  user('Where is order 1?'), // 1
  call('c1'), // 2
  result('c1'), // 3
  answer('Order 1 shipped.'), // 4
  user('And order 2 and 3?'), // 5
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'c2', type: 'function', function: { name: 'lookup', arguments: '{}' } },
      { id: 'c3', type: 'function', function: { name: 'lookup', arguments: '{}' } },
    ],
  }, // 6
  result('c2'), // 7
  result('c3'), // 8
  answer('Both delivered.'), // 9
  user('Thanks'), // 10
  answer('You are welcome.'), // 11
  user('Now order 4?'), // 12: the current turn
  call('c4'), // 13
  result('c4'), // 14
];

/** Every tool call in `messages` has its result in `messages` too. */
function callsAnswered(messages: ChatMessage[]): boolean {
  const called = messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : []));
  const answered = new Set(messages.flatMap((m) => (m.role === 'tool' ? [m.tool_call_id] : [])));
  return called.every((id) => answered.has(id)) && answered.size === called.length;
}

describe('the range a summary replaces', () => {
  it('starts after the system prompt and ends only before a user message of an earlier turn', () => {
    expect(summaryStart(transcript)).toBe(1);
    expect(currentTurnStart(transcript)).toBe(12);
    expect(summaryStart(transcript.slice(1))).toBe(0);
    const boundaries = transcript.map((_, end) => end).filter((end) => isTurnBoundary(transcript, end));
    expect(boundaries).toEqual([5, 10, 12]);
  });

  it('never splits a tool call from its result, whatever end is asked for', () => {
    for (let end = 0; end <= transcript.length + 2; end++) {
      const at = turnBoundaryAtOrBefore(transcript, end);
      if (at === undefined) {
        expect(end).toBeLessThan(5);
        continue;
      }
      expect(transcript[at].role).toBe('user');
      expect(at).toBeLessThanOrEqual(12);
      // Both sides of the cut hold whole pairs.
      expect(callsAnswered(transcript.slice(1, at))).toBe(true);
      expect(callsAnswered(transcript.slice(at))).toBe(true);
    }
    expect(turnBoundaryAtOrBefore(transcript, 8)).toBe(5);
    expect(turnBoundaryAtOrBefore(transcript, 14)).toBe(12);
  });

  it('is cut into runs of whole turns that fit a request; a turn larger than one request is a run alone', () => {
    const tokens = (index: number) => (index === 6 ? 500 : 10);
    const ends = chunkEnds(transcript, 1, 12, tokens, 100);
    expect(ends).toEqual([5, 10, 12]);
    for (const end of ends) expect(isTurnBoundary(transcript, end)).toBe(true);
    expect(chunkEnds(transcript, 1, 12, () => 1, 100)).toEqual([12]);
    expect(chunkEnds(transcript, 5, 10, () => 1, 1)).toEqual([10]);
  });

  it('is named by a digest of its messages: a changed message gives another digest', () => {
    const range = transcript.slice(1, 5);
    expect(digestOf(range)).toBe(digestOf(structuredClone(range)));
    expect(digestOf([...range.slice(0, 3), answer('Order 1 is lost.')])).not.toBe(digestOf(range));
  });
});

describe('the summary request', () => {
  it('shows each message with its seq, tool calls with their arguments and results by call id, long text clipped', () => {
    expect(renderMessage(transcript[1], 1, 100)).toBe('[message 1] user: Where is order 1?');
    expect(renderMessage(transcript[2], 2, 100)).toBe(
      '[message 2] assistant: \n  called lookup (call c1) with {"id":"c1"}',
    );
    expect(renderMessage(transcript[3], 3, 100)).toBe('[message 3] result of tool call c1: result of c1');
    const long = renderMessage(result('c9', 'word '.repeat(1000)), 7, 20);
    expect(long).toMatch(/^\[message 7\] result of tool call c9: (word ){19,21}\[…\d+ more characters\]$/);
  });

  it('asks for a summary only, within its length, and folds in the summary so far when extending it', () => {
    const [system, first] = summaryRequestMessages(undefined, { text: 'T', fromSeq: 1, throughSeq: 4 }, 1000);
    expect(system.role).toBe('system');
    expect(system.content).toContain('shorter than 700 words');
    expect(system.content).toContain('Do not answer or continue the conversation');
    expect(first).toEqual({ role: 'user', content: 'The messages to summarise (1–4):\nT' });
    const [, extended] = summaryRequestMessages(
      { summary: 'Order 1 shipped.', fromSeq: 1, throughSeq: 4 },
      { text: 'U', fromSeq: 5, throughSeq: 9 },
      1000,
    );
    expect(extended.content).toBe(
      'The summary of messages 1–4, written before:\nOrder 1 shipped.\n\n' +
        'The messages that follow it (5–9); write one summary of both:\nU',
    );
  });

  it('is sent to the answering model as a note after the system prompt that the fitting never leaves out', () => {
    const note = summaryNote('Orders 1–3 delivered.', 1, 11, 2000);
    expect(note.content).toMatch(/^\[Summary of messages 1–11 of this conversation, sent in their place/);
    expect(note.content).toMatch(/Orders 1–3 delivered\.$/);
    const big = 'x '.repeat(3000);
    const messages = [transcript[0], note, user(big), answer(big), user(big), answer(big), user('Now?')];
    const fitted = fitToContext(messages, { windowTokens: 1200, replyTokens: 200, pinned: 2, alwaysCount: true });
    expect(fitted.messages.slice(0, 2)).toEqual([transcript[0], note]);
    expect(fitted.report.elided).toBe(2);
  });
});

describe('turning summaries on per agent', () => {
  it("takes modelSettings.contextOverflow 'summarize' or 'elide', and refuses anything else saying what is allowed", () => {
    const tools = new ToolRegistry([]);
    const on = agent({ name: 'keeper', modelSettings: { contextOverflow: 'summarize' } });
    expect(new AgentRegistry([on], tools).get('keeper')?.modelSettings).toEqual({ contextOverflow: 'summarize' });
    const bad = agent({ name: 'bad', modelSettings: { contextOverflow: 'compress' as never } });
    expect(() => new AgentRegistry([bad], tools)).toThrow(
      'Agent "bad": modelSettings.contextOverflow must be "elide" (leave earlier turns out, the default) or "summarize" (send a summary of them), got "compress".',
    );
  });
});
