import {
  lastAssistantMessageIsCompleteWithApprovalResponses,
  readUIMessageStream,
  validateUIMessages,
  type UIMessage,
  type UIMessageChunk,
} from 'ai';
import { describe, expect, it } from 'vitest';
import { approvalAsk, decisionOf, type ChatViewer } from '../../src/api/chat-approvals';
import { holdsFor, KEEP_ALIVE_MS } from '../../src/api/ui-hold';
import { projectTurn, UiStreamEmitter, type CallFacts, type TurnFacts, type UiChunk } from '../../src/api/ui-stream';

// Approvals as the chat's reader may act on them: who may decide (four eyes,
// the approver role), how a decision shows (the AI SDK's approval response,
// read by ai 7's own stream reader and accepted by validateUIMessages), and
// the hold of a response while the reader waits for someone else.

const alice: ChatViewer = { subject: 'alice@example.com', approver: false, allowSelfApproval: false };
const dave: ChatViewer = { subject: 'dave@example.com', approver: true, allowSelfApproval: false };
const bob: ChatViewer = { subject: 'bob@example.com', approver: true, allowSelfApproval: false };

const refund = (over: Partial<CallFacts> = {}): CallFacts => ({
  callKey: 'c/msg-2/call-0',
  toolCallId: 'call_r',
  assistantSeq: 2,
  name: 'issue_refund',
  input: { order_id: 'ord_1001' },
  approvalRequested: true,
  ...over,
});
const turn = (calls: CallFacts[], end?: TurnFacts['end'], below?: CallFacts[]): TurnFacts => ({
  messageId: 'turn-1',
  steps: [{ responseKey: 'r1', text: 'Refunding.', stored: true, calls, ...(below ? { below } : {}) }],
  ...(end ? { end } : {}),
});

/** The UI message ai 7 builds from `chunks`, starting from `from` (the message the client holds). */
async function read(chunks: UiChunk[], from?: UIMessage): Promise<UIMessage> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream, ...(from ? { message: from } : {}) })) last = message;
  return structuredClone(last!);
}

function sentBy(emitter: UiStreamEmitter, chunks: UiChunk[], facts: TurnFacts): UiChunk[] {
  const before = chunks.length;
  emitter.update(projectTurn(facts));
  return chunks.slice(before);
}

describe('approvals in the chat', () => {
  it('names who may decide: four eyes keep the sender from approving; without the approver role nothing is offered', () => {
    expect(approvalAsk(alice, { requestedBy: ['alice@example.com'] })).toEqual({
      reason:
        'Waits for an approver other than alice@example.com (four eyes: whoever sent the request may not approve its calls).',
      descriptor: { decide: [], rule: 'four_eyes' },
    });
    expect(approvalAsk(dave, { requestedBy: ['dave@example.com'] })).toMatchObject({
      reason: expect.stringContaining('dave@example.com may reject it'),
      descriptor: { decide: ['reject'], rule: 'four_eyes' },
    });
    expect(approvalAsk(alice, { requestedBy: ['carol@example.com'] }).descriptor).toEqual({ decide: [], rule: 'role' });
    expect(approvalAsk(bob, { requestedBy: ['alice@example.com'] })).toEqual({
      descriptor: { decide: ['approve', 'reject'] },
    });
    expect(approvalAsk({ ...dave, allowSelfApproval: true }, { requestedBy: ['dave@example.com'] }).descriptor).toEqual(
      {
        decide: ['approve', 'reject'],
      },
    );
    const below = { agentPath: ['desk', 'refunder'], conversationId: 'c~refunder~1-0' };
    expect(approvalAsk(bob, { requestedBy: [], below }).descriptor).toEqual({
      decide: ['approve', 'reject'],
      ...below,
    });
  });

  it('reads the decision on a call that waited from how it settled: denied, a timeout denied with why, run or running approved', () => {
    expect(decisionOf({ kind: 'denied', reason: 'no' }, false)).toEqual({
      decided: { approved: false, reason: 'no' },
      output: { kind: 'denied', reason: 'no' },
    });
    expect(decisionOf({ kind: 'error', text: 'approval_timeout: nobody decided' }, false)).toEqual({
      decided: { approved: false, reason: 'approval_timeout: nobody decided' },
      output: { kind: 'denied', reason: 'approval_timeout: nobody decided' },
    });
    expect(decisionOf({ kind: 'available', value: 1 }, false)?.decided).toEqual({ approved: true });
    expect(decisionOf(undefined, true)).toEqual({ decided: { approved: true } });
    expect(decisionOf(undefined, false)).toBeUndefined();
  });

  it("streams someone else's decision as ai 7's approval response before the output; each message validates", async () => {
    const chunks: UiChunk[] = [];
    const emitter = new UiStreamEmitter((c) => chunks.push(c));
    const ask = approvalAsk(alice, { requestedBy: ['alice@example.com'] });
    const waiting = await read(sentBy(emitter, chunks, turn([refund({ ask })], { waiting: true })));
    const part = waiting.parts.find((p) => p.type === 'dynamic-tool') as { state: string; approval: unknown };
    expect(part).toMatchObject({
      state: 'approval-requested',
      approval: { id: 'c/msg-2/call-0', requestReason: ask.reason, descriptor: { decide: [] } },
    });
    // The reader may not decide: nothing for the AI SDK to send automatically.
    expect(lastAssistantMessageIsCompleteWithApprovalResponses({ messages: [waiting] })).toBe(false);

    const rest = new UiStreamEmitter((c) => chunks.push(c));
    rest.baseline(projectTurn(turn([refund({ ask })])));
    const denied = sentBy(
      rest,
      chunks,
      turn([refund({ ask, decided: { approved: false, reason: 'no' }, output: { kind: 'denied', reason: 'no' } })]),
    );
    expect(denied.map((c) => c.type)).toEqual(['tool-approval-response', 'tool-output-denied', 'finish-step']);
    const after = await read(denied, waiting);
    expect(after.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({
      state: 'output-denied',
      approval: { approved: false, reason: 'no' },
    });
    for (const message of [waiting, after]) expect(await validateUIMessages({ messages: [message] })).toBeTruthy();

    const approved = new UiStreamEmitter((c) => chunks.push(c));
    approved.baseline(projectTurn(turn([refund({ ask })])));
    const ran = await read(
      sentBy(
        approved,
        chunks,
        turn([refund({ ask, decided: { approved: true }, output: { kind: 'available', value: { ok: true } } })]),
      ),
      waiting,
    );
    expect(ran.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({
      state: 'output-available',
      approval: { approved: true },
    });
    expect(await validateUIMessages({ messages: [ran] })).toBeTruthy();
  });

  it('shows a call waiting below as a part of the step that runs its agent, titled with the agents that ask', async () => {
    const chunks: UiChunk[] = [];
    const emitter = new UiStreamEmitter((c) => chunks.push(c));
    const agentCall = refund({ callKey: 'c/msg-2/call-0', name: 'ask_refunder', approvalRequested: false });
    const below = refund({
      callKey: 'c~refunder~1-0/msg-2/call-0',
      title: 'desk › refunder',
      toolMetadata: { agentPath: ['desk', 'refunder'], conversationId: 'c~refunder~1-0' },
      ask: approvalAsk(bob, { requestedBy: ['alice@example.com'] }),
    });
    const message = await read(sentBy(emitter, chunks, turn([agentCall], { waiting: true }, [below])));
    const parts = message.parts.filter((p) => p.type === 'dynamic-tool');
    expect(parts).toMatchObject([
      { toolName: 'ask_refunder', state: 'input-available' },
      {
        toolName: 'issue_refund',
        title: 'desk › refunder',
        state: 'approval-requested',
        approval: { id: 'c~refunder~1-0/msg-2/call-0' },
      },
    ]);
    expect(await validateUIMessages({ messages: [message] })).toBeTruthy();
  });

  it('holds a wait the reader cannot end, with keep-alives, and ends it after the hold saying others decide', () => {
    let now = 1_000_000;
    const realNow = Date.now;
    Date.now = () => now;
    try {
      let pings = 0;
      const hold = holdsFor(60_000, () => pings++)!;
      const waiting = turn([refund()], { waiting: true });
      expect(hold.shape(waiting, true)).toBe(waiting); // the reader may decide: the response ends
      expect(hold.shape(waiting, false).end).toBeUndefined();
      expect(hold.holding).toBe(true);
      now += KEEP_ALIVE_MS;
      hold.shape(waiting, false);
      expect(pings).toBe(1);
      now += 60_000;
      expect(hold.shape(waiting, false).end).toEqual({ waiting: true, others: true });
      expect(projectTurn(hold.shape(waiting, false)).at(-1)).toMatchObject({
        chunk: { type: 'finish', messageMetadata: { outcome: 'awaiting_approval', awaitingOthers: true } },
      });
      expect(holdsFor(0, () => undefined)).toBeUndefined();
    } finally {
      Date.now = realNow;
    }
  });
});
