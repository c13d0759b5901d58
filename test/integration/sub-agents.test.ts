import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { startApiServer } from '../../src/api/server';
import { AgentClient, type WaitingCall } from '../../src/client/client';
import { agent } from '../../src/tools/agents';
import { backofficeTools } from '../../src/demo/tools';
import type { ChatMessage } from '../../src/contract/messages';
import { apiCaller, TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';

// Agents called as tools on the real stack: the call runs the agent in a child
// workflow (a conversation of its own) and its final answer is the result.

const tools = backofficeTools();
const named = (...names: string[]) => tools.filter((t) => names.includes(t.name));
const refunder = agent({
  name: 'refunder',
  instructions: 'REFUNDER: issue refunds.',
  handoffDescription: 'Issues one refund.',
  tools: named('issue_refund'),
});
const checker = agent({
  name: 'checker',
  instructions: 'CHECKER: check orders.',
  tools: ['list_orders', refunder.asTool({ toolName: 'ask_refunder' })],
});
const desk = agent({
  name: 'desk',
  instructions: 'DESK: delegate.',
  tools: [
    'find_customer',
    refunder.asTool({ toolName: 'ask_refunder' }),
    refunder.asTool({ toolName: 'ask_refunder_quickly', timeoutMs: 3_000 }),
    checker.asTool({ toolName: 'ask_checker', toolDescription: 'Checks an order.' }),
  ],
});

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let browser: Browser | undefined;
let scratch: string;
beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sub-agents-'));
  h = await startHarness({
    tools,
    agents: [desk, refunder, checker],
    inlineResultLimit: 200,
    decisionTrust: { keys: [TEST_DECISION_KEY] },
  });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS, decisions: { signingKey: TEST_DECISION_KEY } });
});
afterAll(async () => {
  await browser?.close();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  await api?.stop();
  await h?.stop();
});

const call = apiCaller(() => api.url);
type WireBody = {
  messages: { role: string; content: unknown }[];
  tools?: { function: { name: string; parameters: unknown } }[];
};
const body = (request: Record<string, unknown>) => request as unknown as WireBody;
const messagesOf = async (id: string): Promise<ChatMessage[]> => (await h.client.transcript(id)).map((m) => m.message);
const resultOf = async (id: string, toolCallId: string) =>
  (await messagesOf(id)).find(
    (m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool' && m.tool_call_id === toolCallId,
  )?.content;
const refundedCents = async (order: string) =>
  Number(
    (await h.pool.query<{ refunded_cents: number }>('SELECT refunded_cents FROM public.orders WHERE id = $1', [order]))
      .rows[0].refunded_cents,
  );
/** The child conversation the parent's call at `seq`/`index` started. */
const childOf = (parent: string, agentName: string, seq: number, index = 0) => `${parent}~${agentName}~${seq}-${index}`;
/** The tool-call ids waiting in the child conversation `id`, once one waits (the child may not have started yet). */
const callsWaitingIn = async (id: string): Promise<string[]> => {
  await expect
    .poll(async () => (await h.client.state(id).catch(() => undefined))?.pendingApprovals.length ?? 0, {
      timeout: 20_000,
    })
    .toBeGreaterThan(0);
  return (await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId);
};
const statusOf = async (id: string) => (await h.temporal.workflow.getHandle(id).describe()).status.name;

describe('agents as tools', () => {
  it("runs the agent in a child workflow with its own transcript; its whole answer is the call's result", async () => {
    const id = h.newConversationId('sub-answer');
    const longAnswer = `SUB-1 order ord_1001 is fine. ${'All checks pass. '.repeat(40)}`;
    h.model.enqueue(
      { toolCalls: [{ id: 'call_check', name: 'ask_checker', arguments: { input: 'SUB-1 check ord_1001' } }] },
      { toolCalls: [{ id: 'call_orders', name: 'list_orders', arguments: { customer_id: 'cus_ada' } }] },
      { content: longAnswer },
      { content: 'The checker says it is fine.' },
    );
    const { turn, answer } = await h.client.ask(id, 'SUB-1 please check ord_1001', {
      input: { agent: 'desk' },
      sentBy: 'alice',
    });
    expect(turn).toMatchObject({ outcome: 'answered', steps: 2 });
    expect(answer).toBe('The checker says it is fine.');

    const requests = h.requestsFor('SUB-1');
    expect(requests.map((r) => body(r).messages[0].content)).toEqual([
      'DESK: delegate.',
      'CHECKER: check orders.',
      'CHECKER: check orders.',
      'DESK: delegate.',
    ]);
    const deskTools = body(requests[0]).tools!;
    expect(deskTools.map((t) => t.function.name)).toEqual([
      'find_customer',
      'ask_refunder',
      'ask_refunder_quickly',
      'ask_checker',
    ]);
    expect(deskTools[1].function.parameters).toMatchObject({ required: ['input'], additionalProperties: false });
    // The child's transcript: its task as the user message, its own tool call, its answer named by its agent.
    const child = childOf(id, 'checker', 1);
    const childMessages = await messagesOf(child);
    expect(childMessages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(childMessages[0]).toEqual({ role: 'user', content: 'SUB-1 check ord_1001' });
    expect(childMessages[3]).toMatchObject({ role: 'assistant', content: longAnswer, name: 'checker' });
    // The parent's result is the whole answer, though history carried a preview (the limit is 200 bytes).
    expect(await resultOf(id, 'call_check')).toBe(longAnswer);
    const childState = await h.client.state(child);
    expect(childState).toMatchObject({ agent: 'checker', status: 'closed' });
    expect(childState.calledBy).toEqual({
      conversationId: id,
      rootConversationId: id,
      callKey: `${id}/msg-1/call-0`,
      toolName: 'ask_checker',
      path: ['desk', 'checker'],
      requestedBy: ['alice'],
      task: 'SUB-1 check ord_1001',
      callerAgent: 'desk',
      rootTurn: 1,
    });
    const described = await h.temporal.workflow.getHandle(child).describe();
    expect(described.parentExecution?.workflowId).toBe(id);
    expect(described.status.name).toBe('COMPLETED');
    // Operators see the child in the parent's history with what it is for.
    const { events } = await h.temporal.workflow.getHandle(id).fetchHistory();
    const started = (events ?? []).find((e) => e.startChildWorkflowExecutionInitiatedEventAttributes);
    expect(started?.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId).toBe(child);
    expect(defaultPayloadConverter.fromPayload<string>(started!.userMetadata!.summary!)).toBe(
      'checker agent for ask_checker, call 1 of turn 1',
    );
    h.expectOnlyValidModelRequests();
  });

  it("a child conversation runs with its caller's workflow task timeout (the client's workflowTaskTimeoutMs)", async () => {
    const client = AgentClient.fromClient(h.temporal, {
      taskQueue: h.taskQueue,
      databaseUrl: h.databaseUrl,
      workflowTaskTimeoutMs: 7_000,
    });
    const id = h.newConversationId('sub-task-timeout');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_check', name: 'ask_checker', arguments: { input: 'SUB-TT check ord_1001' } }] },
      { content: 'SUB-TT ord_1001 is fine.' },
      { content: 'Fine.' },
    );
    try {
      const { turn } = await client.ask(id, 'SUB-TT please check ord_1001', { input: { agent: 'desk' } });
      expect(turn).toMatchObject({ outcome: 'answered', steps: 2 });
    } finally {
      await client.close();
    }
    const taskTimeoutOf = async (workflowId: string) =>
      (
        await h.temporal.workflow.getHandle(workflowId).fetchHistory()
      ).events?.[0].workflowExecutionStartedEventAttributes?.workflowTaskTimeout?.seconds?.toString();
    expect(await taskTimeoutOf(id)).toBe('7');
    expect(await taskTimeoutOf(childOf(id, 'checker', 1))).toBe('7');
    h.expectOnlyValidModelRequests();
  });

  it("a call waiting for approval inside the child is approved through the HTTP API by the child's id; four eyes holds against the top-level requester", async () => {
    const id = h.newConversationId('sub-approve');
    const before = await refundedCents('ord_2001');
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_delegate', name: 'ask_refunder', arguments: { input: 'SUB-2 refund $150 on ord_2001' } },
        ],
      },
      {
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 15_000, reason: 'late' },
          },
        ],
      },
      { content: 'SUB-2 refunded 150.00.' },
      { content: 'Done: the refunder refunded it.' },
    );
    const sent = await call('POST', `/v1/conversations/${id}/messages`, token('d'), {
      text: 'SUB-2 refund ord_2001',
      input: { agent: 'desk' },
    });
    expect(sent.status).toBe(202);
    const child = childOf(id, 'refunder', 1);
    expect(await callsWaitingIn(child)).toEqual(['call_refund']);
    expect((await h.client.state(child)).pendingApprovals[0].requestedBy).toEqual(['dave@example.com']);
    // One inbox for every level: the caller waits on the call below it, and every list names the top-level conversation
    // and the agents.
    await expect
      .poll(async () => (await h.client.state(id)).waitingBelow?.map((b) => b.toolCallId), { timeout: 10_000 })
      .toEqual(['call_refund']);
    const parent = await h.client.state(id);
    expect(parent.status).toBe('awaiting_approval');
    expect(parent.pendingApprovals).toEqual([]);
    expect(parent.waitingBelow![0]).toMatchObject({
      conversationId: child,
      agentPath: ['desk', 'refunder'],
      toolName: 'issue_refund',
      requestedBy: ['dave@example.com'],
      callKey: `${child}/msg-1/call-0`,
    });
    const listed = await call('GET', `/v1/approvals?conversationId=${encodeURIComponent(id)}`, token('b'));
    expect(listed.json.approvals).toEqual([
      expect.objectContaining({
        conversationId: child,
        rootConversationId: id,
        agentPath: ['desk', 'refunder'],
        toolCallId: 'call_refund',
      }),
    ]);
    const printed = await runCli(['pending'], {
      AGENT_API_URL: api.url,
      AGENT_API_TOKEN: token('b'),
      AGENT_DATA_DIR: scratch,
    });
    expect(printed.stdout).toContain(`${child}  call_refund  issue_refund(`);
    expect(printed.stdout).toMatch(new RegExp(`asked by dave@example.com  for ${id}  agents desk > refunder  key `));
    const own = await call('POST', `/v1/conversations/${encodeURIComponent(child)}/decisions`, token('d'), {
      decision: 'approve',
      toolCallIds: ['call_refund'],
    });
    expect(own.status).toBe(403); // dave sent the top-level message: he may not approve what it led to
    expect(JSON.stringify(own.json)).toContain('four eyes');
    // The child answers only its task: a message sent to it is refused, saying where to send it (child-messages.test.ts).
    await expect(h.client.sendMessage(child, 'SUB-2 a message for the child')).rejects.toThrow(
      `Send your message to the top-level conversation ${id}`,
    );
    const decided = await call('POST', `/v1/conversations/${encodeURIComponent(child)}/decisions`, token('b'), {
      decision: 'approve',
      toolCallIds: ['call_refund'],
    });
    expect(decided.status).toBe(200);
    const turn = await h.client.waitForTurn(id, sent.json.messageId);
    expect((await h.client.state(id)).waitingBelow).toBeUndefined();
    expect(turn.outcome).toBe('answered');
    expect(await refundedCents('ord_2001')).toBe(before + 15_000);
    expect(await resultOf(id, 'call_delegate')).toBe('SUB-2 refunded 150.00.');
    const records = await h.pool.query(
      'SELECT decided_by, authenticated FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [child],
    );
    expect(records.rows).toEqual([{ decided_by: 'bob@example.com', authenticated: true }]);
    h.expectOnlyValidModelRequests();
  });

  it("a call rejected inside the child: the child's model reads the rejection and its answer is the parent's result", async () => {
    const id = h.newConversationId('sub-reject');
    const before = await refundedCents('ord_2001');
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_delegate', name: 'ask_refunder', arguments: { input: 'SUB-3 refund $140 on ord_2001' } },
        ],
      },
      {
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 14_000, reason: 'late' },
          },
        ],
      },
      { content: 'SUB-3 the refund was rejected by a person.' },
      { content: 'No refund was made.' },
    );
    const messageId = await h.client.sendMessage(id, 'SUB-3 refund ord_2001', { input: { agent: 'desk' } });
    const child = childOf(id, 'refunder', 1);
    expect(await callsWaitingIn(child)).toEqual(['call_refund']);
    const rejected = await call('POST', `/v1/conversations/${encodeURIComponent(child)}/decisions`, token('b'), {
      decision: 'reject',
      toolCallIds: ['call_refund'],
      reason: 'not eligible',
    });
    expect(rejected.status).toBe(200);
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    expect(await refundedCents('ord_2001')).toBe(before);
    expect(JSON.parse((await resultOf(child, 'call_refund'))!)).toMatchObject({
      kind: 'rejected',
      reason: 'not eligible',
    });
    expect(await resultOf(id, 'call_delegate')).toBe('SUB-3 the refund was rejected by a person.');
    h.expectOnlyValidModelRequests();
  });

  it('cancelling the parent turn while the child waits for approval cancels the child; every call of both is answered', async () => {
    const id = h.newConversationId('sub-cancel');
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_delegate', name: 'ask_refunder', arguments: { input: 'SUB-4 refund $130 on ord_2001' } },
          { id: 'call_find', name: 'find_customer', arguments: { query: 'ada' } },
        ],
      },
      {
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 13_000, reason: 'late' },
          },
        ],
      },
    );
    const messageId = await h.client.sendMessage(id, 'SUB-4 refund ord_2001', { input: { agent: 'desk' } });
    const child = childOf(id, 'refunder', 1);
    expect(await callsWaitingIn(child)).toEqual(['call_refund']);
    await h.client.cancelTurn(id, 'changed my mind');
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('cancelled');
    expect(await statusOf(child)).toBe('CANCELLED');
    expect(JSON.parse((await resultOf(child, 'call_refund'))!)).toMatchObject({ kind: 'cancelled' });
    expect(JSON.parse((await resultOf(id, 'call_delegate'))!)).toMatchObject({ kind: 'interrupted' });
    expect(JSON.parse((await resultOf(id, 'call_find'))!)).toHaveProperty('customers');
    // The parent goes on: the next turn is answered.
    h.model.enqueue({ content: 'SUB-4 ok.' });
    expect((await h.client.ask(id, 'SUB-4 never mind')).answer).toBe('SUB-4 ok.');
    h.expectOnlyValidModelRequests();
  });

  it('a child past its timeout settles the call as effect_unknown; one whose turn fails settles it as tool_failed', async () => {
    const id = h.newConversationId('sub-timeout');
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_quick', name: 'ask_refunder_quickly', arguments: { input: 'SUB-5 refund $160 on ord_2001' } },
        ],
      },
      {
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 16_000, reason: 'late' },
          },
        ],
      },
      { content: 'SUB-5 the refunder ran out of time.' },
    );
    expect((await h.client.ask(id, 'SUB-5 refund ord_2001', { input: { agent: 'desk' } })).turn.outcome).toBe(
      'answered',
    );
    expect(JSON.parse((await resultOf(id, 'call_quick'))!)).toMatchObject({
      kind: 'effect_unknown',
      error: expect.stringContaining('ran past its timeout'),
    });
    expect(await statusOf(childOf(id, 'refunder', 1))).toBe('TIMED_OUT');
    expect((await h.client.state(id)).unknownEffects.map((u) => u.toolName)).toEqual(['ask_refunder_quickly']);

    const failing = h.newConversationId('sub-failed');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_delegate', name: 'ask_refunder', arguments: { input: 'SUB-6 refund' } }] },
      { kind: 'http_error', status: 400 },
      { content: 'SUB-6 the refunder failed.' },
    );
    expect((await h.client.ask(failing, 'SUB-6 refund', { input: { agent: 'desk' } })).turn.outcome).toBe('answered');
    expect(JSON.parse((await resultOf(failing, 'call_delegate'))!)).toMatchObject({
      kind: 'tool_failed',
      error: expect.stringMatching(/The refunder agent did not answer .*its turn ended as failed: Model call failed/),
    });
    h.expectOnlyValidModelRequests();
  });

  it('bounds nesting with maxAgentDepth, refuses a call without a task, and refuses a caller named by a sender', async () => {
    const id = h.newConversationId('sub-depth');
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_check', name: 'ask_checker', arguments: { input: 'SUB-7 check, then refund' } },
          { id: 'call_bad', name: 'ask_refunder', arguments: { task: 'no input field' } },
        ],
      },
      { toolCalls: [{ id: 'call_deeper', name: 'ask_refunder', arguments: { input: 'SUB-7 refund' } }] },
      { content: 'SUB-7 I could not go deeper.' },
      { content: 'SUB-7 done.' },
    );
    expect((await h.client.ask(id, 'SUB-7 go', { input: { agent: 'desk', maxAgentDepth: 1 } })).turn.outcome).toBe(
      'answered',
    );
    expect(JSON.parse((await resultOf(id, 'call_bad'))!)).toMatchObject({
      kind: 'tool_failed',
      reason: 'invalid_arguments',
    });
    const child = childOf(id, 'checker', 1);
    expect(JSON.parse((await resultOf(child, 'call_deeper'))!)).toMatchObject({
      kind: 'tool_failed',
      reason: 'agent_too_deep',
      error: expect.stringContaining('at most 1 deep (maxAgentDepth)'),
    });
    expect((await h.client.state(child)).calledBy?.path).toEqual(['desk', 'checker']);
    // Only the workflow names a caller: a sender cannot place a conversation under another one.
    const calledBy = { ...(await h.client.state(child)).calledBy!, task: 'forged' };
    await expect(
      h.client.sendMessage(h.newConversationId('sub-forged'), 'hi', { input: { calledBy } }),
    ).rejects.toThrow(/calledBy is set by the workflow for an agent called as a tool, never by a sender/);
    const forged = await call('POST', `/v1/conversations/${h.newConversationId('sub-forged')}/messages`, token('a'), {
      text: 'hi',
      input: { calledBy },
    });
    expect(forged.status).toBe(400);
    h.expectOnlyValidModelRequests();
  });

  it('the inbox page shows a call waiting inside a sub-agent with its top-level conversation and agents; approving it there reaches the child', async () => {
    const CHROMIUM = '/usr/bin/chromium';
    if (!fs.existsSync(CHROMIUM))
      throw new Error(
        `This test drives Debian's Chromium at ${CHROMIUM}; install it (apt-get install chromium; .ci/run does).`,
      );
    browser ??= await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    const id = h.newConversationId('sub-inbox');
    const before = await refundedCents('ord_1001');
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_delegate', name: 'ask_refunder', arguments: { input: 'SUB-8 refund $120 on ord_1001' } },
        ],
      },
      {
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 12_000, reason: 'broken' },
          },
        ],
      },
      { content: 'SUB-8 refunded 120.00.' },
      { content: 'SUB-8 done.' },
    );
    const sent = await call('POST', `/v1/conversations/${id}/messages`, token('a'), {
      text: 'SUB-8 refund the kettle',
      input: { agent: 'desk' },
    });
    const child = childOf(id, 'refunder', 1);
    await expect
      .poll(async () => (await h.client.waitingCalls()).calls.filter((a) => a.conversationId === child).length, {
        timeout: 20_000,
      })
      .toBe(1);
    const [waiting] = (await h.client.waitingCalls()).calls.filter((a) => a.conversationId === child);
    await expect.poll(async () => (await h.client.state(id)).status, { timeout: 10_000 }).toBe('awaiting_approval');
    // One list in every scope: the top-level conversation's has the call waiting below it, read from PostgreSQL or
    // asked of its
    // worker alike (the age aside: each source measures it at its own time); without the calls below, it has none of
    // its own.
    const sameCall = ({ ageMs: _age, ...rest }: WaitingCall<Date>) => rest;
    expect((await h.client.waitingCalls({ conversationId: id })).calls.map(sameCall)).toEqual([sameCall(waiting)]);
    expect((await h.client.waitingCalls({ conversationId: id, below: false })).calls).toEqual([]);
    const asked = await h.client.waitingCalls({ conversationId: id, workerWaitMs: 10_000 });
    expect(asked.workerAnswered).toBe(true);
    expect(asked.calls.map(sameCall)).toEqual([sameCall(waiting)]);
    const askedChild = await h.client.waitingCalls({ conversationId: child, below: false, workerWaitMs: 10_000 });
    expect(askedChild.calls.map(sameCall)).toEqual([sameCall(waiting)]);

    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${api.url}/inbox`);
      await page.fill('input[name=token]', token('b'));
      await page.click('button:has-text("Sign in")');
      await page.waitForSelector('[data-testid=subject]');
      // The caller's own page lists the call waiting below it.
      await page.goto(`${api.url}/inbox/conversations/${encodeURIComponent(id)}`);
      expect(await page.textContent('[data-testid=status]')).toBe('awaiting approval');
      expect(await page.locator(`[data-call-key="${waiting.callKey}"] [data-testid=agent-path]`).textContent()).toBe(
        'desk › refunder',
      );
      await page.goto(`${api.url}/inbox`);
      const item = page.locator(`section[data-conversation="${child}"] [data-call-key="${waiting.callKey}"]`);
      await item.waitFor();
      expect(await item.locator('[data-testid=requested-by]').textContent()).toBe('alice@example.com');
      expect(await item.locator('[data-testid=agent-path]').textContent()).toBe('desk › refunder');
      expect(await item.locator('[data-testid=root-conversation]').textContent()).toContain(id);
      await item.locator('textarea[name=reason]').fill('kettle photo checked');
      await item.locator('button:has-text("Approve")').click();
      await page.waitForURL(`${api.url}/inbox/conversations/${encodeURIComponent(child)}`);
      expect(await page.textContent('[data-flash]')).toContain('You approved call call_refund');
    } finally {
      await context.close();
    }
    expect((await h.client.waitForTurn(id, sent.json.messageId)).outcome).toBe('answered');
    expect(await refundedCents('ord_1001')).toBe(before + 12_000);
    const records = await h.pool.query(
      'SELECT decided_by, authenticated, reason FROM durable_agent.approval_decisions WHERE conversation_id = $1',
      [child],
    );
    expect(records.rows).toEqual([
      { decided_by: 'bob@example.com', authenticated: true, reason: 'kettle photo checked' },
    ]);
    expect(await resultOf(id, 'call_delegate')).toBe('SUB-8 refunded 120.00.');
    h.expectOnlyValidModelRequests();
  });

  it('continues as new only between turns: a child started in a turn ends before its caller continues as new, never terminated by it', async () => {
    const id = h.newConversationId('sub-can');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_check', name: 'ask_checker', arguments: { input: 'SUB-9 check ord_1001' } }] },
      { content: 'SUB-9 fine.' },
      { content: 'SUB-9 the checker says fine.' },
    );
    await h.client.ask(id, 'SUB-9 check', { input: { agent: 'desk', continueAsNewAfterEvents: 10 } });
    h.model.enqueue({ content: 'SUB-9 second turn.' });
    expect((await h.client.ask(id, 'SUB-9 again')).answer).toBe('SUB-9 second turn.');
    expect((await h.client.state(id)).runs).toBeGreaterThan(1);
    // The caller's first run closed after the child had ended: the child completed, it was not terminated by the parent
    // close policy.
    expect(await statusOf(childOf(id, 'checker', 1))).toBe('COMPLETED');
    expect(await resultOf(id, 'call_check')).toBe('SUB-9 fine.');
    h.expectOnlyValidModelRequests();
  });
});
