import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  readUIMessageStream,
  validateUIMessages,
  type UIMessage,
} from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { startHarness, type Harness } from '../support/harness';
import { streamedMessage } from '../support/ui-messages';

// The chat endpoint with the real AI SDK client (ai 7): DefaultChatTransport
// sends, readUIMessageStream reads the UI message stream, validateUIMessages
// accepts what it built (as a server does when a chat is reloaded); nothing
// hand-parsed.

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  h = await startHarness({ textDeltaChars: 2, decisionTrust: { keys: [TEST_DECISION_KEY] } });
  api = await startApiServer({
    client: h.client,
    tokens: TEST_TOKENS,
    decisions: { signingKey: TEST_DECISION_KEY },
    // The requester's response ends at the approval request (no hold for the decision: chat-approvals-page.test.ts).
    chat: { replayEndedTurnMs: 1_000, holdForDecisionMs: 0 },
  });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

/** The transport as the docs wire it: the bearer token in its headers, only the last message sent. */
const transportOf = (who: string) =>
  new DefaultChatTransport<UIMessage>({
    api: `${api.url}/v1/chat`,
    headers: { authorization: `Bearer ${who}` },
    prepareSendMessagesRequest: ({ id, messages }) => ({ body: { id, messages: messages.slice(-1) } }),
  });

/** Sends `messages` as `who` and reads the response into the message it continues (the last, when an answer). */
async function send(who: string, chatId: string, messages: UIMessage[]): Promise<UIMessage> {
  const stream = await transportOf(who).sendMessages({
    chatId,
    messages,
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
  });
  return streamedMessage(stream, messages);
}

const userMessage = (id: string, text: string): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] });
type ToolPart = {
  type: string;
  toolCallId: string;
  toolName: string;
  state: string;
  input?: unknown;
  output?: unknown;
  errorText?: string;
  approval?: { id: string; approved?: boolean; reason?: string };
};
const toolParts = (m: UIMessage) => m.parts.filter((p) => p.type === 'dynamic-tool') as unknown as ToolPart[];
const texts = (m: UIMessage) => m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : []));
/** The person's answer on the waiting calls, as addToolApprovalResponse leaves it. */
function respond(m: UIMessage, approved: boolean): UIMessage {
  const answered = structuredClone(m);
  for (const p of toolParts(answered))
    if (p.state === 'approval-requested')
      Object.assign(p, { state: 'approval-responded', approval: { ...p.approval, approved } });
  return answered;
}

describe('the chat endpoint with the AI SDK', () => {
  it('streams a turn with a call that waits: the approval request ends the response; an approver approves through the chat and reads the answer', async () => {
    const id = h.newConversationId('ai-chat');
    h.model.enqueue(
      {
        content: 'Looking it up.',
        toolCalls: [
          { id: 'call_find', name: 'find_customer', arguments: { query: 'ada@example.com' } },
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'late' },
          },
        ],
      },
      { content: 'Refunded 120.00 on ord_2001.' },
    );
    const user = userMessage('ui-msg-1', 'Refund 120.00 on ord_2001 for ada@example.com');
    const first = await send(token('a'), id, [user]);
    expect(first.id).toMatch(/^turn-\d+$/);
    expect(first.parts.map((p) => p.type)).toEqual(['step-start', 'text', 'dynamic-tool', 'dynamic-tool']);
    expect(texts(first)).toEqual(['Looking it up.']);
    const [find, refund] = toolParts(first);
    expect(find).toMatchObject({
      toolName: 'find_customer',
      state: 'output-available',
      input: { query: 'ada@example.com' },
    });
    expect(refund).toMatchObject({
      toolName: 'issue_refund',
      state: 'approval-requested',
      input: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'late' },
    });
    const [pending] = (await h.client.state(id)).pendingApprovals;
    expect(refund.approval?.id).toBe(pending.callKey); // the approval names the call instance
    const approved = respond(first, true);
    expect(lastAssistantMessageIsCompleteWithApprovalResponses({ messages: [user, approved] })).toBe(true);

    const answer = await send(token('b'), id, [user, approved]);
    expect(answer.id).toBe(first.id); // the same answer, continued
    expect(toolParts(answer)[1]).toMatchObject({
      state: 'output-available',
      output: expect.objectContaining({ order_id: 'ord_2001' }),
    });
    expect(texts(answer)).toEqual(['Looking it up.', 'Refunded 120.00 on ord_2001.']);
    expect(answer.parts.filter((p) => p.type === 'step-start')).toHaveLength(2);
    // Every message the stream built, the approval request and the answered one too, is a valid ai 7 UI message.
    for (const messages of [
      [user, first],
      [user, approved],
      [user, answer],
    ])
      expect(await validateUIMessages({ messages })).toEqual(messages);
    const records = await h.pool.query(
      'SELECT decided_by, authenticated FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [id],
    );
    expect(records.rows).toEqual([{ decided_by: 'bob@example.com', authenticated: true }]);
    h.expectOnlyValidModelRequests();
  });

  it('a requester approving their own call is told who may decide, and the call still waits; a rejection shows as denied', async () => {
    const id = h.newConversationId('ai-chat-own');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2002', amount_cents: 50_000, reason: 'damaged' },
          },
        ],
      },
      { content: 'I did not refund it.' },
    );
    const user = userMessage('ui-msg-2', 'Refund 500.00 on ord_2002');
    const first = await send(token('d'), id, [user]);
    const own = await send(token('d'), id, [user, respond(first, true)]);
    expect(texts(own).join(' ')).toMatch(
      /dave@example.com sent the request that asked for .*four eyes.*Ask another approver\. The call still waits\./,
    );
    expect((await h.client.state(id)).pendingApprovals).toHaveLength(1);
    // Asked for again, naming the rule: nothing is left for the AI SDK to send automatically.
    expect(toolParts(own)[0]).toMatchObject({
      state: 'approval-requested',
      approval: { requestReason: expect.stringContaining('four eyes'), descriptor: { decide: ['reject'] } },
    });
    expect(lastAssistantMessageIsCompleteWithApprovalResponses({ messages: [user, own] })).toBe(false);
    const denied = await send(token('d'), id, [user, respond(first, false)]); // rejecting one's own is allowed
    expect(toolParts(denied)[0].state).toBe('output-denied');
    expect(texts(denied)).toContain('I did not refund it.');
  });

  it('an answer sent again (as the automatic send does while its call shows no outcome) is taken once: no second decision, no note, no error; another answer on the decided call is refused in the text', async () => {
    const id = h.newConversationId('ai-chat-again');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 11_000, reason: 'late' },
          },
        ],
      },
      { content: 'Refunded 110.00 on ord_1001.' },
    );
    const user = userMessage('ui-msg-again', 'Refund 110.00 on ord_1001');
    const first = await send(token('a'), id, [user]);
    const approved = respond(first, true);
    expect(texts(await send(token('b'), id, [user, approved]))).toEqual(['Refunded 110.00 on ord_1001.']);
    const decisions = async () =>
      (
        await h.pool.query(
          'SELECT decision, decided_by FROM durable_agent.approval_decisions WHERE conversation_id = $1',
          [id],
        )
      ).rows;
    expect(await decisions()).toEqual([{ decision: 'approve', decided_by: 'bob@example.com' }]);

    const again = await send(token('b'), id, [user, approved]);
    expect(again.id).toBe(first.id);
    expect(texts(again)).toEqual(['Refunded 110.00 on ord_1001.']); // what became of the call, and no note
    expect(toolParts(again)[0]).toMatchObject({ state: 'output-available', approval: { approved: true } });
    expect(lastAssistantMessageIsCompleteWithApprovalResponses({ messages: [user, again] })).toBe(false);
    expect(await validateUIMessages({ messages: [user, again] })).toEqual([user, again]);
    expect(await decisions()).toHaveLength(1);
    const state = await h.client.state(id);
    expect(state.refusedDecisions).toEqual([]);
    expect(state.decisionsApplied).toBe(1);

    const rejected = await send(token('b'), id, [user, respond(first, false)]);
    const said = texts(rejected).join(' ');
    expect(said).toMatch(/Nothing was decided: call .* is not waiting for approval .*decided already/);
    expect(said).not.toMatch(/still waits/);
    expect(toolParts(rejected)[0]).toMatchObject({ state: 'output-available', approval: { approved: true } });
    expect(await decisions()).toHaveLength(1);
  });

  it('refuses what it cannot take with a clear error, before any stream: no token, a regenerate of no conversation, an answer without approvals, a message without text', async () => {
    const id = h.newConversationId('ai-chat-bad');
    await expect(send(token('z'), id, [userMessage('u', 'hi')])).rejects.toThrow(/The token is not valid/);
    const regenerate = await fetch(`${api.url}/v1/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token('a')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id, messages: [userMessage('u', 'hi')], trigger: 'regenerate-message' }),
    });
    expect(regenerate.status).toBe(404); // a chat that has not started has no answer to regenerate
    expect(await regenerate.text()).toMatch(/No such conversation/);
    await expect(
      send(token('b'), id, [{ id: 'x', role: 'assistant', parts: [{ type: 'text', text: 'hello' }] }]),
    ).rejects.toThrow(/no approval response/);
    await expect(
      send(token('a'), id, [{ id: 'y', role: 'user', parts: [{ type: 'text', text: ' ' }] }]),
    ).rejects.toThrow(/The last message has no text and no file/);
    // A part a user message may not carry is refused by its index and type, never dropped (chat-files.test.ts).
    await expect(send(token('a'), id, [{ id: 'y', role: 'user', parts: [{ type: 'step-start' }] }])).rejects.toThrow(
      /Part 0 of the message is of type \\"step-start\\"/,
    );
  });

  it('GET {api}/{chatId}/stream replays the last turn shortly after it ended, then answers 204', async () => {
    const id = h.newConversationId('ai-chat-idle');
    h.model.enqueue({ content: 'Hi.' });
    await send(token('a'), id, [userMessage('u-idle', 'hello')]);
    const reconnect = () =>
      new DefaultChatTransport({
        api: `${api.url}/v1/chat`,
        headers: { authorization: `Bearer ${token('a')}` },
      }).reconnectToStream({ chatId: id });
    const replay = await reconnect();
    let replayed: UIMessage | undefined;
    for await (const m of readUIMessageStream<UIMessage>({ stream: replay! })) replayed = m;
    expect(texts(replayed!)).toEqual(['Hi.']);
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // past replayEndedTurnMs
    expect(await reconnect()).toBeNull();
  });
});
