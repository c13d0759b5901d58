/**
 * Cold start: a worker process spawned on a fresh task queue while its first
 * conversation is already waiting; from the spawn to that conversation's
 * answer (one tool step, model without latency), and to the worker's ready line.
 */
import { AgentClient } from '../../src/client/client';
import { AnswerWatcher } from './answer-watcher';
import { NOOP_TOOL } from './bench-tools';
import { checkModelRequests, projectWorkerEnv, type BenchContext } from './context';
import { turnMessage } from './responder';
import { PROJECT_WORKER, spawnWorker } from './worker-process';

/** One cold start. */
export interface ColdStart {
  /** Spawn → the worker printed its ready line (configuration, migrations, search attributes, workflow bundle, connection). */
  readyMs: number;
  /** Spawn → the first conversation's answer stored. */
  firstAnswerMs: number;
}

/** Starts `options.coldStarts` worker processes one after the other. */
export async function benchColdStart(ctx: BenchContext): Promise<ColdStart[]> {
  const { stack, options, log } = ctx;
  const watcher = new AnswerWatcher(stack.pool);
  const results: ColdStart[] = [];
  try {
    for (let i = 0; i < options.coldStarts; i++) {
      const taskQueue = `bench-cold-${ctx.runTag}-${i}`;
      const client = await AgentClient.connect({ temporalAddress: stack.temporal.address, tls: stack.temporal.tls, taskQueue, databaseUrl: stack.databaseUrl });
      const closeClient = ctx.cleanup.add('cold-start client', () => client.close());
      const id = `bench-${ctx.runTag}-cold-${i}`;
      const worker = spawnWorker({ worker: PROJECT_WORKER, env: projectWorkerEnv(ctx, taskQueue), dir: stack.scratch, name: `cold-worker-${i}` });
      const stopWorker = ctx.cleanup.add('cold-start worker', () => worker.stop());
      try {
        const answered = watcher.answered(id, 180_000);
        await client.sendMessage(id, turnMessage({ steps: 1, latencyMs: 0, tool: NOOP_TOOL }));
        const readyAt = await worker.ready;
        const answeredAt = await answered;
        results.push({ readyMs: readyAt - worker.spawnedAt, firstAnswerMs: answeredAt - worker.spawnedAt });
        log(`cold start ${i + 1}/${options.coldStarts}: ready after ${readyAt - worker.spawnedAt} ms, first answer after ${answeredAt - worker.spawnedAt} ms`);
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
