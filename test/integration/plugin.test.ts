import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { SimplePlugin } from '@temporalio/plugin';
import { NativeConnection, Worker } from '@temporalio/worker';
import { Client as PgClient } from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createOpenAIClient } from '../../src/activities/openai-client';
import { AgentClient } from '../../src/client/client';
import { DurableAgentPlugin, WORKFLOW_INTERCEPTOR_MODULES } from '../../src/worker/plugin';
import { CONVERSATION_ACTIVITY_NAMES } from '../../src/contract/activities';
import { backofficeTools } from '../../src/demo/tools';
import { SEARCH_ATTRIBUTES } from '../../src/contract';
import { startHarness, type Harness } from '../support/harness';

// DurableAgentPlugin in a team's own worker: the team's workflows module
// re-exports the conversation workflow beside its own workflow, the team has
// an activity of its own named like one of ours (`callModel`; ours are
// `durableAgent.callModel`, …), and both sides carry payload codecs.

const TEAM_WORKFLOWS = path.join(__dirname, '..', 'support', 'team-workflows.ts');

/** A codec that hides payloads behind an XOR with `key`, under an encoding of its own; counts what it encoded. */
function maskingCodec(encoding: string, key: number): PayloadCodec & { encoded: number } {
  const mask = (bytes: Uint8Array) => Uint8Array.from(bytes, (b) => b ^ key);
  const codec = {
    encoded: 0,
    async encode(payloads: Payload[]): Promise<Payload[]> {
      codec.encoded += payloads.length;
      return payloads.map((p) => ({
        metadata: { encoding: new TextEncoder().encode(encoding) },
        data: mask(temporal.api.common.v1.Payload.encode(p).finish()),
      }));
    },
    async decode(payloads: Payload[]): Promise<Payload[]> {
      return payloads.map((p) =>
        new TextDecoder().decode(p.metadata?.encoding ?? new Uint8Array()) === encoding
          ? (temporal.api.common.v1.Payload.decode(mask(p.data ?? new Uint8Array())) as Payload)
          : p,
      );
    },
  };
  return codec;
}

let h: Harness;
let teamCodec: ReturnType<typeof maskingCodec>;
let agentCodec: ReturnType<typeof maskingCodec>;
let plugin: DurableAgentPlugin;
let worker: Worker;
let running: Promise<void>;
let workerConnection: NativeConnection;
let clientConnection: Connection;
let client: Client;
let agent: AgentClient;
const teamActivityCalls: string[] = [];

beforeAll(async () => {
  h = await startHarness({ worker: false });
  teamCodec = maskingCodec('binary/team-codec', 0x5a);
  agentCodec = maskingCodec('binary/agent-codec', 0x33);
  plugin = new DurableAgentPlugin({
    tools: backofficeTools(),
    model: { name: 'scripted-model', apiKey: 'test-key', baseUrl: h.model.url },
    database: { pool: h.pool },
    payloadCodecs: [agentCodec],
  });
  workerConnection = await NativeConnection.connect({ address: h.temporalAddress });
  worker = await Worker.create({
    connection: workerConnection,
    taskQueue: h.taskQueue,
    workflowsPath: TEAM_WORKFLOWS,
    activities: {
      callModel: async (question: string) => {
        teamActivityCalls.push(question);
        return `The team's own answer to "${question}"`;
      },
    },
    dataConverter: { payloadCodecs: [teamCodec] },
    plugins: [plugin],
  });
  running = worker.run();
  clientConnection = await Connection.connect({ address: h.temporalAddress });
  client = new Client({
    connection: clientConnection,
    dataConverter: { payloadCodecs: [teamCodec] },
    plugins: [plugin],
  });
  agent = AgentClient.fromClient(client, { taskQueue: h.taskQueue, databaseUrl: h.databaseUrl });
}, 120_000);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await agent?.close();
  await clientConnection?.close();
  await workerConnection?.close();
  await h?.stop();
});

describe('DurableAgentPlugin in a team worker', () => {
  it("runs a conversation with an approval beside the team's own workflow, whose activity named callModel stays the team's", async () => {
    const id = h.newConversationId('team');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_1',
            name: 'issue_refund',
            arguments: { order_id: 'ord_2001', amount_cents: 12_000, reason: 'late delivery' },
          },
        ],
      },
      { content: 'Refunded 120.00.' },
    );
    const messageId = await agent.sendMessage(id, 'Refund 120 on ord_2001');
    await expect.poll(async () => (await agent.state(id)).pendingApprovals.length, { timeout: 20_000 }).toBe(1);
    await agent.decide(id, { decision: 'approve', decidedBy: 'ops' });
    expect((await agent.waitForTurn(id, messageId, 30_000)).outcome).toBe('answered');
    expect((await agent.transcript(id)).at(-1)?.message).toMatchObject({
      role: 'assistant',
      content: 'Refunded 120.00.',
    });
    const refunds = await h.pool.query('SELECT amount_cents FROM refunds WHERE idempotency_key LIKE $1', [`${id}/%`]);
    expect(refunds.rows).toEqual([{ amount_cents: 12_000 }]);

    const report = await client.workflow.execute('teamReport', {
      args: ['How many refunds today?'],
      taskQueue: h.taskQueue,
      workflowId: `report-${randomUUID()}`,
    });
    expect(report).toBe('The team\'s own answer to "How many refunds today?"');
    expect(teamActivityCalls).toEqual(['How many refunds today?']);
    h.expectOnlyValidModelRequests();
  });

  it("registers its activities under durableAgent.<name> only, beside the team's own", () => {
    expect([...worker.options.activities.keys()].sort()).toEqual(
      ['callModel', ...CONVERSATION_ACTIVITY_NAMES.map((name) => `durableAgent.${name}`)].sort(),
    );
  });

  it("payload codecs given to the plugin run after the team's own, in the worker and the client, so history holds no plaintext", async () => {
    const id = h.newConversationId('codec');
    const secret = `customer secret ${randomUUID()}`;
    h.model.enqueue({ content: 'Noted.' });
    const { turn } = await agent.ask(id, secret);
    expect(turn.outcome).toBe('answered');
    expect(teamCodec.encoded).toBeGreaterThan(0);
    expect(agentCodec.encoded).toBeGreaterThan(0);

    // Read the history raw (no codecs).
    const raw = new Client({ connection: clientConnection });
    const history = await raw.workflow.getHandle(id).fetchHistory();
    const serialized = JSON.stringify(
      temporal.api.history.v1.History.toObject(temporal.api.history.v1.History.fromObject(history)),
    );
    expect(serialized).not.toContain(secret);
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    const outer = started?.input?.payloads?.[0];
    const encodingOf = (p: Payload | undefined | null) =>
      new TextDecoder().decode(p?.metadata?.encoding ?? new Uint8Array());
    // Encoded in array order (team's, then ours), so ours is the outer layer and the team's is under it.
    expect(encodingOf(outer)).toBe('binary/agent-codec');
    const [inner] = await agentCodec.decode([outer as Payload]);
    expect(encodingOf(inner)).toBe('binary/team-codec');
    // And the configured client reads it back: codecs decode in reverse order.
    expect((await agent.state(id)).recentTurns.at(-1)?.outcome).toBe('answered');
  });

  it("is a Temporal SimplePlugin: a replay worker gets the interceptor module and the codecs, after the team's", () => {
    expect(plugin).toBeInstanceOf(SimplePlugin);
    const replay = plugin.configureReplayWorker({
      workflowsPath: TEAM_WORKFLOWS,
      dataConverter: { payloadCodecs: [teamCodec] },
    });
    expect(replay.interceptors?.workflowModules).toEqual(WORKFLOW_INTERCEPTOR_MODULES);
    expect(replay.dataConverter?.payloadCodecs).toEqual([teamCodec, agentCodec]);
  });

  it('adds its workflow interceptor module once, whichever way the bundle is built', () => {
    const configured = plugin.configureBundler({
      workflowsPath: TEAM_WORKFLOWS,
      workflowInterceptorModules: [...WORKFLOW_INTERCEPTOR_MODULES],
    });
    expect(configured.workflowInterceptorModules).toEqual(WORKFLOW_INTERCEPTOR_MODULES);
    const fresh = plugin.configureBundler({ workflowsPath: TEAM_WORKFLOWS });
    expect(fresh.workflowInterceptorModules).toEqual(WORKFLOW_INTERCEPTOR_MODULES);
  });
});

describe('DurableAgentPlugin preparing a worker', () => {
  it('a worker on a new namespace registers the search attributes and migrates a database given by URL before it polls', async () => {
    const namespace = `team-${randomUUID().slice(0, 8)}`;
    await clientConnection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs('1 day'),
    });
    const databaseName = `p_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    const admin = new PgClient({ connectionString: inject('postgresAdminUrl') });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${databaseName}`);
    const databaseUrl = inject('postgresAdminUrl').replace(/\/[^/]+$/, `/${databaseName}`);

    const connection = await NativeConnection.connect({ address: h.temporalAddress });
    const own = await Worker.create({
      connection,
      namespace,
      taskQueue: `team-${randomUUID()}`,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      plugins: [
        new DurableAgentPlugin({
          tools: [],
          model: { name: 'scripted-model', client: createOpenAIClient({ apiKey: 'test-key', baseUrl: h.model.url }) },
          database: { url: databaseUrl },
        }),
      ],
    });
    const run = own.run();
    try {
      await expect
        .poll(
          async () =>
            Object.keys(
              (await clientConnection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {},
            ),
          {
            timeout: 30_000,
          },
        )
        .toEqual(expect.arrayContaining(SEARCH_ATTRIBUTES.map((key) => key.name)));
      const db = new PgClient({ connectionString: databaseUrl });
      await db.connect();
      const tables = await db.query(
        "SELECT table_name FROM information_schema.tables WHERE table_name = 'conversation_messages'",
      );
      await db.end();
      expect(tables.rowCount).toBe(1);
    } finally {
      // run() reaches RUNNING after the plugin's own start (lost-worker takeover): shutting down before that throws.
      await expect.poll(() => own.getState(), { timeout: 10_000 }).toBe('RUNNING');
      own.shutdown();
      await run;
      await connection.close();
    }
    // The pool it opened on the URL, and its liveness session, are closed with the worker. A backend leaves
    // pg_stat_activity a moment after its client closed the connection; one left open stays there.
    try {
      await expect
        .poll(
          async () =>
            (await admin.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [databaseName]))
              .rows[0].n,
          {
            timeout: 5_000,
          },
        )
        .toBe(0);
    } finally {
      await admin.end();
    }
  });

  it('a database that cannot be reached fails Worker.create before anything polls, with an error that says what to check', async () => {
    const connection = await NativeConnection.connect({ address: h.temporalAddress });
    try {
      const creating = Worker.create({
        connection,
        taskQueue: `team-${randomUUID()}`,
        workflowBundle: { codePath: inject('workflowBundlePath') },
        plugins: [
          new DurableAgentPlugin({
            tools: [],
            model: { name: 'scripted-model', apiKey: 'test-key', baseUrl: h.model.url },
            database: { url: 'postgres://agent@127.0.0.1:9/agent' },
            // A database that is down is waited for (60 s by default), then the start fails.
            databaseWaitMs: 1_000,
          }),
        ],
      });
      await expect(creating).rejects.toThrow(
        /could not prepare its tables in PostgreSQL: connect ECONNREFUSED 127\.0\.0\.1:9 \(after waiting \d+ s for PostgreSQL\)\. Check the database URL or pool given to DurableAgentPlugin/,
      );
    } finally {
      // Nothing holds the connection: no worker was made.
      await connection.close();
    }
  });
});
