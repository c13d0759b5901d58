import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client as PgClient } from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

// Proof from outside: the package is packed (`npm pack`) and installed from
// the tarball into a fresh project that has only its own code
// (examples/team-worker: a tool of its own, its workflows module, its worker
// with DurableAgentPlugin beside @temporalio/ai-sdk's AiSdkPlugin, and an AI
// SDK workflow of its own). That project typechecks against the package's
// declarations and, in one worker, runs a conversation with an approval and
// the AI SDK workflow (one generateText whose tool is the team's activity)
// against the dev server and the scripted model server from
// `durable-agent-worker/testing`.

const run = promisify(execFile);
const ROOT = path.join(__dirname, '..', '..');
const EXAMPLE = path.join(ROOT, 'examples', 'team-worker');

let scratch: string;
let project: string;
let databaseName: string;
let databaseUrl: string;
let tarball: string;

beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-package-'));
  const packed = await run('npm', ['pack', '--json', '--pack-destination', scratch], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  const [{ filename }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as { filename: string }[];
  tarball = path.join(scratch, filename);

  project = path.join(scratch, 'team-worker');
  fs.cpSync(EXAMPLE, project, { recursive: true, filter: (source) => !source.includes('node_modules') });
  const manifest = JSON.parse(fs.readFileSync(path.join(project, 'package.json'), 'utf8'));
  manifest.dependencies['durable-agent-worker'] = `file:${tarball}`;
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify(manifest, null, 2));
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], {
    cwd: project,
    maxBuffer: 16 * 1024 * 1024,
  });

  databaseName = `pkg_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = new PgClient({ connectionString: inject('postgresAdminUrl') });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${databaseName}`);
  await admin.end();
  databaseUrl = inject('postgresAdminUrl').replace(/\/[^/]+$/, `/${databaseName}`);
}, 300_000);

afterAll(() => {
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

describe('the packed package in a project of its own', () => {
  it('ships only the built entry points, with declarations', async () => {
    const listing = await run('tar', ['-tzf', tarball]);
    const files = listing.stdout.split('\n').filter(Boolean);
    for (const entry of ['index', 'workflows/entry', 'client/index', 'api/index', 'testing/index']) {
      expect(files).toContain(`package/dist/${entry}.js`);
      expect(files).toContain(`package/dist/${entry}.d.ts`);
    }
    // Modules the worker names by path only (its workflow bundle's), which no entry point imports.
    for (const module of ['workflows/index', 'workflows/interceptors', 'codec/failure-converter'])
      expect(files).toContain(`package/dist/${module}.js`);
    expect(
      files.filter((f) => !f.startsWith('package/dist/') && f !== 'package/package.json' && f !== 'package/README.md'),
    ).toEqual([]);
    expect(files.some((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toBe(false);
  });

  it("the project's code typechecks against the package's entry points", async () => {
    const result = await run(path.join(project, 'node_modules', '.bin', 'tsc'), ['-p', project]).catch(
      (err: { stdout: string }) => err,
    );
    expect(result.stdout).toBe('');
  });

  it('the five entry points resolve from the installed tarball, the workflow entry without Node modules', async () => {
    const script = `
      const main = require('durable-agent-worker');
      const workflow = require('durable-agent-worker/workflow');
      const client = require('durable-agent-worker/client');
      const api = require('durable-agent-worker/api');
      const testing = require('durable-agent-worker/testing');
      console.log(JSON.stringify({
        plugin: typeof main.DurableAgentPlugin, tool: typeof main.tool,
        workflow: typeof workflow.agentConversation, signal: workflow.userMessageSignal.name,
        client: typeof client.AgentClient, api: typeof api.startApiServer, testing: typeof testing.startModelServer,
        from: require.resolve('durable-agent-worker'),
      }));`;
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: project });
    expect(JSON.parse(stdout)).toEqual({
      plugin: 'function',
      tool: 'function',
      workflow: 'function',
      signal: 'userMessage',
      client: 'function',
      api: 'function',
      testing: 'function',
      from: fs.realpathSync(path.join(project, 'node_modules', 'durable-agent-worker', 'dist', 'index.js')),
    });
  });

  it("runs a conversation with an approval and an AI SDK workflow (@temporalio/ai-sdk's plugin) through the project's own worker, and its database holds only the agent's tables", async () => {
    const { stdout } = await run('npm', ['run', '--silent', 'conversation'], {
      cwd: project,
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        DATABASE_URL: databaseUrl,
        TASK_QUEUE: `team-${randomUUID()}`,
      },
      timeout: 180_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    const result = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}');
    expect(result).toEqual({
      waiting: ['close_account'],
      outcome: 'answered',
      closedAccounts: ['acc_42'],
      roles: ['user', 'assistant', 'tool', 'assistant'],
      answer: 'Account acc_42 is closed.',
      aiSdk: {
        text: 'Account acc_7 is active, on the team plan.',
        toolCalls: ['look_up_account'],
        steps: 2,
        activities: ['invokeModel', 'lookUpAccount', 'invokeModel'],
        lookedUpAccounts: ['acc_7'],
      },
      modelRequests: 4,
      invalidModelRequests: 0,
    });

    const db = new PgClient({ connectionString: databaseUrl });
    await db.connect();
    try {
      const tables = await db.query<{ name: string }>(
        `SELECT table_schema || '.' || table_name AS name FROM information_schema.tables
          WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`,
      );
      expect(tables.rows.map((r) => r.name)).toEqual(
        [
          'agent_events',
          'approval_decisions',
          'approval_grants',
          'budget_spend',
          'context_summaries',
          'conversation_messages',
          'event_waits',
          'mcp_toolsets',
          'message_files',
          'model_responses',
          'notification_deliveries',
          'notification_endpoints',
          'notification_outbox',
          'pending_approvals',
          'schema_migrations',
          'stream_deltas',
          'superseded_messages',
          'tool_ledger',
          'tool_results',
          'transcript_runs',
          'worker_activities',
          'workers',
        ].map((table) => `durable_agent.${table}`),
      );
      const decisions = await db.query('SELECT decided_by FROM durable_agent.approval_decisions');
      expect(decisions.rows).toEqual([{ decided_by: 'ops@team' }]);
    } finally {
      await db.end();
    }
  });
});
