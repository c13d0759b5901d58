/**
 * Worker processes of the bench, each a node child of its own (one process,
 * no wrapper, so its pid is the worker's and `/proc` tells its CPU time and
 * memory): the project's real entry point as `npm start` runs it
 * (`scripts/start-worker.mjs`, configured by environment variables as in
 * production, or with `--compiled` `build/main.js`), or the baselines'
 * workers through tsx.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { buildSync } from 'esbuild';
import { workerNodeFlags, workerProcessEnv } from '../../src/app/worker-node-options';

const ROOT = path.join(__dirname, '..', '..');

/** The project's worker as `npm start` runs it (`scripts/start-worker.mjs`), and the line it prints once it polls. */
export const PROJECT_WORKER = {
  entry: path.join(ROOT, 'scripts', 'start-worker.mjs'),
  readyLine: 'Durable agent worker is running.',
};

/** The compiled project worker and its tools module, set by {@link useCompiledProjectWorker}. */
let compiled: { entry: string; toolsModule: string } | undefined;

/**
 * From now on, {@link PROJECT_WORKER} runs compiled: builds it once
 * (`npm run build:app`) and spawns `build/main.js` with plain node; the
 * bench's tools module, TypeScript that plain node cannot load, is bundled
 * into `build/bench-tools.js` (the project's sources it imports inside it).
 */
export function useCompiledProjectWorker(log: (line: string) => void): void {
  const started = Date.now();
  execFileSync('npm', ['run', '--silent', 'build:app'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  compiled = { entry: path.join(ROOT, 'build', 'main.js'), toolsModule: bundledBenchTools() };
  log(
    `--compiled: the project's worker built into build/ in ${Date.now() - started} ms; its processes run build/main.js`,
  );
}

/** The worker of `--baseline <rev>`: its checkout, its entry and its tools module, set by {@link useBaselineWorker}. */
let baseline: { dir: string; entry: string; toolsModule: string } | undefined;

/** The project's worker at the revision of `--baseline`, run as `npm start` runs it (its `src/main.ts` through tsx). */
export const BASELINE_WORKER = { entry: 'src/main.ts of the --baseline checkout', readyLine: PROJECT_WORKER.readyLine };

/**
 * Checks out `rev` into `dir` (a detached git worktree sharing this checkout's node_modules) for
 * {@link BASELINE_WORKER}; returns a function that removes the checkout.
 */
export function useBaselineWorker(rev: string, dir: string, log: (line: string) => void): () => void {
  execFileSync('git', ['worktree', 'add', '--detach', '--force', dir, rev], { cwd: ROOT, stdio: 'ignore' });
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim();
  baseline = {
    dir,
    entry: path.join(dir, 'src', 'main.ts'),
    toolsModule: path.join(dir, 'scripts', 'bench', 'bench-tools.ts'),
  };
  log(`--baseline ${rev}: commit ${commit} checked out in ${dir}; the part project-baseline runs its worker`);
  return () => {
    execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT, stdio: 'ignore' });
  };
}

/** The baseline's tools module (its own `bench-tools.ts`). */
export function baselineToolsModule(): string {
  if (!baseline) throw new Error('no --baseline checkout');
  return baseline.toolsModule;
}

/**
 * The bench's tools, TypeScript that plain node cannot load, bundled into `build/bench-tools.js` (inside the checkout,
 * so its packages resolve; the project's sources it imports inside it). Made once per run.
 */
let benchToolsBundle: string | undefined;
function bundledBenchTools(): string {
  if (benchToolsBundle) return benchToolsBundle;
  const toolsModule = path.join(ROOT, 'build', 'bench-tools.js');
  buildSync({
    entryPoints: [path.join(__dirname, 'bench-tools.ts')],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    packages: 'external',
    outfile: toolsModule,
    logLevel: 'error',
  });
  benchToolsBundle = toolsModule;
  return toolsModule;
}

/**
 * The bench's tools module for the project's worker: their bundle (a TypeScript tools module would make `npm start`
 * run the worker through tsx).
 */
export function benchToolsModule(): string {
  return compiled?.toolsModule ?? bundledBenchTools();
}

/**
 * The LangGraph baseline's process (`langgraph-worker.ts`), and its ready line (kept in step with
 * `LANGGRAPH_READY_LINE`).
 */
export const LANGGRAPH_WORKER = {
  entry: path.join(__dirname, 'langgraph-worker.ts'),
  readyLine: 'bench langgraph worker is running',
};

/** The floor's worker (`floor-worker.ts`), and its ready line. */
export const FLOOR_WORKER = {
  entry: path.join(__dirname, 'floor-worker.ts'),
  readyLine: 'bench floor worker is running',
};

/** The worker of Temporal's own AI integration (`ai-sdk-worker.ts`), and its ready line. */
export const AI_SDK_WORKER = {
  entry: path.join(__dirname, 'ai-sdk-worker.ts'),
  readyLine: 'bench ai-sdk worker is running',
};

/** A running worker process. */
export interface WorkerProcess {
  pid: number;
  child: ChildProcess;
  /** `Date.now()` just before the spawn. */
  spawnedAt: number;
  /** Resolves with `Date.now()` when the worker printed its ready line; rejects if it exits first or times out. */
  ready: Promise<number>;
  logFile: string;
  /** SIGTERM (the worker drains and exits), SIGKILL after `graceMs`; resolves when it is gone. */
  stop(graceMs?: number): Promise<void>;
}

/** Options of {@link spawnWorker}. */
export interface SpawnOptions {
  /** Which worker: {@link PROJECT_WORKER} or {@link FLOOR_WORKER}. */
  worker: { entry: string; readyLine: string };
  /** Environment on top of this process's. */
  env: Record<string, string>;
  /** Folder for the log file (and the worker's AGENT_DATA_DIR). */
  dir: string;
  name: string;
  readyTimeoutMs?: number;
  /** Open an IPC channel to the child (`child.send`), for a worker that takes its work from the bench. */
  ipc?: boolean;
}

/** Spawns a worker process; wait for {@link WorkerProcess.ready} before counting on it. */
export function spawnWorker(options: SpawnOptions): WorkerProcess {
  const dataDir = path.join(options.dir, options.name);
  fs.mkdirSync(dataDir, { recursive: true });
  const logFile = path.join(options.dir, `${options.name}.log`);
  const log = fs.createWriteStream(logFile);
  const spawnedAt = Date.now();
  // BENCH_WORKER_NODE_ARGS: extra node flags for the worker processes, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to
  // profile them.
  const nodeArgs = (process.env.BENCH_WORKER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  // The project's worker runs as npm start runs it; the floor's and LangGraph's with Node's defaults.
  const likeNpmStart = options.worker === PROJECT_WORKER || options.worker === BASELINE_WORKER;
  const entry =
    options.worker === BASELINE_WORKER
      ? ['--import', 'tsx', baseline?.entry ?? '']
      : options.worker === PROJECT_WORKER
        ? [compiled?.entry ?? options.worker.entry]
        : ['--import', 'tsx', options.worker.entry];
  const child = spawn(process.execPath, [...(likeNpmStart ? workerNodeFlags() : []), ...nodeArgs, ...entry], {
    cwd: ROOT,
    // No HTTP API: the bench measures the worker, and decides through its client (unsigned).
    env: {
      ...process.env,
      ...(likeNpmStart ? workerProcessEnv() : {}),
      LOG_LEVEL: 'warn',
      AGENT_DATA_DIR: dataDir,
      AGENT_API_PORT: 'off',
      AGENT_METRICS_ADDRESS: 'off',
      AGENT_REQUIRE_SIGNED_DECISIONS: 'false',
      ...options.env,
    },
    stdio: options.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`Could not spawn ${options.worker.entry}.`);
  let tail = '';
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const ready = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${options.name} did not start within ${options.readyTimeoutMs ?? 120_000} ms:\n${tail}`)),
      options.readyTimeoutMs ?? 120_000,
    );
    const onOutput = (chunk: Buffer): void => {
      log.write(chunk);
      tail = (tail + String(chunk)).slice(-4_000);
      if (tail.includes(options.worker.readyLine)) {
        clearTimeout(timer);
        resolve(Date.now());
      }
    };
    child.stdout!.on('data', onOutput);
    child.stderr!.on('data', onOutput);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      log.end();
      reject(new Error(`${options.name} exited (code ${code}, signal ${signal}):\n${tail}`));
    });
  });
  ready.catch(() => undefined);
  return {
    pid: child.pid,
    child,
    spawnedAt,
    ready,
    logFile,
    stop: async (graceMs = 15_000) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
