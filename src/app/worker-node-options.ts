/**
 * How the standalone worker's Node process runs, from `package.json`'s
 * `config` (one place): `npm start` passes these, and so do the worker
 * processes that tests, the chaos run and the bench spawn, so what they
 * measure is what `npm start` runs.
 *
 * - `workerNodeOptions`, V8 heap flags: a young generation of a few MiB and
 *   an old generation that grows little past what is live, so a burst of work
 *   (10,000 conversations arriving at once) is collected instead of growing
 *   the heap for good.
 * - `workerMallocArenaMax`, the `MALLOC_ARENA_MAX` used unless one is set:
 *   glibc otherwise gives the SDK's native threads up to eight allocator
 *   arenas per core, each holding freed memory.
 *
 * The figures (memory and CPU, with and without) are in docs/performance.md.
 */
import fs from 'node:fs';
import path from 'node:path';

const PACKAGE_JSON = path.join(__dirname, '..', '..', 'package.json');

interface WorkerProcessConfig {
  workerNodeOptions?: string;
  workerMallocArenaMax?: string;
}

function workerConfig(packageJson: string): WorkerProcessConfig {
  return (JSON.parse(fs.readFileSync(packageJson, 'utf8')) as { config?: WorkerProcessConfig }).config ?? {};
}

/** The node flags of the worker process (`config.workerNodeOptions`, split on spaces). */
export function workerNodeFlags(packageJson = PACKAGE_JSON): string[] {
  return (workerConfig(packageJson).workerNodeOptions ?? '').split(/\s+/).filter(Boolean);
}

/**
 * The environment the worker process adds to `env`: `MALLOC_ARENA_MAX` (`config.workerMallocArenaMax`) unless `env`
 * sets it.
 */
export function workerProcessEnv(
  env: NodeJS.ProcessEnv = process.env,
  packageJson = PACKAGE_JSON,
): Record<string, string> {
  const arenas = workerConfig(packageJson).workerMallocArenaMax;
  return env.MALLOC_ARENA_MAX || !arenas ? {} : { MALLOC_ARENA_MAX: arenas };
}
