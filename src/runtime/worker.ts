/**
 * The standalone agent worker (`npm start`, tests): a worker of its own on
 * one task queue, built with {@link DurableAgentPlugin} like any team's.
 */
import { NativeConnection, Worker, type WorkerOptions, type WorkerPlugin, type WorkflowBundleOption } from '@temporalio/worker';
import type OpenAI from 'openai';
import type { Pool } from 'pg';
import type { Tool } from '../tools/tool';
import { DurableAgentPlugin } from './plugin';
import type { DecisionTrust } from '../activities/decision-signing';
import type { ModelPrices } from '../core/pricing';
import type { DataConverter } from '@temporalio/common';
import type { McpServers } from '../mcp/protocol';
import type { LostWorkerOptions } from './lost-workers';
import type { SearchAttributeOptions } from './search-attributes';

export { WORKFLOW_INTERCEPTOR_MODULES, WORKFLOWS_PATH } from './plugin';

/** What a worker needs. */
export interface AgentWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  pool: Pool;
  openai: OpenAI;
  /** Model used when a conversation names none. */
  defaultModel: string;
  /** Context window of the models used, in tokens, when a conversation does not say (default: known per model name, else 128000). */
  contextWindow?: number;
  tools: readonly Tool[];
  /** A prebuilt workflow bundle (tests build one once, with `WORKFLOW_INTERCEPTOR_MODULES`); the workflows are bundled at start when unset. */
  workflowBundle?: WorkflowBundleOption;
  /** Tool results longer than this travel through workflow history as a preview only. */
  inlineResultLimit?: number;
  /** Tool calls of one model response that run; the rest are answered with an error the model reads. Default 16. */
  maxParallelToolCalls?: number;
  /**
   * Conversations kept in memory (Temporal's sticky cache, `maxCachedWorkflows`);
   * the others are rebuilt from history when they need the worker. The SDK's
   * default (from the heap size) when unset.
   */
  maxCachedConversations?: number;
  /**
   * PostgreSQL schema of the project's tables, as `migrate(pool, { schema })` created them
   * (a plain lowercase SQL identifier). Default `durable_agent`.
   */
  schema?: string;
  /** Keys that authenticate decisions signed by the HTTP API; see `DurableAgentPluginOptions.decisionTrust`. */
  decisionTrust?: DecisionTrust;
  /** Prices by model name (US dollars per million tokens); see `DurableAgentModelOptions.prices`. */
  modelPrices?: ModelPrices;
  /** Payload codecs and failure converter (encrypted payloads: `encryptingDataConverter`); the SDK's default when unset. */
  dataConverter?: DataConverter;
  /**
   * More worker plugins, after the agent's: Temporal's `OpenTelemetryPlugin`
   * for traces. With a prebuilt `workflowBundle`, their workflow interceptor
   * modules must be in the bundle (`bundleWorkflowsApart`'s
   * `workflowInterceptorModules`): the SDK adds none to a bundle made already.
   */
  plugins?: WorkerPlugin[];
  /** MCP servers whose tools conversations may use; see `DurableAgentPluginOptions.mcp`. */
  mcpServers?: McpServers;
  /** Lost-worker takeover (on by default). */
  lostWorkers?: LostWorkerOptions;
  /** The search attribute groups to register and their prefix; see `DurableAgentPluginOptions.searchAttributes`. */
  searchAttributes?: SearchAttributeOptions;
}

/** Creates (does not run) a worker for the conversation workflow. */
export async function createAgentWorker(options: AgentWorkerOptions): Promise<Worker> {
  const plugin = new DurableAgentPlugin({
    tools: options.tools,
    model: { name: options.defaultModel, client: options.openai, contextWindow: options.contextWindow, prices: options.modelPrices },
    database: { pool: options.pool },
    inlineResultLimit: options.inlineResultLimit,
    maxParallelToolCalls: options.maxParallelToolCalls,
    schema: options.schema,
    decisionTrust: options.decisionTrust,
    ...(options.mcpServers ? { mcp: { servers: options.mcpServers } } : {}),
    ...(options.lostWorkers ? { lostWorkers: options.lostWorkers } : {}),
    ...(options.searchAttributes ? { searchAttributes: options.searchAttributes } : {}),
  });
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    workflowBundle: options.workflowBundle,
    ...(options.dataConverter ? { dataConverter: options.dataConverter } : {}),
    plugins: [plugin, ...(options.plugins ?? [])],
    ...cacheOptions(options.maxCachedConversations),
    shutdownGraceTime: '10 seconds',
    // When a worker dies, its cached workflows' next tasks wait this long before another worker takes them.
    stickyQueueScheduleToStartTimeout: '3 seconds',
  });
}

/**
 * A bounded cache, and as many workflow tasks at once as it holds (the SDK
 * allows no more). Not the SDK's default of 40: a conversation with local
 * activities keeps its workflow task open while its calls run, so 40 tasks
 * would let only 40 conversations progress at once (measured with 100
 * conversations and a 200 ms model: 52.0 steps/s with 40, 66.2 with 100).
 */
function cacheOptions(maxCachedConversations: number | undefined): Pick<WorkerOptions, 'maxCachedWorkflows' | 'maxConcurrentWorkflowTaskExecutions'> {
  if (maxCachedConversations === undefined) return {};
  return {
    maxCachedWorkflows: maxCachedConversations,
    maxConcurrentWorkflowTaskExecutions: maxCachedConversations,
  };
}
