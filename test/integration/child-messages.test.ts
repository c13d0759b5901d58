import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { ChildConversationError } from '../../src/client';
import { agent } from '../../src/tools/agents';
import { backofficeTools } from '../../src/demo/tools';
import { apiCaller, TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';

// A message to a child conversation (one that runs an agent called as a tool) is refused before anything is
// signalled, by every way of sending one: the API (409 child_conversation, also POST /v1/chat), the client
// (ChildConversationError) and the CLI (say and chat exit 1), each naming the conversation to write to.

const tools = backofficeTools();
const refunder = agent({
  name: 'refunder',
  instructions: 'REFUNDER: issue refunds.',
  tools: tools.filter((t) => t.name === 'issue_refund'),
});
const checker = agent({
  name: 'checker',
  instructions: 'CHECKER: check orders.',
  tools: [refunder.asTool({ toolName: 'ask_refunder' })],
});
const desk = agent({
  name: 'desk',
  instructions: 'DESK: delegate.',
  tools: [checker.asTool({ toolName: 'ask_checker' })],
});

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let scratch: string;
beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'child-messages-'));
  h = await startHarness({ tools, agents: [desk, checker, refunder], decisionTrust: { keys: [TEST_DECISION_KEY] } });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS, decisions: { signingKey: TEST_DECISION_KEY } });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

const call = apiCaller(() => api.url);
/** The userMessage signals in a conversation's history. */
const userMessageSignals = async (id: string) =>
  (await h.temporal.workflow.getHandle(id).fetchHistory()).events!.filter(
    (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'userMessage',
  ).length;
/** A failed CLI run's exit code and output (the run must fail). */
const failedCli = async (args: string[], env: Record<string, string>, input?: string) => {
  const failed = (await runCli(args, env, input).then(
    (ran) => ({ code: 0, ...ran }),
    (err: { code: number; stdout: string; stderr: string }) => err,
  )) as { code: number; stdout: string; stderr: string };
  return failed;
};

describe('a message to a child conversation', () => {
  it('is refused by the API, the chat endpoint, the client and the CLI, naming where to write; nothing reaches it', async () => {
    const id = h.newConversationId('child-msg');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_check', name: 'ask_checker', arguments: { input: 'CHM-1 check ord_2001' } }] },
      { toolCalls: [{ id: 'call_ask', name: 'ask_refunder', arguments: { input: 'CHM-1 refund $150 on ord_2001' } }] },
      {
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 15_000, reason: 'late' },
          },
        ],
      },
      { content: 'CHM-1 the refund was rejected.' },
      { content: 'CHM-1 the refunder did not refund.' },
      { content: 'CHM-1 no refund.' },
    );
    const messageId = await h.client.sendMessage(id, 'CHM-1 refund ord_2001', { input: { agent: 'desk' } });
    const child = `${id}~checker~1-0`;
    const grandchild = `${child}~refunder~1-0`;
    // The grandchild runs and waits for a decision: a signal would reach a running workflow.
    await expect
      .poll(async () => (await h.client.state(grandchild).catch(() => undefined))?.pendingApprovals.length ?? 0, {
        timeout: 20_000,
      })
      .toBe(1);
    const transcriptBefore = await h.client.transcript(grandchild);
    const childTranscriptBefore = await h.client.transcript(child);

    // The API: 409 with its code, naming the caller and the top-level conversation.
    const sent = await call('POST', `/v1/conversations/${encodeURIComponent(grandchild)}/messages`, token('a'), {
      text: 'CHM-1 a message for the refunder',
    });
    expect(sent.status).toBe(409);
    expect(sent.json.error.code).toBe('child_conversation');
    expect(sent.json.error.message).toContain(`called as a tool by conversation ${child}`);
    expect(sent.json.error.message).toContain(`Send your message to the top-level conversation ${id}`);
    const one = await call('POST', `/v1/conversations/${encodeURIComponent(child)}/messages`, token('a'), {
      text: 'CHM-1 a message for the checker',
    });
    expect(one.status).toBe(409);
    expect(one.json.error).toEqual({
      code: 'child_conversation',
      message: `Conversation ${child} runs an agent called as a tool by conversation ${id} and answers only that task; it takes no messages. Send your message to the top-level conversation ${id}. Nothing was sent.`,
    });
    // The chat endpoint (the AI SDK's transport): the same refusal, before any stream starts.
    const chat = await call('POST', '/v1/chat', token('a'), {
      id: grandchild,
      messages: [{ id: 'chm-chat-1', role: 'user', parts: [{ type: 'text', text: 'CHM-1 from the chat' }] }],
      trigger: 'submit-message',
    });
    expect(chat.status).toBe(409);
    expect(chat.json.error.code).toBe('child_conversation');

    // The client: a typed error with where to write.
    const refused = await h.client.sendMessage(grandchild, 'CHM-1 from the client').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ChildConversationError);
    expect(refused).toMatchObject({
      conversationId: grandchild,
      parentConversationId: child,
      rootConversationId: id,
    });
    await expect(h.client.ask(child, 'CHM-1 ask the checker')).rejects.toThrow(ChildConversationError);

    // The CLI, straight to Temporal and through the API: exit 1 with the message.
    const direct = {
      TEMPORAL_ADDRESS: h.temporalAddress,
      DATABASE_URL: h.databaseUrl,
      TEMPORAL_TASK_QUEUE: h.taskQueue,
      AGENT_DATA_DIR: scratch,
    };
    const said = await failedCli(['say', grandchild, 'CHM-1', 'from', 'say'], direct);
    expect(said.code).toBe(1);
    expect(said.stderr).toContain(`Send your message to the top-level conversation ${id}`);
    const remote = { AGENT_API_URL: api.url, AGENT_API_TOKEN: token('a'), AGENT_DATA_DIR: scratch };
    const saidRemote = await failedCli(['say', child, 'CHM-1 through the API'], remote);
    expect(saidRemote.code).toBe(1);
    expect(saidRemote.stderr).toContain('(child_conversation)');
    const chatted = await failedCli(['chat', child], direct, 'CHM-1 a line\nanother line\n');
    expect(chatted.code).toBe(1);
    expect(chatted.stderr).toContain(`Send your message to the top-level conversation ${id}`);
    expect(chatted.stdout).not.toContain('Bye.');
    const chattedRemote = await failedCli(['chat', grandchild], remote, 'CHM-1 a line\n');
    expect(chattedRemote.code).toBe(1);
    expect(chattedRemote.stderr).toContain('(child_conversation)');

    // Nothing reached either child: no userMessage signal in its history, its transcript as it was, no lastError.
    expect(await userMessageSignals(grandchild)).toBe(0);
    expect(await userMessageSignals(child)).toBe(0);
    expect(await h.client.transcript(grandchild)).toEqual(transcriptBefore);
    expect(await h.client.transcript(child)).toEqual(childTranscriptBefore);
    expect((await h.client.state(grandchild)).lastError).toBeUndefined();

    // The top-level conversation still takes messages, and the tree finishes as it would have.
    const rejected = await call('POST', `/v1/conversations/${encodeURIComponent(grandchild)}/decisions`, token('b'), {
      decision: 'reject',
      toolCallIds: ['call_refund'],
      reason: 'not now',
    });
    expect(rejected.status).toBe(200);
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    // An ended child is still a child: the refusal says where to write, not that it ended.
    expect((await h.temporal.workflow.getHandle(grandchild).describe()).status.name).toBe('COMPLETED');
    const late = await call('POST', `/v1/conversations/${encodeURIComponent(grandchild)}/messages`, token('a'), {
      text: 'CHM-1 too late',
    });
    expect(late).toMatchObject({ status: 409, json: { error: { code: 'child_conversation' } } });
    h.model.enqueue({ content: 'CHM-1 a second answer.' });
    const again = await call('POST', `/v1/conversations/${encodeURIComponent(id)}/messages`, token('a'), {
      text: 'CHM-1 and now?',
    });
    expect(again.status).toBe(202);
    expect((await h.client.waitForTurn(id, again.json.messageId)).outcome).toBe('answered');
  });

  it('a top-level conversation whose id has "~" is not a child: it takes messages', async () => {
    const id = h.newConversationId('tilde~like~1-0');
    h.model.enqueue({ content: 'CHM-2 answered.' });
    const { turn } = await h.client.ask(id, 'CHM-2 hello', { input: { agent: 'desk' } });
    expect(turn.outcome).toBe('answered');
  });
});
