/**
 * `DurableAgentPlugin`: the durable agent in a team's own Temporal worker.
 *
 * ```ts
 * const worker = await Worker.create({
 *   connection, taskQueue: 'agent',
 *   workflowsPath: require.resolve('./workflows'), // re-exports agentConversation
 *   plugins: [new DurableAgentPlugin({ tools, model: { name: 'gpt-4.1', apiKey }, database: { url } })],
 * });
 * ```
 *
 * A Temporal `SimplePlugin`: it merges the conversation activities (under
 * prefixed types), the workflow interceptor module and the payload codecs
 * into the team's options. Its one addition is asynchronous: while the
 * worker is created, before anything polls, it migrates the project's tables
 * and checks the namespace's search attributes (`configureWorker`).
 */
import path from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { SimplePlugin, type SimplePluginOptions } from '@temporalio/plugin';
import type { BundleOptions, NativeConnection, Worker, WorkerOptions } from '@temporalio/worker';
import type { Pool } from 'pg';
import { activityRegistrations, createActivities } from '../activities';
import { createOpenAIClient } from '../activities/openai-client';
import { migrate } from '../db/migrations';
import { createPool } from '../db/pool';
import { waitForDatabase } from '../db/wait';
import { ToolRegistry } from '../tools/registry';
import { AgentRegistry, toolsOfAgents } from '../tools/agents';
import { checkGuardrails } from '../tools/guardrails';
import { AgentError } from '../common/errors';
import { logger } from '../common/logger';
import { ensureSearchAttributes, SEARCH_ATTRIBUTE_GROUP_PURPOSE } from './search-attributes';
import { describeBadSearchAttributePrefix } from '../contract';
import { McpConnections } from '../activities/mcp-connections';
import { McpToolsets } from '../activities/mcp-tools';
import { LostWorkerWatch } from './lost-workers';
import { refusePreReleaseConversations } from './pre-release-conversations';
import { agentTables } from '../db/schema';
import { describeBadMcpServers } from '../mcp/protocol';
import type { DurableAgentModelOptions, DurableAgentPluginOptions } from './plugin-options';
import { NotificationDispatcher } from '../notifications/dispatcher';
import { describeBadNotificationOptions } from '../notifications/options';

/** The extension the project's own modules have here: `.ts` from the sources, `.js` from the built package. */
const MODULE_EXTENSION = path.extname(__filename);

/** The module that exports the conversation workflow, for a worker that bundles no workflows of its own. */
export const WORKFLOWS_PATH = path.join(__dirname, '..', 'workflows', `index${MODULE_EXTENSION}`);

/**
 * The workflow interceptor module of the conversation workflow. The plugin
 * adds it to every bundle it sees; a bundle built without the plugin
 * (`bundleWorkflowCode({ workflowsPath, workflowInterceptorModules })`) needs it.
 */
export const WORKFLOW_INTERCEPTOR_MODULES = [
  path.join(__dirname, '..', 'workflows', `interceptors${MODULE_EXTENSION}`),
];

/**
 * `SimplePlugin` typed as Temporal's `WorkerPlugin` contract has it:
 * `Worker.create` awaits `configureWorker`, so it may return a promise, while
 * `SimplePlugin` declares its own synchronous. A widening of the type only
 * (the base class is `SimplePlugin`), for {@link DurableAgentPlugin.configureWorker}.
 */
interface SimplePluginAwaited extends Omit<SimplePlugin, 'configureWorker' | 'configureBundler' | 'runWorker'> {
  configureWorker(options: WorkerOptions): WorkerOptions | Promise<WorkerOptions>;
  configureBundler(options: BundleOptions): BundleOptions;
  runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void>;
}
const SimplePluginAwaited: new (options: SimplePluginOptions) => SimplePluginAwaited = SimplePlugin;

/**
 * The durable agent as a Temporal plugin: add it to `Worker.create({ plugins })`
 * (and, when it carries payload codecs, to the `Client` that starts
 * conversations). A worker given no workflows runs the conversation workflow
 * alone; a worker with workflows of its own must export `agentConversation`
 * from its workflows module (`export { agentConversation } from
 * 'durable-agent-worker/workflow'`).
 */
export class DurableAgentPlugin extends SimplePluginAwaited {
  private readonly settings: DurableAgentPluginOptions;
  private readonly pool: Pool;
  private readonly ownsPool: boolean;
  /** The worker's connections to its MCP servers, closed when the worker stops. */
  private readonly mcp?: McpConnections;
  /** Lost-worker takeover, unless turned off. */
  private readonly lostWorkers?: LostWorkerWatch;
  /** Webhook deliveries, when the options name endpoints. */
  private readonly dispatcher?: NotificationDispatcher;

  /**
   * Checks the options (a bad one throws a `TypeError` naming it) and builds the activities; connects to nothing yet.
   */
  constructor(options: DurableAgentPluginOptions) {
    const badPrefix = describeBadSearchAttributePrefix(options.searchAttributes?.prefix ?? '');
    if (badPrefix) throw new TypeError(`DurableAgentPlugin: searchAttributes.prefix: ${badPrefix}.`);
    const mcpServers = options.mcp?.servers ?? {};
    const problems = Object.keys(mcpServers).length > 0 ? describeBadMcpServers(mcpServers, 'mcp.servers') : [];
    if (problems.length > 0) throw new TypeError(`DurableAgentPlugin: ${problems.join('; ')}.`);
    const notificationProblems =
      options.notifications !== undefined ? describeBadNotificationOptions(options.notifications, 'notifications') : [];
    if (notificationProblems.length > 0)
      throw new TypeError(`DurableAgentPlugin: ${notificationProblems.join('; ')} (docs/notifications.md).`);
    // Tools and agents are checked before anything is opened: a bad declaration stops here.
    const agents = options.agents ?? [];
    if (options.defaultAgent !== undefined && !agents.some((a) => a.name === options.defaultAgent)) {
      throw new TypeError(
        `DurableAgentPlugin: defaultAgent "${options.defaultAgent}" is not one of its agents (${agents.map((a) => a.name).join(', ') || 'none'}).`,
      );
    }
    checkGuardrails(options.guardrails, 'DurableAgentPlugin guardrails', ['input', 'output', 'tool']);
    if (options.approvalPolicy !== undefined && options.approvalPolicy?.kind !== 'approval-policy') {
      throw new TypeError(
        'DurableAgentPlugin: approvalPolicy must be made by approvalPolicy([...rules]), which checks each rule (docs/approval-policies.md).',
      );
    }
    const tools = new ToolRegistry([...new Set([...options.tools, ...toolsOfAgents(agents)])]);
    const agentRegistry = agents.length > 0 ? new AgentRegistry(agents, tools) : undefined;
    const client =
      options.model.client ??
      createOpenAIClient({ apiKey: requireApiKey(options.model), baseUrl: options.model.baseUrl });
    const pool = 'pool' in options.database ? options.database.pool : createPool(options.database.url);
    const tables = agentTables(options.schema);
    const mcp =
      Object.keys(mcpServers).length > 0
        ? new McpConnections(mcpServers, { listTtlMs: options.mcp?.listTtlMs })
        : undefined;
    const activities = activityRegistrations(
      createActivities({
        ...options,
        model: { ...options.model, client },
        pool,
        tools,
        agents: agentRegistry,
        mcp: mcp ? new McpToolsets(pool, tables, mcp, mcpServers) : undefined,
      }),
    );
    const lostWorkers =
      options.lostWorkers?.enabled === false
        ? undefined
        : new LostWorkerWatch(pool, tables, (type) => Object.hasOwn(activities, type), options.lostWorkers);
    const codecs = options.payloadCodecs ?? [];
    super({
      name: 'DurableAgentPlugin',
      activities,
      workerInterceptors: {
        workflowModules: WORKFLOW_INTERCEPTOR_MODULES,
        ...(lostWorkers ? { activity: [lostWorkers.interceptor()] } : {}),
      },
      ...(codecs.length > 0
        ? {
            dataConverter: (existing: DataConverter | undefined): DataConverter => ({
              ...existing,
              payloadCodecs: [...(existing?.payloadCodecs ?? []), ...codecs],
            }),
          }
        : {}),
    });
    this.settings = options;
    this.pool = pool;
    this.ownsPool = 'url' in options.database;
    this.mcp = mcp;
    this.lostWorkers = lostWorkers;
    const { notifications } = options;
    this.dispatcher =
      notifications && notifications.endpoints.length > 0
        ? new NotificationDispatcher(pool, tables, notifications)
        : undefined;
  }

  /**
   * The plugin's one asynchronous step, run by `Worker.create` before anything
   * polls: waits for PostgreSQL and migrates it, registers the namespace's
   * missing search attributes, and refuses a task queue that still has open
   * conversations started before 1.0, so a worker that cannot work fails to be
   * created with an error that says what to check. Then `SimplePlugin`'s
   * merge, with the conversation workflow for a worker that bundles none of its own
   * and a 1-second heartbeat throttle (a cancelled turn stops its model call
   * and tools within about a second; the team's own settings win).
   */
  override async configureWorker(options: WorkerOptions): Promise<WorkerOptions> {
    await this.prepare(options.connection, options.namespace ?? 'default', options.taskQueue);
    const bundlesItsOwn = options.workflowsPath !== undefined || options.workflowBundle !== undefined;
    return super.configureWorker({
      defaultHeartbeatThrottleInterval: '1 second',
      maxHeartbeatThrottleInterval: '1 second',
      ...options,
      workflowsPath: bundlesItsOwn ? options.workflowsPath : WORKFLOWS_PATH,
    });
  }

  /** Adds the interceptor module once (a worker that bundles also passes the modules of its options to the bundler). */
  override configureBundler(options: BundleOptions): BundleOptions {
    const configured = super.configureBundler(options);
    return { ...configured, workflowInterceptorModules: [...new Set(configured.workflowInterceptorModules ?? [])] };
  }

  /**
   * Runs the worker with lost-worker takeover and webhook deliveries beside it; closes what the plugin opened when it
   * stops.
   */
  override async runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    const client = worker.client;
    if (this.lostWorkers && client) {
      const { identity, namespace, taskQueue } = worker.options;
      await this.lostWorkers.start({ client, identity, namespace, taskQueue });
    }
    // The runtime exists once a worker does, and its meter carries the delivery metrics (loaded here, where the worker
    // has it loaded already: the plugin's module loads no native code of its own).
    if (this.dispatcher) this.dispatcher.start((await import('@temporalio/worker')).Runtime.instance().metricMeter);
    try {
      await super.runWorker(worker, next);
    } finally {
      await this.dispatcher?.stop();
      await this.lostWorkers?.stop();
      await this.mcp?.close();
      if (this.ownsPool) await this.pool.end().catch(() => undefined);
    }
  }

  private async prepare(connection: NativeConnection | undefined, namespace: string, taskQueue: string): Promise<void> {
    if (connection) await refusePreReleaseConversations(connection, namespace, taskQueue);
    if (this.settings.migrate ?? true) {
      let applied: number[];
      try {
        await waitForDatabase(this.pool, this.settings.databaseWaitMs);
        applied = await migrate(this.pool, { schema: this.settings.schema });
      } catch (err) {
        if (this.ownsPool) await this.pool.end().catch(() => undefined);
        // A bad schema name or a layout the migration will not touch says so itself.
        if (err instanceof AgentError) throw err;
        throw new Error(
          `The durable agent could not prepare its tables in PostgreSQL: ${(err as Error).message}. ` +
            'Check the database URL or pool given to DurableAgentPlugin, and that the database is up and accepts this user.',
          { cause: err },
        );
      }
      if (applied.length > 0)
        logger.info({ versions: applied, schema: this.settings.schema }, 'applied database migrations');
    }
    // Before the worker polls: events its activities write from the start are for these endpoints too.
    await this.dispatcher?.register();
    if ((this.settings.registerSearchAttributes ?? true) && connection) {
      const { added, off } = await ensureSearchAttributes(connection, namespace, this.settings.searchAttributes);
      if (added.length > 0) logger.info({ added, namespace }, 'registered search attributes');
      for (const { group, why, chosen } of off) {
        const line = `search attribute group "${group}" is off: ${why} Without it, ${SEARCH_ATTRIBUTE_GROUP_PURPOSE[group]}.`;
        if (chosen) logger.info({ group, namespace }, line);
        else logger.warn({ group, namespace }, line);
      }
    }
  }
}

function requireApiKey(model: DurableAgentModelOptions): string {
  if (model.apiKey) return model.apiKey;
  throw new TypeError(
    'DurableAgentPlugin needs a model to call: pass model.apiKey (and model.baseUrl for an OpenAI-compatible endpoint) or model.client.',
  );
}
