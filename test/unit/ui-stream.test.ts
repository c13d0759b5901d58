import type { UIMessageChunk } from 'ai';
import { describe, expect, it } from 'vitest';
import {
  callOutputOf,
  projectTurn,
  UiStreamEmitter,
  type StepFacts,
  type TurnFacts,
  type UiChunk,
} from '../../src/api/ui-stream';

// The UI message stream's projection of a turn (src/api/ui-stream.ts): the
// order is fixed, text only grows, and what a projection adds is all that is sent.

const call = (index: number, extra: Partial<StepFacts['calls'][number]> = {}) => ({
  callKey: `c/msg-1/call-${index}`,
  toolCallId: `call_${index}`,
  assistantSeq: 1,
  name: 'lookup',
  input: { q: index },
  approvalRequested: false,
  ...extra,
});
const facts = (steps: StepFacts[], end?: TurnFacts['end']): TurnFacts => ({
  messageId: 'turn-0',
  steps,
  ...(end ? { end } : {}),
});
const sent = () => {
  const chunks: UiChunk[] = [];
  return { chunks, emitter: new UiStreamEmitter((c) => chunks.push(c)) };
};

describe('the UI stream projection', () => {
  it('shows a step after the one before it settled, and the turn’s finish once every step settled', () => {
    const open = facts([
      {
        responseKey: 'r1',
        text: 'Looking.',
        stored: true,
        calls: [call(0), call(1, { output: { kind: 'available', value: 1 } })],
      },
      { responseKey: 'r2', text: 'Done.', stored: true, calls: [] },
    ]);
    const { chunks, emitter } = sent();
    emitter.update(projectTurn(open));
    expect(chunks.map((c) => c.type)).toEqual([
      'start',
      'start-step',
      'text-start',
      'text-delta',
      'text-end',
      'tool-input-available',
      'tool-input-available',
      'tool-output-available',
    ]);
    const settled = facts(
      [{ ...open.steps[0], calls: [call(0, { output: { kind: 'denied' } }), open.steps[0].calls[1]] }, open.steps[1]],
      {
        record: { messageIds: ['m'], outcome: 'answered', steps: 2 },
      },
    );
    chunks.length = 0;
    expect(emitter.update(projectTurn(settled))).toBe('ok');
    expect(chunks.map((c) => c.type)).toEqual([
      'tool-output-denied',
      'finish-step',
      'start-step',
      'text-start',
      'text-delta',
      'text-end',
      'finish-step',
      'finish',
    ]);
    expect(chunks.at(-1)).toEqual({ type: 'finish', finishReason: 'stop', messageMetadata: { outcome: 'answered' } });
  });

  it('sends only the growth of live text, ends a part once stored, and says conflict when a retried call’s text does not extend what was sent', () => {
    const { chunks, emitter } = sent();
    emitter.update(projectTurn(facts([{ responseKey: 'r1', text: 'Hel', stored: false, calls: [] }])));
    emitter.update(projectTurn(facts([{ responseKey: 'r1', text: 'Hello', stored: true, calls: [] }])));
    expect(chunks.filter((c) => c.type === 'text-delta').map((c) => (c as { delta: string }).delta)).toEqual([
      'Hel',
      'lo',
    ]);
    expect(chunks.filter((c) => c.type === 'text-end')).toHaveLength(1);
    const retried = sent();
    retried.emitter.update(projectTurn(facts([{ responseKey: 'r1', text: 'First att', stored: false, calls: [] }])));
    expect(
      retried.emitter.update(projectTurn(facts([{ responseKey: 'r1', text: 'Second', stored: false, calls: [] }]))),
    ).toBe('conflict');
  });

  it('a baseline (what the client has) is not sent again; a waiting call ends the response with tool-calls', () => {
    const waiting = facts(
      [{ responseKey: 'r1', text: '', stored: true, calls: [call(0, { approvalRequested: true })] }],
      { waiting: true },
    );
    const items = projectTurn(waiting);
    expect(items.map((i) => ('chunk' in i ? i.chunk.type : 'text'))).toEqual([
      'start',
      'start-step',
      'tool-input-available',
      'tool-approval-request',
      'finish',
    ]);
    const { chunks, emitter } = sent();
    emitter.baseline(projectTurn({ ...waiting, end: undefined }));
    emitter.update(
      projectTurn(
        facts([
          {
            responseKey: 'r1',
            text: '',
            stored: true,
            calls: [call(0, { approvalRequested: true, output: { kind: 'available', value: 'ok' } })],
          },
        ]),
      ),
    );
    expect(chunks.map((c) => c.type)).toEqual(['tool-output-available', 'finish-step']);
  });

  it('reads a result: a rejection is denied, a failure an error naming how it ended, anything else the output', () => {
    expect(
      callOutputOf(
        JSON.stringify({ error: 'A person rejected this tool call; it was not run.', kind: 'rejected', reason: null }),
      ),
    ).toEqual({
      kind: 'denied',
    });
    expect(
      callOutputOf(
        JSON.stringify({ error: 'The call was not run: cancelled by the user.', kind: 'cancelled', started: false }),
      ),
    ).toEqual({
      kind: 'error',
      text: 'cancelled: The call was not run: cancelled by the user.',
    });
    expect(callOutputOf(JSON.stringify({ kind: 'refund', amount: 3 }))).toEqual({
      kind: 'available',
      value: { kind: 'refund', amount: 3 },
    });
    expect(callOutputOf('plain words')).toEqual({ kind: 'available', value: 'plain words' });
  });

  it("is a subset of ai 7's chunks: every chunk it sends type-checks as a UIMessageChunk", () => {
    // The compiler checks the assignment; the transport checks each chunk against ai's own schema at run time.
    const { chunks, emitter } = sent();
    emitter.update(
      projectTurn(
        facts([{ responseKey: 'r1', text: 'Hi.', stored: true, calls: [call(1, { approvalRequested: true })] }], {
          waiting: true,
        }),
      ),
    );
    const asAiChunks: UIMessageChunk[] = chunks;
    expect(asAiChunks.map((c) => c.type)).toContain('tool-approval-request');
  });
});
