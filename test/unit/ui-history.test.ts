import { readUIMessageStream, validateUIMessages, type UIMessage, type UIMessageChunk } from 'ai';
import { describe, expect, it } from 'vitest';
import { messageOfProjection, splitTurns } from '../../src/api/ui-history';
import { projectTurn, UiStreamEmitter, type CallFacts, type TurnFacts, type UiChunk } from '../../src/api/ui-stream';
import type { ConversationState, TurnRecord } from '../../src/contract';
import type { HistoryRow } from '../../src/db/ui-history-reads';

// A conversation's history as UIMessage[] (src/api/ui-history.ts): an answer
// is what the live stream of its turn leaves on a page, read as ai 7 reads
// the chunks, and ai 7's validateUIMessages takes it.

const call = (index: number, extra: Partial<CallFacts> = {}): CallFacts => ({
  callKey: `c/msg-1/call-${index}`,
  toolCallId: `call_${index}`,
  assistantSeq: 1,
  name: 'lookup',
  input: { q: index },
  approvalRequested: false,
  ...extra,
});
const record: TurnRecord = {
  messageIds: ['m1'],
  firstSeq: 0,
  outcome: 'answered',
  answerSeq: 5,
  output: { verdict: 'ok' },
  steps: 2,
};
/** A turn with reasoning, a call that ran, one approved, one rejected, one that failed, a handoff and a typed output. */
const ended: TurnFacts = {
  messageId: 'turn-0',
  steps: [
    {
      responseKey: 'r1',
      text: 'Looking.',
      reasoning: 'The user wants a refund.',
      stored: true,
      calls: [
        call(0, { output: { kind: 'available', value: { found: true } } }),
        call(1, {
          name: 'issue_refund',
          approvalRequested: true,
          decided: { approved: true, reason: 'fine' },
          output: { kind: 'available', value: 'refunded' },
        }),
        call(2, {
          name: 'issue_refund',
          approvalRequested: true,
          decided: { approved: false, reason: 'too much' },
          output: { kind: 'denied', reason: 'too much' },
        }),
        call(3, { output: { kind: 'error', text: 'tool_failed: boom' } }),
        call(4, { name: 'transfer_to_refunds', output: { kind: 'available', value: { assistant: 'refunds' } } }),
      ],
    },
    { responseKey: 'r2', text: '{"verdict":"ok"}', stored: true, calls: [] },
  ],
  end: { record },
};

/** The message ai 7 builds from the chunks the stream sends for `facts`. */
async function streamed(facts: TurnFacts): Promise<UIMessage> {
  const chunks: UiChunk[] = [];
  new UiStreamEmitter((c) => chunks.push(c)).update(projectTurn(facts));
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const c of chunks) controller.enqueue(c as UIMessageChunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const m of readUIMessageStream<UIMessage>({ stream, terminateOnError: true })) last = m;
  return last!;
}

describe('the history of a chat', () => {
  it('an ended turn is the message its stream leaves, under the same id, and ai 7 validates it unchanged', async () => {
    const history = messageOfProjection(projectTurn(ended));
    expect(history).toEqual(JSON.parse(JSON.stringify(await streamed(ended))));
    expect(history.id).toBe('turn-0');
    expect(history.metadata).toEqual({ outcome: 'answered', output: { verdict: 'ok' } });
    const tools = history.parts.filter((p) => p.type === 'dynamic-tool');
    expect(tools.map((p) => [p.state, p.approval])).toEqual([
      ['output-available', undefined],
      ['output-available', { id: 'c/msg-1/call-1', approved: true, reason: 'fine' }],
      ['output-denied', { id: 'c/msg-1/call-2', approved: false, reason: 'too much' }],
      ['output-error', undefined],
      ['output-available', undefined],
    ]);
    const messages = [
      { id: 'user-0', role: 'user', parts: [{ type: 'text', text: 'Refund please', state: 'done' }] },
      history,
    ];
    expect(await validateUIMessages({ messages })).toEqual(messages);
  });

  it('a running turn: a call waiting for a decision, one approved and running, text still streaming', async () => {
    const running: TurnFacts = {
      messageId: 'turn-7',
      steps: [
        {
          responseKey: 'r1',
          text: '',
          stored: true,
          calls: [
            call(0, {
              approvalRequested: true,
              ask: { reason: 'Waits for an approver.', descriptor: { decide: [], rule: 'role' } },
            }),
            call(1, { approvalRequested: true, decided: { approved: true } }),
          ],
        },
      ],
      end: { waiting: true },
    };
    const history = messageOfProjection(projectTurn(running));
    expect(history).toEqual(JSON.parse(JSON.stringify(await streamed(running))));
    expect(history.parts.filter((p) => p.type === 'dynamic-tool').map((p) => p.state)).toEqual([
      'approval-requested',
      'approval-responded',
    ]);
    expect(history.metadata).toEqual({ outcome: 'awaiting_approval' });
    await validateUIMessages({ messages: [history] });
    const speaking: TurnFacts = {
      messageId: 'turn-9',
      steps: [{ responseKey: 'r9', text: 'Half a sen', stored: false, calls: [] }],
    };
    const partial = messageOfProjection(projectTurn(speaking));
    expect(partial).toEqual(JSON.parse(JSON.stringify(await streamed(speaking))));
    expect(partial.parts).toEqual([{ type: 'step-start' }, { type: 'text', text: 'Half a sen', state: 'streaming' }]);
  });

  it('splits the transcript into turns: at the turns the state keeps, else at a user message after an answer, never at an output check', () => {
    const user = (seq: number, content: string): HistoryRow => ({ seq, message: { role: 'user', content } });
    const answer = (seq: number, content: string): HistoryRow => ({
      seq,
      message: { role: 'assistant', content },
    });
    const rows: HistoryRow[] = [
      { seq: 0, message: { role: 'system', content: 'Be brief.' } },
      user(1, 'a'),
      user(2, 'b'), // taken with a
      answer(3, 'A'),
      user(4, '[output check] Your answer (1 of 2) does not match'),
      answer(5, 'A again'),
      user(6, 'c'),
      answer(7, 'C'),
      user(8, 'd'), // a turn stopped before any answer (kept by the state)
      user(9, 'e'),
      answer(10, 'E'),
    ];
    const state = {
      recentTurns: [
        { messageIds: ['d'], firstSeq: 8, outcome: 'budget_exceeded', steps: 0 },
        { messageIds: ['e'], firstSeq: 9, outcome: 'answered', steps: 1 },
      ],
    } as unknown as ConversationState;
    const turns = splitTurns(rows, state).map((t) => [t.firstSeq, t.user.map((r) => r.seq), t.rest.map((r) => r.seq)]);
    expect(turns).toEqual([
      [1, [1, 2], [3, 4, 5]],
      [6, [6], [7]],
      [8, [8], []],
      [9, [9], [10]],
    ]);
  });
});
