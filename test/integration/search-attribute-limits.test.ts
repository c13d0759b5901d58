import { randomUUID } from 'node:crypto';
import { Connection } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { msToTs } from '@temporalio/common/lib/time';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createOpenAIClient } from '../../src/activities/openai-client';
import { startApiServer } from '../../src/api/server';
import { logger } from '../../src/common/logger';
import { SearchAttributeLimitError } from '../../src/worker/search-attributes';
import { createAgentWorker } from '../../src/worker/worker';
import { backofficeTools } from '../../src/demo/tools';
import { describeInvalidInput, SEARCH_ATTRIBUTES } from '../../src/contract';
import { apiCaller, TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

// SQL visibility (the dev server's SQLite, as PostgreSQL and MySQL) allows a
// namespace 3 custom search attributes of type Int, 10 Keyword, 3 KeywordList,
// 3 Datetime and 3 Double. Each test makes a namespace of its own and fills
// it with a team's own attributes first, as a real namespace may be.

type Taken = Partial<Record<'INT' | 'KEYWORD' | 'KEYWORD_LIST' | 'DATETIME' | 'DOUBLE', number>>;

let connection: Connection;
const cleanups: (() => Promise<unknown>)[] = [];
beforeAll(async () => {
  connection = await Connection.connect({ address: inject('temporalAddress') });
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  vi.restoreAllMocks();
});
afterAll(async () => {
  await connection?.close();
});

/** A new namespace holding `taken` attributes of the team's own (`Team_Int1`, ...) by type. */
async function namespaceWith(taken: Taken): Promise<string> {
  const namespace = `limits-${randomUUID().slice(0, 8)}`;
  await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
  const own = Object.entries(taken).flatMap(([type, count]) =>
    Array.from(
      { length: count },
      (_, i) =>
        [`Team_${type.toLowerCase()}_${i + 1}`, encodeSearchAttributeIndexedValueType(type as keyof Taken)!] as const,
    ),
  );
  if (own.length > 0)
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: Object.fromEntries(own) });
  return namespace;
}

const customAttributes = async (namespace: string): Promise<string[]> =>
  Object.keys((await connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {}).sort();

async function harness(options: Parameters<typeof startHarness>[0]): Promise<Harness> {
  const h = await startHarness(options);
  cleanups.push(() => h.stop());
  return h;
}

const refund = (id: string, cents: number) => ({
  id,
  name: 'issue_refund',
  arguments: { order_id: 'ord_2001', amount_cents: cents, reason: 'arrived broken' },
});

/** The first conversation visibility lists for `query`. */
async function firstListed(h: Harness, query: string): Promise<string | undefined> {
  for await (const execution of h.temporal.workflow.list({ query })) return execution.workflowId;
  return undefined;
}

/** What the tool message answering `toolCallId` says. */
async function toolResult(h: Harness, conversationId: string, toolCallId: string): Promise<unknown> {
  const answer = (await h.client.transcript(conversationId)).find(
    (m) => m.message.role === 'tool' && m.message.tool_call_id === toolCallId,
  );
  return answer && answer.message.role === 'tool' ? JSON.parse(answer.message.content) : undefined;
}

/** The input the conversation's first run started with. */
async function startInput(h: Harness, conversationId: string): Promise<Record<string, unknown>> {
  const history = await h.temporal.workflow.getHandle(conversationId).fetchHistory();
  const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  return JSON.parse(Buffer.from(payload!.data!).toString()) as Record<string, unknown>;
}

describe('search attributes within the visibility store limits', () => {
  it('with one Int, one Keyword, one KeywordList and one Datetime free, the worker takes status and approvals, says why the rest is off, and an approval is listed, approved and answered', async () => {
    const namespace = await namespaceWith({ INT: 2, KEYWORD: 9, KEYWORD_LIST: 2, DATETIME: 2 });
    const warn = vi.spyOn(logger, 'warn');
    const h = await harness({ namespace, decisionTrust: { keys: [TEST_DECISION_KEY] } });
    const api = await startApiServer({
      client: h.client,
      tokens: TEST_TOKENS,
      decisions: { signingKey: TEST_DECISION_KEY },
    });
    cleanups.push(() => api.stop());
    const call = apiCaller(() => api.url);

    const registered = await customAttributes(namespace);
    expect(registered).toEqual(
      expect.arrayContaining(['AgentStatus', 'PendingApprovals', 'PendingApprovalTags', 'AwaitingApprovalSince']),
    );
    for (const name of ['UnknownEffects', 'AgentTokens', 'AgentCostUsd']) expect(registered).not.toContain(name);
    const offLines = warn.mock.calls.map((args) => String(args[1])).filter((line) => line.includes(' is off: '));
    expect(offLines).toHaveLength(2);
    for (const line of offLines)
      expect(line).toContain('To have it, free an Int attribute no workflow uses, or raise the limit');
    for (const group of ['unknownEffects', 'usage']) {
      expect(offLines.find((line) => line.startsWith(`search attribute group "${group}" is off`))).toMatch(
        new RegExp(
          `allows 3 custom search attributes of type Int per namespace; namespace "${namespace}" has 3 already \\(.*Team_int_1.*Team_int_2.*\\)`,
        ),
      );
    }

    const id = h.newConversationId('two-groups');
    h.model.enqueue({ toolCalls: [refund('call_fit', 15_000)] }, { content: 'Refunded.' });
    const sent = await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Refund 150 on ord_2001' });
    expect(sent.status).toBe(202);
    await expect
      .poll(async () => (await call('GET', '/v1/approvals', token('b'))).json?.approvals?.length, { timeout: 30_000 })
      .toBe(1);
    const [listed] = (await call('GET', '/v1/approvals', token('b'))).json.approvals;
    expect(listed).toMatchObject({
      conversationId: id,
      toolCallId: 'call_fit',
      toolName: 'issue_refund',
      requestedBy: ['alice@example.com'],
    });
    expect(listed.arguments).toMatchObject({ order_id: 'ord_2001', amount_cents: 15_000 });
    expect((await h.client.waitingCalls()).calls.map((p) => p.callKey)).toEqual([listed.callKey]);

    // The conversation names the four attributes the namespace has, and sets them.
    expect((await startInput(h, id)).searchAttributes).toEqual({
      status: 'AgentStatus',
      pendingApprovals: 'PendingApprovals',
      pendingApprovalTags: 'PendingApprovalTags',
      awaitingApprovalSince: 'AwaitingApprovalSince',
    });
    await expect
      .poll(() => firstListed(h, `PendingApprovalTags = 'tool:issue_refund' AND AgentStatus = 'awaiting_approval'`), {
        timeout: 20_000,
      })
      .toBe(id);

    const decided = await call('POST', `/v1/conversations/${id}/decisions`, token('b'), {
      decision: 'approve',
      callKeys: [listed.callKey],
    });
    expect(decided.status).toBe(200);
    expect((await h.client.waitForTurn(id, sent.json.messageId)).outcome).toBe('answered');
    expect(await toolResult(h, id, 'call_fit')).toMatchObject({ order_id: 'ord_2001', amount_cents: 15_000 });
    expect((await h.client.waitingCalls()).calls).toEqual([]);
    h.expectOnlyValidModelRequests();
  });

  it('with every type full, npm start runs with every group off, one log line each, and approvals are still listed (client and CLI), decided and answered', async () => {
    const namespace = await namespaceWith({ INT: 3, KEYWORD: 10, KEYWORD_LIST: 3, DATETIME: 3, DOUBLE: 3 });
    const before = await customAttributes(namespace);
    const h = await harness({ namespace, worker: false });
    const worker: WorkerProcess = await startWorkerProcess(h.workerEnv());
    cleanups.push(() => worker.stop());

    expect(await customAttributes(namespace)).toEqual(before);
    const offLines = worker
      .output()
      .split('\n')
      .filter((line) => line.includes(' is off: '));
    expect(offLines).toHaveLength(4);
    // Each names one of its types the store has no room for (the server checks them in an order of its own).
    for (const [group, types] of [
      ['status', 'Keyword'],
      ['approvals', 'Int|KeywordList|Datetime'],
      ['unknownEffects', 'Int'],
      ['usage', 'Int|Double'],
    ]) {
      expect(offLines.find((line) => line.includes(`search attribute group \\"${group}\\" is off`))).toMatch(
        new RegExp(
          `allows (10|3) custom search attributes of type (${types}) per namespace; namespace \\\\"${namespace}\\\\" has (10|3) already`,
        ),
      );
    }

    const id = h.newConversationId('all-off');
    h.model.enqueue({ toolCalls: [refund('call_full', 16_000)] }, { content: 'Refunded without a search attribute.' });
    const messageId = await h.client.sendMessage(id, 'Refund 160 on ord_2001', { sentBy: 'alice@example.com' });
    await expect
      .poll(async () => (await h.client.waitingCalls({ conversationId: id })).calls.length, { timeout: 30_000 })
      .toBe(1);
    const [waiting] = (await h.client.waitingCalls({ requester: 'alice@example.com', tool: 'issue_refund' })).calls;
    expect(waiting).toMatchObject({
      conversationId: id,
      toolCallId: 'call_full',
      arguments: { order_id: 'ord_2001', amount_cents: 16_000 },
    });
    expect((await h.client.waitingCalls()).calls.map((c) => c.rootConversationId)).toEqual([id]);
    // The backlog metric counts from PostgreSQL when the namespace has no approvals group.
    expect(await h.client.approvalBacklog([{ waited: '1h', ms: 3_600_000 }])).toEqual([
      { waited: 'any', conversations: 1 },
      { waited: '1h', conversations: 0 },
    ]);

    const env = {
      TEMPORAL_ADDRESS: h.temporalAddress,
      TEMPORAL_NAMESPACE: namespace,
      DATABASE_URL: h.databaseUrl,
      TEMPORAL_TASK_QUEUE: h.taskQueue,
    };
    expect((await runCli(['pending'], env)).stdout).toContain(
      `${id}  call_full  issue_refund({"order_id":"ord_2001","amount_cents":16000`,
    );
    const unknownEffects = await runCli(['unknown-effects'], env).catch((err: { stderr: string }) => err);
    expect((unknownEffects as { stderr: string }).stderr).toContain(
      `needs the search attribute UnknownEffects (group unknownEffects), which namespace "${namespace}" does not have`,
    );

    await h.client.decide(id, { decision: 'approve', callKey: waiting.callKey, decidedBy: 'ops' });
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    expect(await toolResult(h, id, 'call_full')).toMatchObject({ order_id: 'ord_2001', amount_cents: 16_000 });
    expect((await h.client.waitingCalls()).calls).toEqual([]);
    // Nothing to set, so no attribute of the agent was upserted (the SDK's own TemporalChangeVersion is), as its input
    // said.
    expect((await startInput(h, id)).searchAttributes).toEqual({});
    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    const upserted = (history.events ?? []).flatMap((e) =>
      Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}),
    );
    expect(upserted.filter((name) => name !== 'TemporalChangeVersion')).toEqual([]);
    h.expectOnlyValidModelRequests();
  });

  it('a group asked for that does not fit fails the start, saying the limit, the attributes of that type, what to turn off and how to raise it', async () => {
    const namespace = await namespaceWith({ INT: 3 });
    const h = await harness({ namespace, worker: false });
    const workerConnection = await NativeConnection.connect({ address: h.temporalAddress });
    cleanups.push(() => workerConnection.close());
    const creating = createAgentWorker({
      connection: workerConnection,
      namespace,
      taskQueue: h.taskQueue,
      database: { pool: h.pool },
      model: { name: 'scripted-model', client: createOpenAIClient({ apiKey: 'test-key', baseUrl: h.model.url }) },
      tools: backofficeTools(),
      workflowBundle: { codePath: inject('workflowBundlePath') },
      searchAttributes: { groups: ['status', 'usage'] },
    });
    const failure = await creating.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(SearchAttributeLimitError);
    const message = (failure as Error).message;
    expect(message).toContain(
      `Namespace "${namespace}" cannot take the search attribute group "usage": it needs AgentTokens (Int), AgentCostUsd (Double)`,
    );
    expect(message).toContain(
      `allows 3 custom search attributes of type Int per namespace; namespace "${namespace}" has 3 already (Team_int_1, Team_int_2, Team_int_3)`,
    );
    expect(message).toContain(
      `Turn the group off (the plugin's searchAttributes.groups (AGENT_SEARCH_ATTRIBUTES for npm start): AGENT_SEARCH_ATTRIBUTES=status, groups: ['status'])`,
    );
    expect(message).toContain('visibility.persistenceCustomSearchAttributes');
    expect(message).not.toContain('temporal operator search-attribute create');
    expect(await customAttributes(namespace)).not.toContain('AgentTokens');
  });

  it('a prefix names every attribute: registered, set and listed under it, through continue-as-new', async () => {
    const namespace = await namespaceWith({});
    const h = await harness({ namespace, searchAttributes: { prefix: 'Support_' } });
    expect(await customAttributes(namespace)).toEqual(SEARCH_ATTRIBUTES.map((key) => `Support_${key.name}`).sort());

    const id = h.newConversationId('prefixed');
    h.model.enqueue(
      { toolCalls: [refund('call_pre', 17_000)] },
      { content: 'Refunded.' },
      { content: 'Second answer.' },
    );
    const first = await h.client.sendMessage(id, 'Refund 170 on ord_2001', { input: { continueAsNewAfterEvents: 10 } });
    await expect
      .poll(async () => (await h.client.waitingCalls({ conversationId: id })).calls.length, { timeout: 30_000 })
      .toBe(1);
    const [waiting] = (await h.client.waitingCalls({ conversationId: id })).calls;
    await expect
      .poll(() => firstListed(h, `Support_PendingApprovalTags = 'tool:issue_refund'`), { timeout: 20_000 })
      .toBe(id);
    expect(await h.client.approvalBacklog([])).toEqual([{ waited: 'any', conversations: 1 }]);
    await h.client.decide(id, { decision: 'approve', callKey: waiting.callKey, decidedBy: 'ops' });
    expect((await h.client.waitForTurn(id, first)).outcome).toBe('answered');
    expect(await toolResult(h, id, 'call_pre')).toMatchObject({ order_id: 'ord_2001', amount_cents: 17_000 });

    // The next turn runs in a new run (continue-as-new), which sets the same prefixed attributes.
    const second = await h.client.sendMessage(id, 'Anything else?');
    expect((await h.client.waitForTurn(id, second)).outcome).toBe('answered');
    const state = await h.client.state(id);
    expect(state.runs).toBeGreaterThan(1);
    const namesSet = async () =>
      (await h.temporal.workflow.getHandle(id).describe()).typedSearchAttributes.getAll().map((pair) => pair.key.name);
    await expect
      .poll(namesSet, { timeout: 20_000 })
      .toEqual(expect.arrayContaining(['Support_AgentStatus', 'Support_PendingApprovals', 'Support_AgentTokens']));
    expect(
      (await namesSet()).filter(
        (name) => !name.startsWith('Support_') && !name.startsWith('Build') && !name.startsWith('Temporal'),
      ),
    ).toEqual([]);
    h.expectOnlyValidModelRequests();
  });

  it("a conversation's input names only attributes it sets, each under a plain name of its own", () => {
    expect(
      describeInvalidInput({ searchAttributes: { status: 'Support_AgentStatus', tokens: 'Support_AgentTokens' } }),
    ).toEqual([]);
    expect(
      describeInvalidInput({
        searchAttributes: { status: 'A', pendingApprovals: 'A', colour: 'B', tokens: 'my-tokens' },
      }),
    ).toEqual([
      'searchAttributes.pendingApprovals and searchAttributes.status both name A; each attribute needs a name of its own',
      'searchAttributes.colour is not an attribute the conversation sets (known: status, pendingApprovals, unknownEffects, pendingApprovalTags, awaitingApprovalSince, tokens, costUsd)',
      'searchAttributes.tokens must be a search attribute name (a letter or _, then letters, digits or _, at most 64 characters), got "my-tokens"',
    ]);
    expect(describeInvalidInput({ searchAttributes: ['AgentStatus'] })).toEqual([
      'searchAttributes must be an object such as {"status": "AgentStatus", "pendingApprovals": "PendingApprovals"}',
    ]);
  });
});
