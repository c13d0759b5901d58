import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';
import { npmStart, stopWithSigterm, type NpmStart } from '../support/npm-start';
import { NOTHING_CONFIGURED } from '../support/worker-process';

// `npm start` on a team's cluster (TEMPORAL_ADDRESS: the run's shared dev
// server; DATABASE_URL: a fresh database; the scripted model), its worker
// requiring signed decisions as it does by default. The CLI run with the same
// environment finds npm start's API through the runtime file and decides
// through it, signed, as the development approver. A CLI that finds no API
// for its cluster sends the decision unsigned; the worker refuses it, and the
// refusal names the variables that make the CLI decide through an API.

let h: Harness;
let started: NpmStart | undefined;
let dataDir: string;
/** npm start's environment, and the CLI's: what a user exports in one shell. */
let env: Record<string, string>;
const scratch: string[] = [];

beforeAll(async () => {
  // A fresh database, the scripted model, a task queue of its own; npm start is the only worker.
  h = await startHarness({ worker: false });
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-team-cli-'));
  scratch.push(dataDir);
  env = {
    ...NOTHING_CONFIGURED,
    ...h.workerEnv(),
    AGENT_DATA_DIR: dataDir,
    AGENT_API_PORT: '0',
    AGENT_METRICS_ADDRESS: 'off',
    // Unset: the worker refuses unsigned decisions, as npm start does by default.
    AGENT_REQUIRE_SIGNED_DECISIONS: '',
    LOG_LEVEL: 'warn',
  };
  started = await npmStart(env);
}, 180_000);
afterAll(async () => {
  if (started) expect((await stopWithSigterm(started.child)).leftBehind).toEqual([]);
  await h?.stop();
  for (const dir of scratch) fs.rmSync(dir, { recursive: true, force: true });
});

const refund = (id: string, amountCents: number) => ({
  id,
  name: 'issue_refund',
  arguments: { order_id: 'ord_2001', amount_cents: amountCents, reason: 'arrived broken' },
});
const decisionsOf = async (conversationId: string) =>
  (
    await h.pool.query(
      'SELECT tool_call_ids[1] AS tool_call_id, decision, decided_by, authenticated FROM durable_agent.approval_decisions WHERE conversation_id = $1 ORDER BY decided_at',
      [conversationId],
    )
  ).rows;
const failure = (err: unknown) => err as { stderr: string; code: number };

/** Sends a message through the CLI (as the user would) and waits until its refund call waits for approval. */
async function askForRefund(conversationId: string, callId: string): Promise<void> {
  const said = await runCli(['say', conversationId, 'refund', '150', 'on', 'ord_2001'], env);
  expect(said.stdout).toContain(`npm run cli -- approve ${conversationId} ${callId}`);
  expect((await h.client.state(conversationId)).pendingApprovals.map((p) => p.toolCallId)).toEqual([callId]);
}

describe('the CLI beside npm start on a team cluster', () => {
  it('npm start serves its API, records where, and requires signed decisions', () => {
    expect(started!.output()).toContain(`Temporal     ${h.temporalAddress}  (configured`);
    expect(started!.output()).toContain('unsigned ones refused');
    const runtimeFile = path.join(dataDir, 'runtime.json');
    expect(fs.statSync(runtimeFile).mode & 0o777).toBe(0o600);
    const runtime = JSON.parse(fs.readFileSync(runtimeFile, 'utf8')) as Record<string, unknown>;
    expect(runtime).toMatchObject({
      temporalAddress: h.temporalAddress,
      namespace: 'default',
      taskQueue: h.taskQueue,
      developmentTokensFile: path.join(dataDir, 'api-tokens.json'),
    });
    expect(runtime.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('approve with the same environment as npm start goes through its API, signed, as the development approver, and the turn answers', async () => {
    const id = h.newConversationId('team-approve');
    h.model.enqueue({ toolCalls: [refund('call_team', 15_000)] }, { content: 'Refunded 150.00 on ord_2001.' });
    await askForRefund(id, 'call_team');

    const approved = await runCli(['approve', id, 'call_team'], env);
    expect(approved.stdout).toMatch(
      /^Approved as local-approver: issue_refund\(\{"order_id":"ord_2001","amount_cents":15000,[^)]*\}\) \[call_team\]; it runs now\./,
    );
    await expect
      .poll(async () => (await runCli(['show', id], env)).stdout, { timeout: 30_000, interval: 500 })
      .toContain('Refunded 150.00 on ord_2001.');
    expect((await h.client.state(id)).recentTurns.map((t) => t.outcome)).toEqual(['answered']);
    // Signed by the API and verified by the worker: recorded as authenticated, under the token's subject.
    expect(await decisionsOf(id)).toEqual([
      { tool_call_id: 'call_team', decision: 'approve', decided_by: 'local-approver', authenticated: true },
    ]);
    h.expectOnlyValidModelRequests();
  });

  it('a CLI that finds no API for its cluster is refused by the worker, and the refusal names AGENT_API_URL and AGENT_API_TOKEN', async () => {
    const id = h.newConversationId('team-refused');
    h.model.enqueue({ toolCalls: [refund('call_unsigned', 15_500)] }, { content: 'The refund was not issued.' });
    await askForRefund(id, 'call_unsigned');

    // Another data folder: no npm start's runtime file, so no API to find.
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-team-cli-none-'));
    scratch.push(elsewhere);
    const noApi = failure(
      await runCli(['approve', id, 'call_unsigned'], { ...env, AGENT_DATA_DIR: elsewhere }).catch(
        (err: unknown) => err,
      ),
    );
    expect(noApi.code).not.toBe(0);
    expect(noApi.stderr).toContain('Decision refused: it is not signed.');
    expect(noApi.stderr).toContain(
      `To decide from this CLI, set AGENT_API_URL to the URL of the HTTP API beside these workers (npm start's or npm run api's) and AGENT_API_TOKEN to an approver's token: no npm start runs with this CLI's data folder (${elsewhere}, AGENT_DATA_DIR)`,
    );

    // The running npm start's data folder, but another task queue: its API is not the CLI's to use.
    const runtime = JSON.parse(fs.readFileSync(path.join(dataDir, 'runtime.json'), 'utf8')) as { apiUrl: string };
    const otherQueue = failure(
      await runCli(['approve', id, 'call_unsigned'], { ...env, TEMPORAL_TASK_QUEUE: 'another-queue' }).catch(
        (err: unknown) => err,
      ),
    );
    expect(otherQueue.stderr).toContain('Decision refused: it is not signed.');
    expect(otherQueue.stderr).toContain('set AGENT_API_URL to the URL of the HTTP API beside these workers');
    expect(otherQueue.stderr).toContain(
      `serves task queue "${h.taskQueue}" of namespace "default" at ${h.temporalAddress}, not this CLI's task queue "another-queue"`,
    );
    expect(otherQueue.stderr).toContain(`its API at ${runtime.apiUrl} is not used`);

    // Nothing was decided: the call still waits, and the CLI with npm start's environment rejects it through the API.
    expect(await decisionsOf(id)).toEqual([]);
    expect((await h.client.state(id)).pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_unsigned']);
    expect((await runCli(['reject', id, 'call_unsigned', '--reason', 'not today'], env)).stdout).toMatch(
      /^Rejected as local-approver: issue_refund/,
    );
    await expect
      .poll(async () => (await h.client.state(id)).recentTurns.map((t) => t.outcome), { timeout: 30_000 })
      .toEqual(['answered']);
    expect(await decisionsOf(id)).toEqual([
      { tool_call_id: 'call_unsigned', decision: 'reject', decided_by: 'local-approver', authenticated: true },
    ]);
  });
});
