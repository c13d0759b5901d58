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
 * Built on Temporal's `SimplePlugin`, which merges the conversation
 * activities (under prefixed types), the workflow interceptor module and the
 * payload codecs into the team's options; around it, the plugin migrates the
 * project's tables and checks the namespace's search attributes while the
 * worker is created, before anything polls.
 */
import path from 'node:path';
import type { DataConverter, PayloadCodec } from '@temporalio/common';
import { SimplePlugin } from '@temporalio/plugin';
import type { ClientOptions, ClientPlugin } from '@temporalio/client';
import type {
  BundleOptions,
  BundlerPlugin,
  NativeConnection,
  ReplayWorkerOptions,
  Worker,
  WorkerOptions,
  WorkerPlugin,
} from '@temporalio/worker';
import type OpenAI from 'openai';
import type { Pool } from 'pg';
import { activityRegistrations, CONVERSATION_ACTIVITY_NAMES, createActivities, type DecisionTrust } from '../activities';
import { createOpenAIClient } from '../activities/openai-client';
import { migrate } from '../db/migrations';
import { createPool } from '../db/pool';
import { waitForDatabase } from '../db/wait';
import { ToolRegistry } from '../tools/registry';
import type { Tool } from '../tools/tool';
import type { ModelPrices } from '../core/pricing';
import { AgentError } from '../errors';
import { logger } from './logger';
import { ensureSearchAttributes, SEARCH_ATTRIBUTE_GROUP_PURPOSE, type SearchAttributeOptions } from './search-attributes';
import { describeBadSearchAttributePrefix } from '../workflows/api';
import { McpConnections } from '../activities/mcp-connections';
import { McpToolsets } from '../activities/mcp-tools';
import { LostWorkerWatch, type LostWorkerOptions } from './lost-workers';
import { agentTables } from '../db/schema';
import { describeBadMcpServers, type McpServers } from '../mcp/protocol';

/** The extension the project's own modules have here: `.ts` from the sources, `.js` from the built package. */
const MODULE_EXTENSION = path.extname(__filename);

/** The module that exports the conversation workflow, for a worker that bundles no workflows of its own. */
export const WORKFLOWS_PATH = path.join(__dirname, '..', 'workflows', `index${MODULE_EXTENSION}`);

/** The workflow interceptor module of the conversation workflow (the plugin adds it to every bundle it sees). */
export const WORKFLOW_INTERCEPTOR_MODULES = [path.join(__dirname, '..', 'workflows', `interceptors${MODULE_EXTENSION}`)];

/** The model the conversations call. */
export interface DurableAgentModelOptions {
  /** Model used when a conversation names none, e.g. `gpt-4.1`. */
  name: string;
  /** An OpenAI SDK client of your own. Turn its retries off (`maxRetries: 0`): Temporal retries model calls. */
  client?: OpenAI;
  /** API key for a client built here (when `client` is unset). */
  apiKey?: string;
  /** Base URL of an OpenAI-compatible endpoint for a client built here; the SDK's default when unset. */
  baseUrl?: string;
  /** Context window of the models used, in tokens, when a conversation does not say (default: known per model name, else 128000). */
  contextWindow?: number;
  /**
   * Prices by model name in US dollars per million tokens, e.g.
   * `{ 'gpt-4.1': { input: 2, output: 8 } }`: turns and conversations then
   * report their cost, and cost budgets apply. No built-in prices.
   */
  prices?: ModelPrices;
}

/** Options of {@link DurableAgentPlugin}. */
export interface DurableAgentPluginOptions {
  /** The tools the model may call, made with `tool({...})`. */
  tools: readonly Tool[];
  model: DurableAgentModelOptions;
  /**
   * PostgreSQL with the transcripts: a pool of yours (left open when the
   * worker stops), or a URL the plugin opens a pool on (closed when the worker stops).
   */
  database: { pool: Pool } | { url: string };
  /**
   * PostgreSQL schema of the project's tables (a plain lowercase SQL
   * identifier, not `public`); every query names it, so a pool shared with
   * your own queries is fine. Default `durable_agent`.
   */
  schema?: string;
  /** Apply the project's migrations before the worker polls. Default true. */
  migrate?: boolean;
  /**
   * How long a starting worker waits for PostgreSQL to be reachable before
   * it migrates (a database restarting delays the start rather than failing
   * it), in ms. Default 60 000.
   */
  databaseWaitMs?: number;
  /** Register the conversation's search attributes where missing before the worker polls. Default true. */
  registerSearchAttributes?: boolean;
  /**
   * Which search attribute groups to register and under which names: by
   * default each group that fits in the namespace (status, approvals,
   * unknownEffects, usage, in that order), the others left off and logged;
   * `groups` asks for exactly those (one that does not fit fails the start),
   * `prefix` puts a prefix before every name (clients need the same prefix).
   * See docs/search-attributes.md.
   */
  searchAttributes?: SearchAttributeOptions;
  /**
   * Also register the activities under their bare names (`callModel`), which
   * conversations begun before the prefixed types schedule until they continue
   * as new. Default true; names the team's own activities already use are
   * left to them. Turn it off when no such conversation can exist.
   */
  bareActivityTypes?: boolean;
  /**
   * Payload codecs (encryption, compression) applied after the team's own
   * ones: `dataConverter.payloadCodecs` of the worker and the client become
   * the team's codecs followed by these, and the rest of the team's data
   * converter is kept.
   */
  payloadCodecs?: PayloadCodec[];
  /** Tool results longer than this many characters travel through workflow history as a preview only. Default 4096. */
  inlineResultLimit?: number;
  /** Tool calls of one model response that run; the rest are answered with an error the model reads. Default 16. */
  maxParallelToolCalls?: number;
  /**
   * Keys that authenticate decisions signed by the HTTP API (the same keys the
   * API signs with), and whether unsigned decisions are refused (default: yes
   * when keys are given). Without keys, every decision applies and is recorded
   * as unauthenticated: anyone who can signal the workflow can decide.
   */
  decisionTrust?: DecisionTrust;
  /**
   * MCP servers whose tools conversations may use (`ConversationInput.mcpServers`),
   * by name: `{ crm: { command: 'node', args: ['crm-mcp.js'] }, tickets: { url: 'https://…/mcp', headers: {…} } }`.
   * Every worker of the task queue must have the same servers. See the README, "Tools from MCP servers".
   */
  mcp?: { servers: McpServers; listTtlMs?: number };
  /**
   * Lost-worker takeover: peers notice a worker killed outright within about
   * a second (its PostgreSQL session ends) and have its model calls and tools
   * retried at once instead of at their heartbeat timeouts. On by default;
   * `{ enabled: false }` leaves a killed worker's attempts to the timeouts.
   * See the README, "When a worker dies".
   */
  lostWorkers?: LostWorkerOptions;
}

/**
 * The durable agent as a Temporal plugin: add it to `Worker.create({ plugins })`
 * (and, when it carries payload codecs, to the `Client` that starts
 * conversations). A worker given no workflows runs the conversation workflow
 * alone; a worker with workflows of its own must export `agentConversation`
 * from its workflows module (`export { agentConversation } from
 * 'durable-agent-worker/workflow'`).
 */
export class DurableAgentPlugin implements WorkerPlugin, ClientPlugin, BundlerPlugin {
  readonly name = 'DurableAgentPlugin';
  private readonly pool: Pool;
  private readonly ownsPool: boolean;
  private readonly settings: DurableAgentPluginOptions;
  /** Temporal's plugin merges our activities, interceptor module and codecs into the team's options. */
  private readonly merge: SimplePlugin;
  /** The worker's connections to its MCP servers, closed when the worker stops. */
  private readonly mcp?: McpConnections;
  /** Lost-worker takeover, unless turned off. */
  private readonly lostWorkers?: LostWorkerWatch;

  constructor(options: DurableAgentPluginOptions) {
    this.settings = options;
    const badPrefix = describeBadSearchAttributePrefix(options.searchAttributes?.prefix ?? '');
    if (badPrefix) throw new TypeError(`DurableAgentPlugin: searchAttributes.prefix: ${badPrefix}.`);
    this.ownsPool = 'url' in options.database;
    this.pool = 'pool' in options.database ? options.database.pool : createPool(options.database.url);
    const mcpServers = options.mcp?.servers ?? {};
    if (Object.keys(mcpServers).length > 0) {
      const problems = describeBadMcpServers(mcpServers, 'mcp.servers');
      if (problems.length > 0) throw new TypeError(`DurableAgentPlugin: ${problems.join('; ')}.`);
      this.mcp = new McpConnections(mcpServers, { listTtlMs: options.mcp?.listTtlMs });
    }
    const activities = createActivities({
      mcp: this.mcp ? new McpToolsets(this.pool, agentTables(options.schema), this.mcp, mcpServers) : undefined,
      pool: this.pool,
      openai: options.model.client ?? createOpenAIClient({ apiKey: requireApiKey(options.model), baseUrl: options.model.baseUrl }),
      tools: new ToolRegistry(options.tools),
      defaultModel: options.model.name,
      contextWindow: options.model.contextWindow,
      inlineResultLimit: options.inlineResultLimit,
      maxParallelToolCalls: options.maxParallelToolCalls,
      schema: options.schema,
      decisionTrust: options.decisionTrust,
      prices: options.model.prices,
    });
    const codecs = options.payloadCodecs ?? [];
    const bare = options.bareActivityTypes ?? true;
    if (options.lostWorkers?.enabled !== false) {
      const types = new Set(Object.keys(activityRegistrations(activities, { bare })));
      this.lostWorkers = new LostWorkerWatch(this.pool, agentTables(options.schema), (type) => types.has(type), options.lostWorkers);
    }
    this.merge = new SimplePlugin({
      name: this.name,
      // The team's own activities win over the bare names; the prefixed types are ours.
      activities: (existing: object = {}) => {
        const shadowed = CONVERSATION_ACTIVITY_NAMES.filter((name) => bare && name in existing);
        if (shadowed.length > 0) {
          logger.warn(
            { activities: shadowed },
            "the worker's own activities use bare names of the durable agent's activities; conversations begun before its prefixed activity types would call them",
          );
        }
        return { ...activityRegistrations(activities, { bare }), ...existing, ...activityRegistrations(activities, { bare: false }) };
      },
      workerInterceptors: { workflowModules: WORKFLOW_INTERCEPTOR_MODULES, ...(this.lostWorkers ? { activity: [this.lostWorkers.interceptor()] } : {}) },
      ...(codecs.length > 0
        ? { dataConverter: (existing: DataConverter | undefined): DataConverter => ({ ...existing, payloadCodecs: [...(existing?.payloadCodecs ?? []), ...codecs] }) }
        : {}),
    });
  }

  /** Adds the payload codecs, after the client's own. */
  configureClient(options: ClientOptions): ClientOptions {
    return this.merge.configureClient(options);
  }

  /**
   * Migrates the database and checks the namespace's search attributes (so
   * `Worker.create` fails with a clear error before anything polls), then adds
   * the activities, the interceptor module, the codecs, cancellation-friendly
   * heartbeat defaults, and the conversation workflow when the worker has no
   * workflows of its own.
   */
  async configureWorker(options: WorkerOptions): Promise<WorkerOptions> {
    await this.prepare(options.connection, options.namespace ?? 'default');
    const bundlesItsOwn = options.workflowsPath !== undefined || options.workflowBundle !== undefined;
    return this.merge.configureWorker({
      // Cancellation reaches a running model call or tool only with a heartbeat's answer: a cancelled
      // turn stops them within about a second. A team's own settings win.
      defaultHeartbeatThrottleInterval: '1 second',
      maxHeartbeatThrottleInterval: '1 second',
      ...options,
      workflowsPath: bundlesItsOwn ? options.workflowsPath : WORKFLOWS_PATH,
    });
  }

  /** Replays need the interceptor module and the codecs, nothing else. */
  configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    return this.merge.configureReplayWorker(options);
  }

  /** Adds the interceptor module once (a worker that bundles also passes its modules to the bundler). */
  configureBundler(options: BundleOptions): BundleOptions {
    const configured = this.merge.configureBundler(options);
    return { ...configured, workflowInterceptorModules: [...new Set(configured.workflowInterceptorModules ?? [])] };
  }

  /** Runs the worker (and lost-worker takeover beside it); closes the pool the plugin opened when it stops. */
  async runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    const client = worker.client;
    if (this.lostWorkers && client) {
      const { identity, namespace, taskQueue } = worker.options;
      await this.lostWorkers.start({ client, identity, namespace, taskQueue });
    }
    try {
      await next(worker);
    } finally {
      await this.lostWorkers?.stop();
      await this.mcp?.close();
      if (this.ownsPool) await this.pool.end().catch(() => undefined);
    }
  }

  private async prepare(connection: NativeConnection | undefined, namespace: string): Promise<void> {
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
      if (applied.length > 0) logger.info({ versions: applied, schema: this.settings.schema }, 'applied database migrations');
    }
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
