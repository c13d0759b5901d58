/**
 * The standalone agent worker (`npm start`, tests): a worker of its own on
 * one task queue, built with {@link DurableAgentPlugin} like any team's.
 */
import { Worker, type WorkerOptions } from '@temporalio/worker';
import { DurableAgentPlugin } from './plugin';
import type { DurableAgentPluginOptions } from './plugin-options';

/**
 * What the standalone worker needs: the plugin's options, and the worker's
 * own (Temporal's). `plugins` are more worker plugins, after the agent's
 * (Temporal's `OpenTelemetryPlugin` for traces); with a prebuilt
 * `workflowBundle` (tests build one once, with `WORKFLOW_INTERCEPTOR_MODULES`),
 * their workflow interceptor modules must be in the bundle: the SDK adds none
 * to a bundle made already.
 */
export interface AgentWorkerOptions
  extends
    DurableAgentPluginOptions,
    Pick<WorkerOptions, 'connection' | 'namespace' | 'taskQueue' | 'workflowBundle' | 'dataConverter' | 'plugins'> {
  /**
   * Conversations kept in memory (Temporal's sticky cache, `maxCachedWorkflows`);
   * the others are rebuilt from history when they need the worker. The SDK's
   * default (from the heap size) when unset.
   */
  maxCachedConversations?: number;
}

/** Creates (does not run) a worker for the conversation workflow. */
export async function createAgentWorker(options: AgentWorkerOptions): Promise<Worker> {
  const { connection, namespace, taskQueue, workflowBundle, dataConverter, plugins, maxCachedConversations, ...agent } =
    options;
  return Worker.create({
    connection,
    namespace,
    taskQueue,
    workflowBundle,
    ...(dataConverter ? { dataConverter } : {}),
    plugins: [new DurableAgentPlugin(agent), ...(plugins ?? [])],
    ...cacheOptions(maxCachedConversations),
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
function cacheOptions(
  maxCachedConversations: number | undefined,
): Pick<WorkerOptions, 'maxCachedWorkflows' | 'maxConcurrentWorkflowTaskExecutions'> {
  if (maxCachedConversations === undefined) return {};
  return {
    maxCachedWorkflows: maxCachedConversations,
    maxConcurrentWorkflowTaskExecutions: maxCachedConversations,
  };
}
