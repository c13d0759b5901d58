/**
 * How the standalone worker's Node process runs: `npm start` passes these,
 * and so do the worker processes that tests, the chaos run and the bench
 * spawn, so what they measure is what `npm start` runs.
 *
 * - V8 heap flags, from `package.json`'s `config.workerNodeOptions`: a young
 *   generation of a few MiB and an old generation that grows little past what
 *   is live, so a burst of work (10,000 conversations arriving at once) is
 *   collected instead of growing the heap for good.
 * - `MALLOC_ARENA_MAX=2` unless set: the SDK's native threads otherwise keep
 *   up to eight allocator arenas per core, each holding freed memory.
 *
 * The figures (memory and CPU, with and without) are in docs/performance.md.
 */
import fs from 'node:fs';
import path from 'node:path';

const PACKAGE_JSON = path.join(__dirname, '..', '..', 'package.json');

/** The node flags of the worker process (`config.workerNodeOptions` of `package.json`, split on spaces). */
export function workerNodeFlags(packageJson = PACKAGE_JSON): string[] {
  const manifest = JSON.parse(fs.readFileSync(packageJson, 'utf8')) as { config?: { workerNodeOptions?: string } };
  return (manifest.config?.workerNodeOptions ?? '').split(/\s+/).filter(Boolean);
}

/** The environment the worker process adds to `env`: `MALLOC_ARENA_MAX` (2) unless `env` sets it. */
export function workerProcessEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return env.MALLOC_ARENA_MAX ? {} : { MALLOC_ARENA_MAX: '2' };
}
