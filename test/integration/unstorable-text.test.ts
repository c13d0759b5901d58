import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { UnstorableTextError } from '../../src/common/errors';
import { tool } from '../../src/tools/tool';
import { backofficeTools } from '../../src/demo/tools';
import { cancelTurnSignal, CONVERSATION_WORKFLOW_TYPE, decisionSignal, userMessageSignal } from '../../src/contract';
import { exportHistoryFixture } from '../support/fixture-export';
import { expectAnswersNextMessage, startHarness, type Harness } from '../support/harness';
import { startHttpMcpServer, type HttpMcpServer } from '../support/mcp-server';

// Text PostgreSQL cannot store (U+0000, unpaired surrogates) at every place it
// enters a conversation. From people it is refused before anything changes;
// from tools, models and MCP servers it is stored with U+FFFD in its place.
// Either way the conversation answers the next message.

const NUL = '\u0000';
const FFFD = '\uFFFD';

const binaryReader = tool({
  name: 'read_label',
  description: 'Reads a label as text (it may hold binary bytes).',
  parameters: z.object({ label: z.string() }),
  async execute({ label }) {
    return `label ${label}:${NUL}bytes\ud800end`;
  },
});

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'unstorable-'));
let h: Harness;
let crm: HttpMcpServer;
beforeAll(async () => {
  crm = await startHttpMcpServer({ name: 'crm', logFile: path.join(dir, 'calls.jsonl'), echo: true });
  h = await startHarness({
    tools: [...backofficeTools(), binaryReader],
    mcpServers: { crm: { url: crm.url, headers: { Authorization: `Bearer ${crm.token}` } } },
  });
});
afterAll(async () => {
  await h?.stop();
  await crm?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

type Stored = {
  role: string;
  content?: string | null;
  reasoning_content?: string;
  tool_calls?: { function: { arguments: string } }[];
};
const transcript = async (id: string) => (await h.client.transcript(id)).map((m) => m.message as Stored);

describe('text PostgreSQL cannot store, from people', () => {
  it('the client refuses a message holding U+0000, naming the character and its offset, and sends nothing', async () => {
    const id = h.newConversationId('client-nul');
    await expect(h.client.sendMessage(id, `hello${NUL}world`)).rejects.toThrow(UnstorableTextError);
    await expect(h.client.sendMessage(id, `hello${NUL}world`)).rejects.toThrow(
      '"text" contains U+0000 (NUL) at offset 5 (UTF-16 code units from 0), which cannot be stored; remove it',
    );
    await expect(h.temporal.workflow.getHandle(id).describe()).rejects.toThrow(/not found/i);
    await expect(h.client.sendMessage(id, 'a lone \udc01 surrogate')).rejects.toThrow(
      '"text" contains U+DC01 (an unpaired low surrogate) at offset 7',
    );
    await expectAnswersNextMessage(h, id);
  });

  it('a raw userMessage signal holding U+0000 changes nothing but lastError, and the conversation answers the next message', async () => {
    const id = h.newConversationId('raw-nul');
    await h.temporal.workflow.signalWithStart(CONVERSATION_WORKFLOW_TYPE, {
      workflowId: id,
      taskQueue: h.taskQueue,
      args: [{}],
      signal: userMessageSignal,
      signalArgs: [{ text: `hello${NUL}world`, messageId: 'raw-1' }],
    });
    await expect
      .poll(async () => (await h.client.state(id)).lastError, { timeout: 10_000 })
      .toBe(
        'Ignored a userMessage signal: "text" contains U+0000 (NUL) at offset 5 (UTF-16 code units from 0), which cannot be stored; ' +
          'remove it (NUL characters and unpaired surrogates U+D800-U+DFFF are refused)',
      );
    const state = await h.client.state(id);
    expect(state.messageCount).toBe(0);
    expect(state.status).toBe('idle');
    await expectAnswersNextMessage(h, id);
    expect((await transcript(id)).map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('a raw decision whose reason holds U+0000 and a raw cancel with one are refused; the call still waits and a clean decision applies', async () => {
    const id = h.newConversationId('raw-decision');
    h.model.enqueue({
      toolCalls: [
        {
          id: 'call_big',
          name: 'issue_refund',
          arguments: { order_id: 'ord_2001', amount_cents: 15000, reason: 'late' },
        },
      ],
    });
    await h.client.sendMessage(id, 'refund 150 on ord_2001');
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 15_000 }).toBe(1);
    const handle = h.temporal.workflow.getHandle(id);
    await handle.signal(decisionSignal, {
      decisionId: 'd-nul',
      decision: 'reject',
      toolCallId: 'call_big',
      reason: `too${NUL}much`,
    });
    await expect
      .poll(async () => (await h.client.state(id)).refusedDecisions.map((r) => r.decisionId), { timeout: 10_000 })
      .toEqual(['d-nul']);
    expect((await h.client.state(id)).refusedDecisions[0].problem).toContain(
      '"reason" contains U+0000 (NUL) at offset 3',
    );
    await handle.signal(cancelTurnSignal, { reason: `stop${NUL}` });
    await expect
      .poll(async () => (await h.client.state(id)).lastError, { timeout: 10_000 })
      .toContain('Ignored a cancelTurn signal: "reason" contains U+0000 (NUL) at offset 4');
    const state = await h.client.state(id);
    expect(state.status).toBe('awaiting_approval');
    expect(state.pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_big']);
    await expect(
      h.client.decide(id, { decision: 'reject', toolCallId: 'call_big', reason: `no${NUL}` }),
    ).rejects.toThrow(UnstorableTextError);
    h.model.enqueue({ content: 'The refund was not made.' });
    await h.client.decide(id, { decision: 'reject', toolCallId: 'call_big', reason: 'too much' });
    await expect.poll(async () => (await h.client.state(id)).recentTurns.length, { timeout: 15_000 }).toBe(1);
    expect((await h.client.state(id)).recentTurns[0].outcome).toBe('answered');
    const decisions = await h.pool.query(
      'SELECT decision_id, reason FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [id],
    );
    expect(decisions.rows).toEqual([{ decision_id: expect.any(String), reason: 'too much' }]);
    await expectAnswersNextMessage(h, id);
    h.expectOnlyValidModelRequests();
    await h.client.end(id);
    await h.temporal.workflow.getHandle(id).result();
    await exportHistoryFixture(h.temporal, id, 'unstorable-signals-refused');
  });
});

describe('text PostgreSQL cannot store, from tools, models and MCP servers', () => {
  it('a tool result holding U+0000 and an unpaired surrogate is stored with U+FFFD, the model reads it, and the turn answers', async () => {
    const id = h.newConversationId('tool-nul');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_label', name: 'read_label', arguments: { label: 'box 7' } }] },
      { content: 'The label is read.' },
    );
    const { turn, answer } = await h.client.ask(id, 'read the label of box 7');
    expect(turn.outcome).toBe('answered');
    expect(answer).toBe('The label is read.');
    const result = (await transcript(id)).find((m) => m.role === 'tool');
    expect(result?.content).toBe(`label box 7:${FFFD}bytes${FFFD}end`);
    const second = h.requestsFor('read the label of box 7')[1] as { messages: Stored[] };
    expect(second.messages.find((m) => m.role === 'tool')?.content).toBe(`label box 7:${FFFD}bytes${FFFD}end`);
    await expectAnswersNextMessage(h, id);
    h.expectOnlyValidModelRequests();
  });

  for (const stream of [false, true]) {
    it(`a model answer ${stream ? 'streamed' : 'not streamed'} with U+0000 in its text, its reasoning and its tool call's arguments is stored with U+FFFD, and the conversation goes on`, async () => {
      const id = h.newConversationId(stream ? 'model-stream' : 'model-plain');
      h.model.enqueue(
        // Arguments sent verbatim: a raw NUL inside the JSON text, which only parses once it is replaced.
        {
          toolCalls: [{ id: 'call_find', name: 'find_customer', arguments: `{"query":"Ada${NUL}"}` }],
          reasoningContent: `think${NUL}ing`,
        },
        { content: `Ada${NUL}is ${'\ud800'}here`, reasoningContent: `done${NUL}` },
      );
      const ask = `find Ada (${id})`;
      const { turn, answer } = await h.client.ask(id, ask, { input: { model: { stream } } });
      expect(turn.outcome).toBe('answered');
      expect(answer).toBe(`Ada${FFFD}is ${FFFD}here`);
      const stored = await transcript(id);
      const [asked, answered] = stored.filter((m) => m.role === 'assistant');
      expect(asked.tool_calls?.[0].function.arguments).toBe(`{"query":"Ada${FFFD}"}`);
      expect(asked.reasoning_content).toBe(`think${FFFD}ing`);
      // A final answer's reasoning is not kept (only a tool-calling message's travels back to the provider).
      expect(answered.reasoning_content).toBeUndefined();
      // The sanitized arguments parse, so the tool ran with them.
      expect(JSON.parse(stored.find((m) => m.role === 'tool')?.content ?? '')).toEqual({ customers: [] });
      expect(h.requestsFor(ask).map((r) => Boolean(r.stream))).toEqual([stream, stream]);
      await expectAnswersNextMessage(h, id);
      h.expectOnlyValidModelRequests();
    });
  }

  it("an MCP server's result holding U+0000 is stored with U+FFFD and the turn answers", async () => {
    const id = h.newConversationId('mcp-nul');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_echo', name: 'crm__echo_text', arguments: { text: `raw${NUL}bytes` } }] },
      { content: 'Echoed.' },
    );
    const { turn } = await h.client.ask(id, 'echo raw bytes', { input: { mcpServers: ['crm'] } });
    expect(turn.outcome).toBe('answered');
    const result = (await transcript(id)).find((m) => m.role === 'tool');
    expect(result?.content).toBe(`echo: raw${FFFD}bytes`);
    await expectAnswersNextMessage(h, id);
    h.expectOnlyValidModelRequests();
  });
});
