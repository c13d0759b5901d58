/** Builds the agent worker: the conversation workflow plus its activities, on one task queue. */
import path from 'node:path';
import { NativeConnection, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import type OpenAI from 'openai';
import type { Pool } from 'pg';
import { createActivities } from '../activities';
import { ToolRegistry } from '../tools/registry';
import type { Tool } from '../tools/tool';

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
  /** A prebuilt workflow bundle (tests build one once); the workflows are bundled at start when unset. */
  workflowBundle?: WorkflowBundleOption;
  /** Tool results longer than this travel through workflow history as a preview only. */
  inlineResultLimit?: number;
  /** Tool calls of one model response that run; the rest are answered with an error the model reads. Default 16. */
  maxParallelToolCalls?: number;
  /**
   * PostgreSQL schema of the project's tables, as `migrate(pool, { schema })` created them
   * (a plain lowercase SQL identifier). Default `durable_agent`.
   */
  schema?: string;
}

/** Path of the workflows module, for bundling (the project runs from its TypeScript sources). */
export const WORKFLOWS_PATH = path.join(__dirname, '..', 'workflows', 'index.ts');

/**
 * Workflow interceptor modules every conversation workflow runs with; pass them to
 * `bundleWorkflowCode({ workflowInterceptorModules })` when building a bundle.
 */
export const WORKFLOW_INTERCEPTOR_MODULES = [path.join(__dirname, '..', 'workflows', 'interceptors.ts')];

/** Creates (does not run) a worker for the conversation workflow. */
export async function createAgentWorker(options: AgentWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    // A prebuilt bundle carries its interceptors (see WORKFLOW_INTERCEPTOR_MODULES); bundling here adds them.
    ...(options.workflowBundle
      ? { workflowBundle: options.workflowBundle }
      : { workflowsPath: WORKFLOWS_PATH, interceptors: { workflowModules: WORKFLOW_INTERCEPTOR_MODULES } }),
    activities: createActivities({
      pool: options.pool,
      openai: options.openai,
      tools: new ToolRegistry(options.tools),
      defaultModel: options.defaultModel,
      contextWindow: options.contextWindow,
      inlineResultLimit: options.inlineResultLimit,
      maxParallelToolCalls: options.maxParallelToolCalls,
      schema: options.schema,
    }),
    shutdownGraceTime: '10 seconds',
    // When a worker dies, its cached workflows' next tasks wait this long before another worker takes them.
    stickyQueueScheduleToStartTimeout: '3 seconds',
    // Cancellation reaches an activity only with a heartbeat's answer: send them often enough that a
    // cancelled turn stops its model call and tools within about a second.
    defaultHeartbeatThrottleInterval: '1 second',
    maxHeartbeatThrottleInterval: '1 second',
  });
}
