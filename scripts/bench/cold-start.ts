/**
 * Cold start: a worker process spawned on a fresh task queue while its first
 * conversation is already waiting; from the spawn to that conversation's
 * answer (one tool step, model without latency), and to the worker's ready
 * line. First with a fresh data folder each time (the workflow bundle made),
 * then restarted on the first one's folder (the bundle reused, as a worker
 * restarted in place finds it).
 */
import { AgentClient } from '../../src/client/client';
import { AnswerWatcher } from './answer-watcher';
import { NOOP_TOOL } from './bench-tools';
import { checkModelRequests, projectWorkerEnv, type BenchContext } from './context';
import { turnMessage } from './responder';
import { PROJECT_WORKER, spawnWorker } from './worker-process';

/** One cold start. */
export interface ColdStart {
  /**
   * Spawn → the worker printed its ready line (configuration, migrations, search attributes, workflow bundle,
   * connection).
   */
  readyMs: number;
  /** Spawn → the first conversation's answer stored. */
  firstAnswerMs: number;
  /**
   * Whether the worker made its workflow bundle (a fresh data folder) or reused the one an earlier start made there.
   */
  bundle: 'made' | 'reused';
}

/** Starts `options.coldStarts` worker processes one after the other. */
export async function benchColdStart(ctx: BenchContext): Promise<ColdStart[]> {
  const { stack, options, log } = ctx;
  const watcher = new AnswerWatcher(stack.pool);
  const results: ColdStart[] = [];
  try {
    for (let i = 0; i < 2 * options.coldStarts; i++) {
      const bundle = i < options.coldStarts ? 'made' : 'reused';
      const taskQueue = `bench-cold-${ctx.runTag}-${i}`;
      const client = await AgentClient.connect({
        temporalAddress: stack.temporal.address,
        tls: stack.temporal.tls,
        taskQueue,
        databaseUrl: stack.databaseUrl,
      });
      const closeClient = ctx.cleanup.add('cold-start client', () => client.close());
      const id = `bench-${ctx.runTag}-cold-${i}`;
      // The name is the data folder: a restart runs in the first start's, where its bundle is.
      const name = `cold-worker-${bundle === 'made' ? i : 0}`;
      const worker = spawnWorker({
        worker: PROJECT_WORKER,
        env: projectWorkerEnv(ctx, taskQueue),
        dir: stack.scratch,
        name,
      });
      const stopWorker = ctx.cleanup.add('cold-start worker', () => worker.stop());
      try {
        const answered = watcher.answered(id, 180_000);
        await client.sendMessage(id, turnMessage({ steps: 1, latencyMs: 0, tool: NOOP_TOOL }));
        const readyAt = await worker.ready;
        const answeredAt = await answered;
        results.push({ readyMs: readyAt - worker.spawnedAt, firstAnswerMs: answeredAt - worker.spawnedAt, bundle });
        log(
          `cold start ${i + 1}/${2 * options.coldStarts} (bundle ${bundle}): ready after ${readyAt - worker.spawnedAt} ms, first answer after ${answeredAt - worker.spawnedAt} ms`,
        );
      } finally {
        await stopWorker();
        await closeClient();
      }
    }
    checkModelRequests(ctx, 'cold start');
    return results;
  } finally {
    watcher.stop();
  }
}
