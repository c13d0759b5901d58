/**
 * Temporal's floor: the floor workflow (`floor-workflows.ts`) with 2 and with
 * 4 no-op activities per step, on its own worker process (`floor-worker.ts`),
 * the same dev server, the same turn shapes and concurrencies as the project.
 */
import { Client, Connection } from '@temporalio/client';
import { checkModelRequests, type BenchContext } from './context';
import type { FloorTurnInput } from './floor-workflows';
import { historyFigures } from './history';
import type { RunTurn } from './measure';
import { measureAtEachLatency } from './phases';
import type { SystemFigures } from './phases';
import { FLOOR_WORKER, spawnWorker } from './worker-process';

/** The floor's figures, per activities per step. */
export interface FloorFigures {
  activitiesPerStep: 2 | 4;
  perLatency: SystemFigures[];
}

/** Measures the floor with 2 and 4 activities per step at every latency of the options. */
export async function benchFloor(ctx: BenchContext): Promise<FloorFigures[]> {
  const { stack, options, log } = ctx;
  const taskQueue = `bench-floor-${ctx.runTag}`;
  const worker = spawnWorker({
    worker: FLOOR_WORKER,
    env: { ...stack.temporal.clientEnv, TEMPORAL_TASK_QUEUE: taskQueue },
    dir: stack.scratch,
    name: 'floor-worker',
  });
  const stopWorker = ctx.cleanup.add('floor worker', () => worker.stop());
  const connection = await Connection.connect({ address: stack.temporal.address, tls: stack.temporal.tls });
  const closeConnection = ctx.cleanup.add('floor client', () => connection.close());
  const client = new Client({ connection, namespace: 'default' });
  try {
    await worker.ready;
    log(`floor worker ready (pid ${worker.pid}) after ${Date.now() - worker.spawnedAt} ms`);
    const meter = { worker: worker.pid, temporal: stack.temporalPid, postmaster: stack.postmasterPid };
    const results: FloorFigures[] = [];
    for (const activitiesPerStep of [2, 4] as const) {
      const runTurn: RunTurn = async (id, steps, latencyMs) => {
        const started = Date.now();
        const input: FloorTurnInput = { steps, activitiesPerStep, latencyMs };
        const ran = await client.workflow.execute('floorTurn', { taskQueue, workflowId: id, args: [input] });
        const expected = activitiesPerStep === 4 ? 4 * steps + 3 : 2 * steps + 1;
        if (ran !== expected) throw new Error(`floor turn ${id} ran ${String(ran)} activities, expected ${expected}.`);
        return Date.now() - started;
      };
      const perLatency = await measureAtEachLatency({
        options,
        runTurn,
        meter,
        idPrefix: `bench-${ctx.runTag}-floor${activitiesPerStep}-`,
        label: `floor ${activitiesPerStep} activities`,
        log,
        history: (id) => historyFigures(client, id, options.steps, (type) => type === 'floorModel'),
      });
      results.push({ activitiesPerStep, perLatency });
    }
    checkModelRequests(ctx, 'floor'); // the floor never calls the model server
    return results;
  } finally {
    await closeConnection();
    await stopWorker();
  }
}
