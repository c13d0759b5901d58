import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { McpConnections } from '../../src/activities/mcp-connections';
import { McpToolsets } from '../../src/activities/mcp-tools';
import { createToolDiscoveryActivity } from '../../src/activities/tool-discovery';
import { MCP_EFFECT_KEY_META } from '../../src/mcp/protocol';
import { ToolRegistry } from '../../src/tools/registry';
import { tool } from '../../src/tools/tool';
import { createToolActivity } from '../../src/activities/tools';
import { historyEventSizes } from '../support/history';
import { startHarness, type Harness } from '../support/harness';
import { readMcpCalls, startHttpMcpServer, type HttpMcpServer } from '../support/mcp-server';
import { anEffectKeyOf } from '../support/effect-key-match';

// Tools from MCP servers, durable and approvable like the worker's own: a
// conversation uses a stdio server the worker starts and a Streamable HTTP
// server it reaches with a bearer token. Read-only tools run at once; the
// destructive one waits for a person and runs once, with the call's effect
// key in `_meta`. Bad arguments never reach the server; a server the worker
// lacks fails the turn with what to do; a stdio server that dies is started
// again for the next call.

const ROOT = path.join(__dirname, '..', '..');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-tools-'));
const logFile = path.join(dir, 'calls.jsonl');

let h: Harness;
let crm: HttpMcpServer;
beforeAll(async () => {
  crm = await startHttpMcpServer({ name: 'crm', logFile });
  h = await startHarness({
    mcpServers: {
      shop: {
        command: process.execPath,
        args: ['--import', 'tsx', path.join(ROOT, 'test', 'support', 'mcp-server.ts')],
        env: { MCP_TEST_LOG: logFile, MCP_TEST_NAME: 'shop' },
        cwd: ROOT,
        approval: { decisions: ['approve', 'reject'] },
      },
      crm: { url: crm.url, headers: { Authorization: `Bearer ${crm.token}` } },
      lab: {
        command: process.execPath,
        args: ['--import', 'tsx', path.join(ROOT, 'test', 'support', 'mcp-server.ts')],
        env: { MCP_TEST_LOG: logFile, MCP_TEST_NAME: 'lab', MCP_TEST_LAB: '1' },
        cwd: ROOT,
      },
    },
  });
});
afterAll(async () => {
  await h?.stop();
  await crm?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

type Wire = { role: string; tool_call_id?: string; content?: string };
const toolMessages = async (id: string) =>
  (await h.client.transcript(id))
    .map((m) => m.message)
    .filter((m): m is Extract<typeof m, { role: 'tool' }> => m.role === 'tool');
const SERVERS = { mcpServers: ['shop', 'crm'] };
const offeredNames = (request: Record<string, unknown>) =>
  ((request.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name);

describe('tools from MCP servers', () => {
  it('a conversation calls a stdio server and an HTTP one; the destructive tool waits for approval, and approval runs it once with its effect key', async () => {
    const id = h.newConversationId('mcp-approve');
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_look', name: 'shop__lookup_order', arguments: { order_id: 'ord_1001' } },
          { id: 'call_cancel', name: 'crm__cancel_order', arguments: { order_id: 'ord_1001', reason: 'duplicate' } },
        ],
      },
      { content: 'Order ord_1001 is cancelled.' },
    );
    const messageId = await h.client.sendMessage(id, 'MCP-APPROVE: cancel ord_1001', { input: SERVERS });
    await expect
      .poll(async () => (await h.client.state(id)).pendingApprovals.map((p) => p.toolName), { timeout: 30_000 })
      .toEqual(['crm__cancel_order']);
    // The read-only lookup ran without waiting; the cancellation has not reached the server.
    await expect
      .poll(() => readMcpCalls(logFile).filter((c) => c.tool === 'lookup_order' && c.event === 'end').length, {
        timeout: 10_000,
      })
      .toBe(1);
    expect(readMcpCalls(logFile).filter((c) => c.tool === 'cancel_order')).toEqual([]);

    // The model was offered both servers' tools, named server__tool, with the servers' schemas.
    const offered = (
      h.requestsFor('MCP-APPROVE')[0].tools as {
        function: { name: string; parameters: { properties: Record<string, unknown> } };
      }[]
    ).map((t) => t.function);
    expect(offered.map((t) => t.name)).toEqual(
      expect.arrayContaining([
        'shop__lookup_order',
        'shop__cancel_order',
        'shop__slow_report',
        'crm__lookup_order',
        'crm__cancel_order',
      ]),
    );
    expect(Object.keys(offered.find((t) => t.name === 'crm__cancel_order')!.parameters.properties)).toEqual([
      'order_id',
      'reason',
      'seconds',
    ]);

    const [pending] = (await h.client.state(id)).pendingApprovals;
    await h.client.decide(id, { decision: 'approve', toolCallId: 'call_cancel', decidedBy: 'ops@example.com' });
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn.outcome).toBe('answered');

    const cancels = readMcpCalls(logFile).filter((c) => c.tool === 'cancel_order' && c.event === 'start');
    expect(cancels).toHaveLength(1);
    expect(cancels[0]).toMatchObject({
      server: 'crm',
      args: { order_id: 'ord_1001', reason: 'duplicate' },
      effectKey: anEffectKeyOf(pending.callKey),
    });
    expect(pending.callKey).toMatch(new RegExp(`^${id}/msg-\\d+/call-1$`));
    const lookup = readMcpCalls(logFile).find((c) => c.tool === 'lookup_order' && c.event === 'start')!;
    expect(lookup.server).toBe('shop');
    expect(lookup.effectKey).toMatch(new RegExp(`^${id}/msg-\\d+/call-0/args-[0-9a-f]{16}$`));

    const tools = await toolMessages(id);
    expect(tools.map((t) => t.tool_call_id)).toEqual(['call_look', 'call_cancel']);
    expect(JSON.parse(tools[0].content)).toEqual({ order_id: 'ord_1001', status: 'shipped', total_cents: 4200 });
    expect(tools[1].content).toBe('Order ord_1001 cancelled (duplicate).');
    const next = h.requestsFor('MCP-APPROVE')[1].messages as Wire[];
    expect(next.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
    h.expectOnlyValidModelRequests();
    expect(MCP_EFFECT_KEY_META).toBe('durable-agent-worker/effect-key');
  });

  it("an edit of an MCP tool's call is checked against the server's JSON Schema; a server's rule sets what may be decided", async () => {
    const id = h.newConversationId('mcp-edit');
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_crm', name: 'crm__cancel_order', arguments: { order_id: 'ord_4242', reason: 'duplicate' } },
          { id: 'call_shop', name: 'shop__cancel_order', arguments: { order_id: 'ord_4243', reason: 'duplicate' } },
        ],
      },
      { content: 'Cancelled.' },
    );
    const messageId = await h.client.sendMessage(id, 'MCP-EDIT: cancel two', { input: SERVERS });
    await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 30_000 }).toBe(2);
    const pending = (await h.client.state(id)).pendingApprovals;
    expect(pending.map((p) => [p.toolName, p.decisions])).toEqual([
      ['crm__cancel_order', ['approve', 'reject', 'edit']], // not declared idempotent: no respond
      ['shop__cancel_order', ['approve', 'reject']], // the shop server's rule
    ]);
    await expect(
      h.client.decide(id, { decision: 'edit', toolCallId: 'call_crm', arguments: { order_id: 42 } }),
    ).rejects.toThrow(
      /Edit refused: the new arguments do not fit crm__cancel_order: .*Nothing changed; the call still waits/s,
    );
    await expect(
      h.client.decide(id, { decision: 'edit', toolCallId: 'call_shop', arguments: { order_id: 'ord_4243' } }),
    ).rejects.toThrow('does not allow "edit"');
    await h.client.decide(id, {
      decision: 'edit',
      toolCallId: 'call_crm',
      arguments: { order_id: 'ord_4242', reason: 'edited reason' },
      decidedBy: 'ops',
    });
    await h.client.decide(id, { decision: 'reject', toolCallId: 'call_shop', decidedBy: 'ops' });
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    const cancels = readMcpCalls(logFile).filter(
      (c) =>
        c.tool === 'cancel_order' && c.event === 'start' && (c.args as { reason?: string }).reason === 'edited reason',
    );
    expect(cancels).toHaveLength(1);
    expect(JSON.parse((await toolMessages(id))[0].content)).toMatchObject({
      edited_by: 'ops',
      arguments: { reason: 'edited reason' },
      result: 'Order ord_4242 cancelled (edited reason).',
    });
    h.expectOnlyValidModelRequests();
  });

  it("arguments the server's schema refuses never reach it, and the server's own error is the call's result; both answered as tool_failed", async () => {
    const id = h.newConversationId('mcp-errors');
    const before = readMcpCalls(logFile).length;
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_bad', name: 'shop__lookup_order', arguments: { order_id: 'not-an-order' } },
          { id: 'call_missing', name: 'shop__lookup_order', arguments: { order_id: 'ord_missing' } },
        ],
      },
      { content: 'One id was malformed, the other order does not exist.' },
    );
    const answer = await h.client.ask(id, 'MCP-ERRORS: look up two orders', { input: SERVERS });
    expect(answer.turn.outcome).toBe('answered');
    const [bad, missing] = (await toolMessages(id)).map(
      (t) => JSON.parse(t.content) as { kind: string; error: string },
    );
    expect(bad.kind).toBe('tool_failed');
    expect(bad.error).toContain('Arguments for shop__lookup_order do not match its schema');
    expect(bad.error).toContain('must match pattern');
    expect(missing).toMatchObject({ kind: 'tool_failed', error: expect.stringContaining('No order ord_missing.') });
    const calls = readMcpCalls(logFile)
      .slice(before)
      .filter((c) => c.event === 'start');
    expect(calls.map((c) => c.args.order_id)).toEqual(['ord_missing']);
    h.expectOnlyValidModelRequests();
  });

  it('a conversation naming a server this worker lacks fails each turn before any model call, saying what to configure', async () => {
    const id = h.newConversationId('mcp-unknown');
    const messageId = await h.client.sendMessage(id, 'MCP-UNKNOWN: hello', { input: { mcpServers: ['billing'] } });
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn.outcome).toBe('failed');
    expect(turn.error).toContain('This worker has no MCP server named "billing" (it has "shop", "crm", "lab")');
    expect(turn.error).toContain('Every worker of a task queue must configure the same MCP servers');
    expect(h.requestsFor('MCP-UNKNOWN')).toHaveLength(0);
    // Not stuck: every later turn ends the same way, at once, until a worker with that server takes it.
    const again = await h.client.ask(id, 'MCP-UNKNOWN: again');
    expect(again.turn).toMatchObject({
      outcome: 'failed',
      error: expect.stringContaining('no MCP server named "billing"'),
    });
    expect((await h.client.state(id)).status).toBe('failed');
    expect(h.requestsFor('MCP-UNKNOWN')).toHaveLength(0);
  });

  it('a stdio server that dies is started again for the next call', async () => {
    const id = h.newConversationId('mcp-restart');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_a', name: 'shop__lookup_order', arguments: { order_id: 'ord_1002' } }] },
      { content: 'Shipped.' },
    );
    expect((await h.client.ask(id, 'MCP-RESTART: first', { input: SERVERS })).turn.outcome).toBe('answered');
    const first = readMcpCalls(logFile).filter((c) => c.server === 'shop' && c.args.order_id === 'ord_1002');
    const pid = first[0].pid;
    process.kill(pid, 'SIGKILL');
    await expect.poll(() => alive(pid), { timeout: 5_000 }).toBe(false);

    h.model.enqueue(
      { toolCalls: [{ id: 'call_b', name: 'shop__lookup_order', arguments: { order_id: 'ord_1003' } }] },
      { content: 'Shipped too.' },
    );
    expect((await h.client.ask(id, 'MCP-RESTART: second')).turn.outcome).toBe('answered');
    const second = readMcpCalls(logFile).filter((c) => c.server === 'shop' && c.args.order_id === 'ord_1003');
    expect(second.length).toBeGreaterThan(0);
    expect(second[0].pid).not.toBe(pid);
    expect(JSON.parse((await toolMessages(id)).at(-1)!.content)).toMatchObject({
      order_id: 'ord_1003',
      status: 'shipped',
    });
    h.expectOnlyValidModelRequests();
  });

  it('cancelling a turn stops a running MCP call: the server is told, and the call is answered as cancelled', async () => {
    const id = h.newConversationId('mcp-cancel');
    h.model.enqueue({ toolCalls: [{ id: 'call_slow', name: 'shop__slow_report', arguments: { seconds: 30 } }] });
    const messageId = await h.client.sendMessage(id, 'MCP-CANCEL: the report', { input: SERVERS });
    await expect
      .poll(() => readMcpCalls(logFile).filter((c) => c.tool === 'slow_report' && c.event === 'start').length, {
        timeout: 20_000,
      })
      .toBe(1);
    await h.client.cancelTurn(id, 'not needed any more');
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn.outcome).toBe('cancelled');
    // The server saw notifications/cancelled and stopped, long before its 30 s.
    await expect
      .poll(() => readMcpCalls(logFile).filter((c) => c.tool === 'slow_report' && c.event === 'cancelled').length, {
        timeout: 10_000,
      })
      .toBe(1);
    expect(readMcpCalls(logFile).filter((c) => c.tool === 'slow_report' && c.event === 'end')).toEqual([]);
    const [slow] = await toolMessages(id);
    expect(JSON.parse(slow.content)).toMatchObject({ kind: 'interrupted', started: true });
  });

  it('refuses, before any model call, a conversation that would offer more tools than providers accept, saying how many and what to change', async () => {
    // 125 tools of the worker's own and 3 from crm make 128: allowed; with shop's 3 more, 131.
    const own = new ToolRegistry(
      Array.from({ length: 125 }, (_, i) =>
        tool({ name: `own_${i}`, description: 'A tool.', parameters: z.object({}), execute: () => 'ok' }),
      ),
    );
    const connections = new McpConnections({
      crm: { url: crm.url, headers: { Authorization: `Bearer ${crm.token}` } },
    });
    try {
      const activity = createToolDiscoveryActivity({
        tools: own,
        mcp: new McpToolsets(h.pool, h.tables, connections, {}),
      });
      // Temporal's activity context for running one activity function outside a worker.
      const discover = (input: Parameters<typeof activity>[0]) => new MockActivityEnvironment().run(activity, input);
      expect(await discover({ conversationId: 'limit', servers: ['crm'] })).toMatchObject({
        offered: 128,
        fromServers: { crm: 3 },
      });
      const refused = await discover({ conversationId: 'limit', servers: ['crm', 'crm'] }).catch((err: Error) => err);
      expect((refused as Error).message).toBe(
        "This conversation would offer 131 tools (125 of the worker's own, 6 from MCP servers crm, crm); providers accept at most 128. " +
          'Select fewer MCP servers (ConversationInput.mcpServers) or fewer tools (ConversationInput.tools).',
      );
      // The conversation's own choice of the worker's tools counts, not all of them.
      expect(await discover({ conversationId: 'limit', servers: ['crm', 'crm'], tools: ['own_1'] })).toMatchObject({
        offered: 7,
      });
    } finally {
      await connections.close();
    }
  });

  it('keeps each list of tools once, by reference: turns offered the same tools share one stored list', async () => {
    // The lists of the conversations above (the limit test stores lists of its own, of crm alone or twice).
    const { rows } = await h.pool.query<{ ref: string; tools: { name: string }[] }>(
      `SELECT ref, tools FROM durable_agent.mcp_toolsets WHERE tools @> '[{"name": "shop__lookup_order"}]'`,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].ref).toMatch(/^mcp-[0-9a-f]{64}$/);
    expect(rows[0].tools.map((t) => t.name).sort()).toEqual([
      'crm__cancel_order',
      'crm__lookup_order',
      'crm__slow_report',
      'shop__cancel_order',
      'shop__lookup_order',
      'shop__slow_report',
    ]);
  });

  it('an HTTP server that is down: a call tries again under its reconnect policy, then fails with a clear tool error; a turn begun while it is down fails saying so; once it is back, calls work', async () => {
    const id = h.newConversationId('mcp-down');
    const port = Number(new URL(crm.url).port);
    h.model.enqueue(
      { toolCalls: [{ id: 'call_wait', name: 'shop__slow_report', arguments: { seconds: 2 } }] },
      { toolCalls: [{ id: 'call_crm', name: 'crm__lookup_order', arguments: { order_id: 'ord_2001' } }] },
      { content: 'The CRM is unreachable right now.' },
    );
    const messageId = await h.client.sendMessage(id, 'MCP-DOWN: look up ord_2001', { input: SERVERS });
    // The turn listed crm's tools; while the report runs, crm stops.
    await expect
      .poll(
        () =>
          readMcpCalls(logFile).filter((c) => c.tool === 'slow_report' && c.args.seconds === 2 && c.event === 'start')
            .length,
        { timeout: 20_000 },
      )
      .toBe(1);
    await crm.close();
    try {
      const turn = await h.client.waitForTurn(id, messageId, 60_000);
      expect(turn.outcome).toBe('answered');
      const failed = JSON.parse((await toolMessages(id)).at(-1)!.content) as { kind: string; error: string };
      expect(failed.kind).toBe('tool_failed');
      expect(failed.error).toContain(`MCP server "crm" (${crm.url}) could not be reached: 4 attempts in `);
      expect(failed.error).toContain('ECONNREFUSED');
      expect(failed.error).toContain('Nothing was sent to it.');
      expect(readMcpCalls(logFile).filter((c) => c.args.order_id === 'ord_2001')).toEqual([]);

      // A turn begun while it is down cannot list its tools: it fails at once, before any model call.
      const down = await h.client.ask(id, 'MCP-DOWN-AGAIN: and now?');
      expect(down.turn.outcome).toBe('failed');
      expect(down.turn.error).toContain(
        'Could not list the tools of the conversation\'s MCP servers: MCP server "crm"',
      );
      expect(down.turn.error).toContain('could not be reached');
      expect(h.requestsFor('MCP-DOWN-AGAIN')).toHaveLength(0);
    } finally {
      crm = await startHttpMcpServer({ name: 'crm', logFile, token: crm.token, port });
    }
    // Back on the same address: the next turn connects again and the call runs.
    h.model.enqueue(
      { toolCalls: [{ id: 'call_crm_2', name: 'crm__lookup_order', arguments: { order_id: 'ord_2001' } }] },
      { content: 'Shipped.' },
    );
    expect((await h.client.ask(id, 'MCP-DOWN-BACK: try again')).turn.outcome).toBe('answered');
    expect(JSON.parse((await toolMessages(id)).at(-1)!.content)).toMatchObject({
      order_id: 'ord_2001',
      status: 'shipped',
    });
    h.expectOnlyValidModelRequests();
  });

  it('a changed list of tools (tools/list_changed) is offered from the next turn, never in the middle of one', async () => {
    const id = h.newConversationId('mcp-changed');
    const input = { mcpServers: ['lab'] };
    h.model.enqueue(
      { toolCalls: [{ id: 'call_enable', name: 'lab__enable_refunds', arguments: {} }] },
      { content: 'Refunds are on.' },
    );
    expect((await h.client.ask(id, 'MCP-CHANGED: enable refunds', { input })).turn.outcome).toBe('answered');
    const [before, after] = h.requestsFor('MCP-CHANGED: enable refunds');
    expect(offeredNames(before)).not.toContain('lab__refund_order');
    // The server changed its list during the turn; the turn kept the list it began with.
    expect(offeredNames(after)).toEqual(offeredNames(before));

    h.model.enqueue({ content: 'I can refund now.' });
    expect((await h.client.ask(id, 'MCP-CHANGED-NEXT: can you refund?')).turn.outcome).toBe('answered');
    const [next] = h.requestsFor('MCP-CHANGED-NEXT');
    expect(offeredNames(next)).toContain('lab__refund_order');
    expect(offeredNames(next).filter((name) => name !== 'lab__refund_order')).toEqual(offeredNames(before));
  });

  it('a large result of an MCP tool is stored in PostgreSQL and crosses history as a preview; the model gets it whole', async () => {
    const id = h.newConversationId('mcp-large');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_export', name: 'lab__export_orders', arguments: { kilobytes: 40 } }] },
      { content: 'Exported.' },
    );
    expect((await h.client.ask(id, 'MCP-LARGE: export', { input: { mcpServers: ['lab'] } })).turn.outcome).toBe(
      'answered',
    );
    const sent = (h.requestsFor('MCP-LARGE')[1].messages as Wire[]).find((m) => m.role === 'tool')!;
    expect(sent.content).toHaveLength(40 * 1024);
    expect(sent.content!.startsWith('ord_0000000,shipped,0\n')).toBe(true);
    const stored = await h.pool.query<{ content: string }>(
      'SELECT content FROM durable_agent.tool_results WHERE conversation_id = $1',
      [id],
    );
    expect(stored.rows.map((r) => r.content)).toEqual([sent.content]);
    // History carries a preview of 4 KB (the harness's inline limit), not the 40 KB.
    const events = await historyEventSizes(h.temporal, id);
    expect(events.reduce((sum, e) => sum + e.bytes, 0)).toBeLessThan(20 * 1024);
    h.expectOnlyValidModelRequests();
  });

  it('a worker without MCP servers given a call of a turn that has MCP tools fails it for good, saying every worker needs the same servers', async () => {
    const runTool = createToolActivity({ pool: h.pool, tools: new ToolRegistry([]) });
    const refused = await new MockActivityEnvironment()
      .run(runTool, {
        conversationId: 'no-mcp',
        toolCallId: 'call_1',
        idempotencyKey: 'no-mcp/msg-1/call-0',
        name: 'crm__lookup_order',
        arguments: '{"order_id":"ord_1"}',
        toolset: 'mcp-0000',
      })
      .catch((err: Error & { type?: string; nonRetryable?: boolean }) => err);
    expect(refused).toMatchObject({ type: 'UnknownMcpServer', nonRetryable: true });
    expect((refused as Error).message).toBe(
      'This turn uses tools of MCP servers (list mcp-0000), and this worker has no MCP servers. ' +
        "Every worker of a task queue must configure the same MCP servers (AGENT_MCP_SERVERS, or the plugin's mcp.servers).",
    );
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
