import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';
import { readMcpCalls, startHttpMcpServer, type HttpMcpServer } from '../support/mcp-server';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

// A worker killed with SIGKILL while an MCP call runs: the turn finishes on
// the next worker with a valid transcript. A read-only call is run again; a
// destructive one, which may have acted, is not: it settles as
// effect_unknown and the server saw it once; unless its server declared that
// it applies each effect key once, which lets the call run again and the
// server confirm what happened.

const HEARTBEAT_MS = 3_000;
const input = { mcpServers: ['crm'], timeouts: { heartbeatMs: HEARTBEAT_MS } };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-crash-'));
const logFile = path.join(dir, 'calls.jsonl');

let h: Harness;
let crm: HttpMcpServer;
let ledger: HttpMcpServer;
let worker: WorkerProcess | undefined;
beforeAll(async () => {
  h = await startHarness({ worker: false });
  crm = await startHttpMcpServer({ name: 'crm', logFile });
  ledger = await startHttpMcpServer({
    name: 'ledger',
    logFile,
    effectKeys: true,
    token: 'ledger-token-0123456789abcdef',
  });
});
afterAll(async () => {
  await worker?.stop('SIGKILL');
  await h?.stop();
  await crm?.close();
  await ledger?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const startWorker = async () => {
  await worker?.stop('SIGKILL'); // one worker at a time: the call must run on the one the test kills
  // The token reaches the worker as a variable of its own, named in the JSON.
  const servers = JSON.stringify({
    crm: { url: crm.url, headers: { Authorization: 'Bearer ${CRM_TOKEN}' } },
    ledger: { url: ledger.url, headers: { Authorization: `Bearer ${ledger.token}` } },
  });
  worker = await startWorkerProcess(h.workerEnv({ AGENT_MCP_SERVERS: servers, CRM_TOKEN: crm.token }));
  expect(worker.output()).toContain('MCP servers  crm (http), ledger (http)');
};
const kill = async () => {
  await worker?.stop('SIGKILL');
  worker = undefined;
};
/** The worker an earlier test left running (it crashed none of its calls), or a new one: a worker start is seconds. */
const aWorker = async () => {
  if (!worker) await startWorker();
};
const toolMessages = async (id: string) =>
  (await h.client.transcript(id))
    .map((m) => m.message)
    .filter((m): m is Extract<typeof m, { role: 'tool' }> => m.role === 'tool');
const logged = (event: string, tool: string, effectKeyPrefix: string) =>
  readMcpCalls(logFile).filter((c) => c.tool === tool && c.event === event && c.effectKey?.startsWith(effectKeyPrefix));
const started = (tool: string, effectKeyPrefix: string) => logged('start', tool, effectKeyPrefix);

/**
 * Sends `text`, approves the one call it waits for, and kills the worker once the server has the call; the turn's
 * message id.
 */
const approveThenKillMidCall = async (id: string, text: string, turnInput: typeof input): Promise<string> => {
  await aWorker();
  const messageId = await h.client.sendMessage(id, text, { input: turnInput });
  await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 30_000 }).toBe(1);
  await h.client.decide(id, { decision: 'approve', decidedBy: 'ops@example.com' });
  await expect.poll(() => started('cancel_order', `${id}/`).length, { timeout: 30_000 }).toBe(1);
  await kill();
  await startWorker();
  return messageId;
};

describe('SIGKILL during an MCP call', () => {
  it('a read-only call cut off by the crash runs again on the next worker, and the turn is answered', async () => {
    const id = h.newConversationId('mcp-kill-read');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_report', name: 'crm__slow_report', arguments: { seconds: 3 } }] },
      { content: 'Here is the report.' },
    );
    await aWorker();
    const messageId = await h.client.sendMessage(id, 'MCP-KILL-READ: the report', { input });
    await expect.poll(() => started('slow_report', `${id}/`).length, { timeout: 30_000 }).toBe(1);
    await kill();
    await startWorker();
    const turn = await h.client.waitForTurn(id, messageId, 60_000);
    expect(turn.outcome).toBe('answered');
    // Run again (same effect key), and answered by the second run.
    const runs = started('slow_report', `${id}/`);
    expect(runs).toHaveLength(2);
    expect(runs[1].effectKey).toBe(runs[0].effectKey);
    const [report] = await toolMessages(id);
    expect(report.content).toBe('Report ready after 3 s: 12 orders.');
    expect((await h.client.transcript(id)).map((m) => m.message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    h.expectOnlyValidModelRequests();
  });

  it('an approved destructive call cut off by the crash is not run again: it settles as effect_unknown, and the server saw it once', async () => {
    const id = h.newConversationId('mcp-kill-write');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_cancel',
            name: 'crm__cancel_order',
            arguments: { order_id: 'ord_9', reason: 'fraud', seconds: 4 },
          },
        ],
      },
      { content: 'I could not confirm the cancellation; please check ord_9.' },
    );
    const messageId = await approveThenKillMidCall(id, 'MCP-KILL-WRITE: cancel ord_9', input);
    const turn = await h.client.waitForTurn(id, messageId, 60_000);
    expect(turn.outcome).toBe('answered');
    const [cancel] = await toolMessages(id);
    expect(cancel.tool_call_id).toBe('call_cancel');
    expect(JSON.parse(cancel.content)).toMatchObject({ kind: 'effect_unknown' });
    // Never sent a second time; the first request may have finished on the server by itself.
    expect(started('cancel_order', `${id}/`)).toHaveLength(1);
    const state = await h.client.state(id);
    expect(state.unknownEffectsCount).toBe(1);
    expect(state.unknownEffects[0]).toMatchObject({ toolName: 'crm__cancel_order' });
    h.expectOnlyValidModelRequests();
  });

  it('an approved destructive call of a server that applies each effect key once runs again after the crash: the server confirms it, the effect happened once', async () => {
    const id = h.newConversationId('mcp-kill-keyed');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_cancel',
            name: 'ledger__cancel_order',
            arguments: { order_id: 'ord_7', reason: 'fraud', seconds: 4 },
          },
        ],
      },
      { content: 'Order ord_7 is cancelled.' },
    );
    const messageId = await approveThenKillMidCall(id, 'MCP-KILL-KEYED: cancel ord_7', {
      ...input,
      mcpServers: ['ledger'],
    });
    const turn = await h.client.waitForTurn(id, messageId, 60_000);
    expect(turn.outcome).toBe('answered');
    // Sent twice with one key; applied once, the repeat answered with the first call's result.
    const runs = started('cancel_order', `${id}/`);
    expect(runs).toHaveLength(2);
    expect(runs[1].effectKey).toBe(runs[0].effectKey);
    expect(logged('end', 'cancel_order', `${id}/`)).toHaveLength(1);
    expect(logged('replayed', 'cancel_order', `${id}/`)).toHaveLength(1);
    const [cancel] = await toolMessages(id);
    expect(cancel.content).toBe('Order ord_7 cancelled (fraud).');
    expect((await h.client.state(id)).unknownEffectsCount).toBe(0);
    h.expectOnlyValidModelRequests();
  });
});
