/**
 * Per-file test environment on the shared real servers: a fresh PostgreSQL
 * database (migrated: the project's tables in the default schema
 * `durable_agent`; and the back-office demo's tables set up in `public`), a
 * scripted model server speaking real HTTP, a real worker on its own task
 * queue, and the project's client.
 */
import type { ApprovalPolicy } from '../../src/policies/approval-policy';
import type { McpServers } from '../../src/mcp/protocol';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { Client as PgClient, type Pool } from 'pg';
import { expect, inject } from 'vitest';
import { createOpenAIClient } from '../../src/activities/openai-client';
import { AgentClient } from '../../src/client/client';
import { connectionOptions, loadTemporalConnection } from '../../src/app/temporal-connection';
import { migrate } from '../../src/db/migrations';
import { createPool } from '../../src/db/pool';
import { agentTables, type AgentTables } from '../../src/db/schema';
import { startTcpProxy, type TcpProxy } from './tcp-proxy';
import { requestsWithUserText } from './model-requests';
import { startModelServer, type ModelServer, type ModelServerOptions } from '../../src/testing';
import { createAgentWorker } from '../../src/worker/worker';
import type { ModelPrices } from '../../src/core/pricing';
import type { DecisionTrust } from '../../src/common/decision-signing';
import { backofficeTools } from '../../src/demo/tools';
import { setupBackofficeDemo } from '../../src/demo/data';
import type { Tool } from '../../src/tools/tool';
import type { Agent } from '../../src/tools/agents';
import type { Guardrail } from '../../src/tools/guardrails';
import type { SearchAttributeOptions } from '../../src/contract';
import type { ModelApi } from '../../src/contract/model-api';
import type { NotificationOptions } from '../../src/notifications/options';

try {
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  // already installed in this process
}

/** Options of {@link startHarness}. */
export interface HarnessOptions {
  /** Tools on the worker; the back-office demo tools when unset. */
  tools?: Tool[];
  /** Agents on the worker, and the one of conversations that name none. */
  agents?: Agent[];
  /** The worker's guardrails (the plugin's `guardrails`). */
  guardrails?: Guardrail[];
  /** The worker's approval policy (the plugin's `approvalPolicy`). */
  approvalPolicy?: ApprovalPolicy;
  defaultAgent?: string;
  inlineResultLimit?: number;
  /** Start an in-process worker. Default true. */
  worker?: boolean;
  dialect?: ModelServerOptions['dialect'];
  /**
   * The model server's {@link ModelServerOptions.textDeltaChars}: its streamed text in deltas of at most this many
   * characters (three deltas when unset). The files that read streamed text run with 2 (it costs no time), so that a
   * split of the API's streams, which timing decides, falls inside a sentence. It does not make the worker publish
   * the deltas apart (it sends what it has every 50 ms); a reply's `stream: { chunkDelayMs: 60 }` does, at 60 ms a
   * delta. Read a stream's text as a client assembles it: `stream-bodies.ts`.
   */
  textDeltaChars?: number;
  /** A Temporal server of the test's own; the run's shared dev server when unset. */
  temporalAddress?: string;
  /** The in-process worker's limit of tool calls per response. */
  maxParallelToolCalls?: number;
  /** The model server's context window in tokens (none when unset). */
  contextWindow?: number;
  /** The in-process worker's context window setting (per model name when unset). */
  workerContextWindow?: number;
  /** The in-process worker's cache size in conversations (the SDK's default when unset). */
  maxCachedConversations?: number;
  /** The in-process worker reaches PostgreSQL through a TCP proxy the test can cut (`databaseProxy`). */
  databaseProxy?: boolean;
  /** The in-process worker's decision keys (decisions signed by the HTTP API). */
  decisionTrust?: DecisionTrust;
  /** The in-process worker's prices by model name. */
  modelPrices?: ModelPrices;
  /** The in-process worker's MCP servers. */
  mcpServers?: McpServers;
  /** The Temporal namespace of the worker and the clients (it must exist); `default` when unset. */
  namespace?: string;
  /** The search attribute groups and prefix of the in-process worker and the client. */
  searchAttributes?: SearchAttributeOptions;
  /** The API the in-process worker's model calls speak when a conversation or agent does not choose (`model.api`). */
  modelApi?: ModelApi;
  /** The in-process worker's webhooks (the plugin's `notifications`). */
  notifications?: NotificationOptions;
}

/** What a test file works with. */
export interface Harness {
  temporalAddress: string;
  /**
   * The standard variables that reach this harness's Temporal server:
   * TEMPORAL_ADDRESS, and against the cluster its TEMPORAL_TLS_* (CA, client
   * certificate), for a CLI or worker process.
   */
  temporalEnv: Record<string, string>;
  /** The namespace of the worker and the clients. */
  namespace: string;
  databaseUrl: string;
  taskQueue: string;
  model: ModelServer;
  pool: Pool;
  /** The project's tables in the harness database (default schema), for the transcript-store functions. */
  tables: AgentTables;
  client: AgentClient;
  temporal: Client;
  worker?: Worker;
  /** A fresh conversation id. */
  newConversationId(prefix?: string): string;
  /** Requests the model server received (either API) whose messages or input items include `marker` in a user message. */
  requestsFor(marker: string): Record<string, unknown>[];
  /** Asserts the scripted model server never saw an invalid request. */
  expectOnlyValidModelRequests(): void;
  /** The proxy between the in-process worker and PostgreSQL, with `databaseProxy`. */
  databaseProxy?: TcpProxy;
  /** Environment for a worker process (`src/main.ts`) that serves this harness. */
  workerEnv(extra?: Record<string, string>): Record<string, string>;
  stop(): Promise<void>;
}

/** Creates an empty database on the run's shared PostgreSQL server; returns its URL. */
export async function createTestDatabase(): Promise<string> {
  const databaseName = `t_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = new PgClient({ connectionString: inject('postgresAdminUrl') });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${databaseName}`);
  } finally {
    await admin.end();
  }
  return inject('postgresAdminUrl').replace(/\/[^/]+$/, `/${databaseName}`);
}

/** Builds a harness; call `stop()` in `afterAll`. */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const temporalAddress = options.temporalAddress ?? inject('temporalAddress');
  const temporalEnv = options.temporalAddress ? { TEMPORAL_ADDRESS: options.temporalAddress } : inject('temporalEnv');
  const { tls } = connectionOptions(loadTemporalConnection(temporalEnv));
  const databaseUrl = await createTestDatabase();
  const pool = createPool(databaseUrl);
  await migrate(pool);
  // Most tests' tools include the demo's, whose tables only the demo sets up.
  await setupBackofficeDemo(pool);

  const model = await startModelServer({
    dialect: options.dialect,
    contextWindow: options.contextWindow,
    textDeltaChars: options.textDeltaChars,
  });
  let databaseProxy: TcpProxy | undefined;
  let workerPool = pool;
  if (options.databaseProxy) {
    const url = new URL(databaseUrl);
    databaseProxy = await startTcpProxy({ host: url.hostname, port: Number(url.port) });
    url.hostname = '127.0.0.1';
    url.port = String(databaseProxy.port);
    workerPool = createPool(url.toString());
  }
  const taskQueue = `test-${randomUUID()}`;
  const namespace = options.namespace ?? 'default';
  const clientConnection = await Connection.connect({ address: temporalAddress, tls });
  const temporal = new Client({ connection: clientConnection, namespace });
  const client = await AgentClient.connect({
    temporalAddress,
    tls,
    databaseUrl,
    taskQueue,
    namespace,
    searchAttributes: options.searchAttributes,
  });

  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  let workerConnection: NativeConnection | undefined;
  if (options.worker !== false) {
    workerConnection = await NativeConnection.connect({ address: temporalAddress, tls });
    worker = await createAgentWorker({
      connection: workerConnection,
      namespace,
      taskQueue,
      database: { pool: workerPool },
      model: {
        name: 'scripted-model',
        client: createOpenAIClient({ apiKey: 'test-key', baseUrl: model.url }),
        contextWindow: options.workerContextWindow,
        prices: options.modelPrices,
        api: options.modelApi,
      },
      tools: options.tools ?? backofficeTools(),
      agents: options.agents,
      guardrails: options.guardrails,
      approvalPolicy: options.approvalPolicy,
      defaultAgent: options.defaultAgent,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      inlineResultLimit: options.inlineResultLimit,
      maxParallelToolCalls: options.maxParallelToolCalls,
      maxCachedConversations: options.maxCachedConversations,
      decisionTrust: options.decisionTrust,
      mcp: options.mcpServers ? { servers: options.mcpServers } : undefined,
      searchAttributes: options.searchAttributes,
      notifications: options.notifications,
    });
    running = worker.run();
  }

  return {
    temporalAddress,
    temporalEnv,
    namespace,
    databaseUrl,
    taskQueue,
    workerEnv: (extra = {}) => ({
      ...temporalEnv,
      TEMPORAL_NAMESPACE: namespace,
      TEMPORAL_TASK_QUEUE: taskQueue,
      DATABASE_URL: databaseUrl,
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: model.url,
      // The tests' scripts call the demo tools directly: one unnamed agent with every tool, not the demo's agents.
      AGENT_DEFAULT_AGENT: 'none',
      ...extra,
    }),
    model,
    pool,
    tables: agentTables(),
    databaseProxy,
    client,
    temporal,
    worker,
    newConversationId: (prefix = 'conv') => `${prefix}-${randomUUID().slice(0, 8)}`,
    requestsFor: (marker) => requestsWithUserText(model.requests, marker),
    expectOnlyValidModelRequests: () => {
      expect(model.invalidRequests().map((r) => r.error?.body)).toEqual([]);
    },
    stop: async () => {
      if (worker && worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await workerConnection?.close();
      await client.close();
      await clientConnection.close();
      await model.close();
      await databaseProxy?.close();
      if (workerPool !== pool) await workerPool.end();
      await pool.end();
    },
  };
}

/** Asks the conversation one more question and expects its answer: whatever happened before, it still answers. */
export async function expectAnswersNextMessage(h: Harness, conversationId: string): Promise<void> {
  h.model.enqueue({ content: 'Still here.' });
  const { turn, answer } = await h.client.ask(conversationId, 'are you still there?');
  expect(turn.outcome).toBe('answered');
  expect(answer).toBe('Still here.');
}
