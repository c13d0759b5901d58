/**
 * Start-up as a newcomer sees it: `npm start`'s process (`scripts/start-worker.mjs`, with
 * nothing configured: it starts its own Temporal dev server, PostgreSQL, the
 * offline demo model and the worker) on a data folder of its own, from the
 * spawn to its ready line and to the answer of a first message ("find Ada",
 * one tool step, sent once it is ready, through the project's client).
 * "fresh" is the first start on an empty data folder (PostgreSQL's initdb,
 * the workflow bundle made); "warm" the starts after it on the same folder.
 * The bench's own servers are not used.
 */
import fs from 'node:fs';
import path from 'node:path';
import { AgentClient } from '../../src/client/client';
import { readRuntimeInfo } from '../../src/app/runtime-file';
import type { BenchContext } from './context';
import { PROJECT_WORKER, spawnWorker } from './worker-process';

/** One start of `npm start`'s process. */
export interface StartUp {
  kind: 'fresh' | 'warm';
  /** Spawn → the ready line (services started, migrations, search attributes, workflow bundle, worker polling). */
  readyMs: number;
  /** Spawn → the first message's answer (sent at the ready line; the client polls the turn every 200 ms). */
  firstAnswerMs: number;
  /** Whether an earlier start's workflow bundle was on the data folder (reused when the sources did not change). */
  bundleCached: boolean;
}

/** One fresh start, then `warm` starts on the same data folder, one after the other. */
export async function benchStartUp(ctx: BenchContext, warm = 2): Promise<StartUp[]> {
  const dir = path.join(ctx.stack.scratch, 'start-up');
  const dataDir = path.join(dir, 'data');
  fs.mkdirSync(dir, { recursive: true });
  const results: StartUp[] = [];
  // As with nothing configured: no model, database or Temporal server of the bench's.
  const env: Record<string, string> = { AGENT_DATA_DIR: dataDir, AGENT_API_PORT: 'off', AGENT_METRICS_ADDRESS: 'off' };
  const saved = { ...process.env };
  for (const key of [
    'OPENAI_API_KEY',
    'OPENAI_BASE_URL',
    'OPENAI_MODEL',
    'DATABASE_URL',
    'TEMPORAL_ADDRESS',
    'TEMPORAL_TASK_QUEUE',
    'AGENT_TOOLS_MODULE',
  ]) {
    delete process.env[key];
  }
  try {
    for (let i = 0; i <= warm; i++) {
      const kind = i === 0 ? 'fresh' : 'warm';
      const bundleBefore = fs.existsSync(path.join(dataDir, 'workflow-bundle.fingerprint'));
      const worker = spawnWorker({ worker: PROJECT_WORKER, env, dir, name: `start-up-${i}`, readyTimeoutMs: 180_000 });
      const stopWorker = ctx.cleanup.add(`start-up ${i}`, () => worker.stop(30_000));
      try {
        const readyAt = await worker.ready;
        const runtime = readRuntimeInfo(dataDir);
        if (!runtime?.databaseUrl)
          throw new Error(`start-up ${i}: no runtime.json with the embedded database in ${dataDir}.`);
        const client = await AgentClient.connect({
          temporalAddress: runtime.temporalAddress,
          taskQueue: runtime.taskQueue,
          databaseUrl: runtime.databaseUrl,
        });
        try {
          const answer = await client.ask(`start-up-${ctx.runTag}-${i}`, 'find Ada', { timeoutMs: 120_000 });
          if (answer.turn.outcome !== 'answered')
            throw new Error(`start-up ${i}: the first turn ended as ${answer.turn.outcome}.`);
        } finally {
          await client.close();
        }
        const answeredAt = Date.now();
        results.push({
          kind,
          readyMs: readyAt - worker.spawnedAt,
          firstAnswerMs: answeredAt - worker.spawnedAt,
          bundleCached: bundleBefore,
        });
        ctx.log(
          `start-up ${i + 1} (${kind}): ready after ${readyAt - worker.spawnedAt} ms, first answer after ${answeredAt - worker.spawnedAt} ms`,
        );
      } finally {
        await stopWorker();
      }
    }
    return results;
  } finally {
    process.env = saved;
  }
}
