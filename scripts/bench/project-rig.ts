/**
 * A project worker process on a task queue of its own, an `AgentClient` for
 * it and an answer watcher: what the project's parts of the bench drive.
 */
import { AgentClient } from '../../src/client/client';
import { AnswerWatcher } from './answer-watcher';
import { projectWorkerEnv, type BenchContext } from './context';
import {
  BASELINE_WORKER,
  baselineToolsModule,
  PROJECT_WORKER,
  spawnWorker,
  type WorkerProcess,
} from './worker-process';

/** The schema of the `--baseline` worker's tables: its migrations may be older than the working tree's. */
const BASELINE_SCHEMA = 'bench_baseline';

/** What {@link startProjectRig} started; `stop` ends all of it (also registered with the run's cleanup). */
export interface ProjectRig {
  worker: WorkerProcess;
  client: AgentClient;
  watcher: AnswerWatcher;
  taskQueue: string;
  stop(): Promise<void>;
}

/**
 * Spawns the worker (wait for `worker.ready`) on `bench-<name>-<run tag>` and connects a client; `name` also names its
 * log. `baseline`: the worker of the `--baseline` checkout, with its own tools module and tables.
 */
export async function startProjectRig(ctx: BenchContext, name: string, baseline = false): Promise<ProjectRig> {
  const { stack } = ctx;
  const taskQueue = `bench-${name}-${ctx.runTag}`;
  const schema = baseline ? BASELINE_SCHEMA : undefined;
  const worker = spawnWorker({
    worker: baseline ? BASELINE_WORKER : PROJECT_WORKER,
    env: {
      ...projectWorkerEnv(ctx, taskQueue),
      ...(baseline ? { AGENT_TOOLS_MODULE: baselineToolsModule(), AGENT_DATABASE_SCHEMA: BASELINE_SCHEMA } : {}),
    },
    dir: stack.scratch,
    name: `${name}-worker`,
  });
  const stopWorker = ctx.cleanup.add(`${name} worker`, () => worker.stop());
  const client = await AgentClient.connect({
    temporalAddress: stack.temporal.address,
    tls: stack.temporal.tls,
    taskQueue,
    databaseUrl: stack.databaseUrl,
    ...(schema ? { schema } : {}),
  });
  const closeClient = ctx.cleanup.add(`${name} client`, () => client.close());
  const watcher = new AnswerWatcher(stack.pool, undefined, undefined, schema);
  return {
    worker,
    client,
    watcher,
    taskQueue,
    stop: async () => {
      watcher.stop();
      await closeClient();
      await stopWorker();
    },
  };
}
