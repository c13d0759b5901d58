/**
 * Cold start: a worker process spawned on a fresh task queue while its first
 * conversation is already waiting; from the spawn to that conversation's
 * answer (one tool step, model without latency), and to the worker's ready
 * line. Three kinds of start: a fresh data folder (the workflow bundle made,
 * the compile cache empty), restarted on the first one's folder (the bundle
 * reused and the compile cache filled, as a worker restarted in place finds
 * them), and the same restart with two busy loops taking both cores. Each
 * kind runs without Node's compile cache (`NODE_DISABLE_COMPILE_CACHE=1`)
 * and with it (src/app/compile-cache.ts), the two interleaved so that a
 * drift of the machine weighs on both alike.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { COMPILE_CACHE_FOLDER } from '../../src/app/compile-cache';
import { AgentClient } from '../../src/client/client';
import { AnswerWatcher } from './answer-watcher';
import { NOOP_TOOL } from './bench-tools';
import { checkModelRequests, projectWorkerEnv, type BenchContext } from './context';
import { quantile } from './measure';
import { turnMessage } from './responder';
import { PROJECT_WORKER, spawnWorker } from './worker-process';

/** Which start: a fresh data folder, a restart on one, or a restart while two busy loops take both cores. */
export type ColdStartKind = 'fresh' | 'restarted' | 'restarted, cores busy';

/** One cold start. */
export interface ColdStart {
  kind: ColdStartKind;
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
  /** Whether Node's compile cache was on (off: `NODE_DISABLE_COMPILE_CACHE=1`). */
  compileCache: boolean;
  /** Files in the data folder's compile cache once the worker stopped (0 when off: the folder is not made). */
  cacheFiles: number;
}

const KINDS: ColdStartKind[] = ['fresh', 'restarted', 'restarted, cores busy'];

/**
 * Starts `options.coldStarts` worker processes of each kind, each without and with the compile cache, one after the
 * other.
 */
export async function benchColdStart(ctx: BenchContext): Promise<ColdStart[]> {
  const { stack, options, log } = ctx;
  const watcher = new AnswerWatcher(stack.pool);
  const results: ColdStart[] = [];
  // The switches are the bench's to set: a cache of the caller's (NODE_COMPILE_CACHE) would not start empty.
  const saved = { ...process.env };
  delete process.env.NODE_DISABLE_COMPILE_CACHE;
  delete process.env.NODE_COMPILE_CACHE;
  const total = KINDS.length * 2 * options.coldStarts;
  try {
    for (const kind of KINDS) {
      for (let round = 0; round < options.coldStarts; round++) {
        // Alternate which goes first, so neither always starts right after the other's stop.
        for (const compileCache of round % 2 === 0 ? [false, true] : [true, false]) {
          const i = results.length;
          const taskQueue = `bench-cold-${ctx.runTag}-${i}`;
          const client = await AgentClient.connect({
            temporalAddress: stack.temporal.address,
            tls: stack.temporal.tls,
            taskQueue,
            databaseUrl: stack.databaseUrl,
          });
          const closeClient = ctx.cleanup.add('cold-start client', () => client.close());
          const id = `bench-${ctx.runTag}-cold-${i}`;
          const cache = compileCache ? 'cache' : 'nocache';
          // The name is the data folder: a restart runs in the first start's, where its bundle and its cache are.
          const name = `cold-worker-${cache}-${kind === 'fresh' ? round : 0}`;
          const busy = kind === 'restarted, cores busy' ? await startBusyLoops(ctx, 2) : undefined;
          const worker = spawnWorker({
            worker: PROJECT_WORKER,
            env: {
              ...projectWorkerEnv(ctx, taskQueue),
              ...(compileCache ? {} : { NODE_DISABLE_COMPILE_CACHE: '1' }),
            },
            dir: stack.scratch,
            name,
          });
          const stopWorker = ctx.cleanup.add('cold-start worker', () => worker.stop());
          try {
            const answered = watcher.answered(id, 180_000);
            await client.sendMessage(id, turnMessage({ steps: 1, latencyMs: 0, tool: NOOP_TOOL }));
            const readyAt = await worker.ready;
            const answeredAt = await answered;
            await busy?.();
            // The cache is written as the worker exits.
            await stopWorker();
            const cacheFiles = countFiles(path.join(stack.scratch, name, COMPILE_CACHE_FOLDER));
            if (compileCache && cacheFiles === 0)
              throw new Error(`cold start ${i + 1}: the worker left no compile cache.`);
            if (!compileCache && cacheFiles > 0) {
              throw new Error(
                `cold start ${i + 1}: NODE_DISABLE_COMPILE_CACHE=1, yet the worker wrote a compile cache.`,
              );
            }
            const start: ColdStart = {
              kind,
              readyMs: readyAt - worker.spawnedAt,
              firstAnswerMs: answeredAt - worker.spawnedAt,
              bundle: kind === 'fresh' ? 'made' : 'reused',
              compileCache,
              cacheFiles,
            };
            results.push(start);
            log(
              `cold start ${i + 1}/${total} (${kind}, compile cache ${compileCache ? 'on' : 'off'}): ready after ${start.readyMs} ms, first answer after ${start.firstAnswerMs} ms; ${cacheFiles} files in its cache`,
            );
          } finally {
            await busy?.();
            await stopWorker();
            await closeClient();
          }
        }
      }
    }
    checkModelRequests(ctx, 'cold start');
    return results;
  } finally {
    process.env = saved;
    watcher.stop();
  }
}

/**
 * Starts `count` processes that spin on a core each, and gives them 300 ms to get going; the function returned stops
 * them (and may be called again).
 */
async function startBusyLoops(ctx: BenchContext, count: number): Promise<() => Promise<void>> {
  const loops = Array.from({ length: count }, () =>
    spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore', env: { PATH: process.env.PATH ?? '' } }),
  );
  const stopLoops = ctx.cleanup.add('cold-start busy loops', () => stop());
  const stop = async (): Promise<void> => {
    await Promise.all(
      loops.map(async (loop) => {
        if (loop.exitCode !== null || loop.signalCode !== null) return;
        const gone = new Promise<void>((resolve) => loop.once('exit', () => resolve()));
        loop.kill('SIGKILL');
        await gone;
      }),
    );
  };
  await new Promise((resolve) => setTimeout(resolve, 300));
  return stopLoops;
}

/** Files under `dir`, at any depth; 0 when it does not exist. */
function countFiles(dir: string): number {
  if (!fs.existsSync(dir)) return 0;
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).length;
}

/**
 * The cold starts as printed under the table: for each kind, the medians without and with the compile cache, and
 * what the cache saved.
 */
export function formatColdStarts(starts: ColdStart[]): string {
  const ms = (v: number): string => `${Math.round(v)} ms`;
  const lines = ['Cold start of a worker on running servers (spawn → ready / first answer, median):'];
  for (const kind of KINDS) {
    const median = (compileCache: boolean): { ready: number; first: number; n: number } | undefined => {
      const picked = starts.filter((s) => s.kind === kind && s.compileCache === compileCache);
      if (picked.length === 0) return undefined;
      return {
        ready: quantile(
          picked.map((s) => s.readyMs),
          0.5,
        ),
        first: quantile(
          picked.map((s) => s.firstAnswerMs),
          0.5,
        ),
        n: picked.length,
      };
    };
    const off = median(false);
    const on = median(true);
    if (!off && !on) continue;
    const say = (m: typeof off, label: string): string =>
      m ? `${label} ${ms(m.ready)} / ${ms(m.first)} (${m.n}×)` : `${label} not run`;
    const saved = off && on ? `; saved ${ms(off.ready - on.ready)} / ${ms(off.first - on.first)}` : '';
    lines.push(`  ${kind}: compile cache ${say(off, 'off')}, ${say(on, 'on')}${saved}`);
  }
  return lines.join('\n');
}
