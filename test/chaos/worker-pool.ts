/**
 * The chaos run's worker processes: the real entry point (`src/main.ts`) run
 * as `node --import tsx` (one process, so SIGKILL kills the worker itself),
 * kept at a fixed count. A worker the run kills is replaced at once; a worker
 * that exits on its own is recorded and replaced too. A replacement starts on
 * its predecessor's data folder, as a supervisor restarting a worker on the
 * same machine would: it reuses the workflow bundle the first start made.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { workerNodeFlags, workerProcessEnv } from '../../src/app/worker-node-options';

const ROOT = path.join(__dirname, '..', '..');
const READY_LINE = 'Durable agent worker is running.';

/** One worker process. */
interface ManagedWorker {
  id: number;
  child: ChildProcess;
  logFile: string;
  dataDir: string;
  startedAt: number;
  /** Started in place of a worker that was killed or exited, on its data folder. */
  restart: boolean;
  readyAt?: number;
  killedByRun: boolean;
  exited: Promise<void>;
}

/** A worker that exited without being killed by the run. */
export interface UnexpectedExit {
  workerId: number;
  pid: number | undefined;
  /** Whether it had reported ready before exiting. */
  wasReady: boolean;
  code: number | null;
  signal: NodeJS.Signals | null;
  at: number;
  /** The last lines it printed. */
  tail: string;
}

/** Options of {@link WorkerPool}. */
export interface WorkerPoolOptions {
  /** Environment on top of this process's: TEMPORAL_ADDRESS, DATABASE_URL, ... */
  env: Record<string, string>;
  size: number;
  /** Where each worker's log and data folder go. */
  dir: string;
  log: (line: string) => void;
  readyTimeoutMs?: number;
}

/** Keeps `size` worker processes running, and kills one when asked. */
export class WorkerPool {
  readonly unexpectedExits: UnexpectedExit[] = [];
  /** Start-up times (spawn → ready) of the first workers, which bundle the workflow code, ms. */
  readonly startupMs: number[] = [];
  /** Start-up times of the replacements, on their predecessors' data folders (the bundle reused), ms. */
  readonly restartMs: number[] = [];
  private readonly workers = new Set<ManagedWorker>();
  private readonly waiters = new Set<() => void>();
  private nextId = 1;
  private stopping = false;

  constructor(private readonly options: WorkerPoolOptions) {}

  /** Starts the workers and waits until every one is ready. */
  async start(): Promise<void> {
    for (let i = 0; i < this.options.size; i++) this.spawnWorker();
    await this.waitFor(() => this.ready().length >= this.options.size, this.options.readyTimeoutMs ?? 120_000);
  }

  /** Workers that reported ready and still run. */
  ready(): ManagedWorker[] {
    return [...this.workers].filter(
      (w) => w.readyAt !== undefined && !w.killedByRun && w.child.exitCode === null && w.child.signalCode === null,
    );
  }

  /** Waits until `predicate` holds (checked whenever a worker becomes ready or exits); false on timeout. */
  async waitFor(predicate: () => boolean, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      const left = deadline - Date.now();
      if (left <= 0 || signal?.aborted || this.stopping) return predicate();
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(left, 500));
        this.waiters.add(wake);
      });
    }
    return true;
  }

  /**
   * SIGKILLs `victim` (one of {@link ready}); its replacement is started at
   * once. Returns the time of the kill.
   */
  kill(victim: ManagedWorker): number {
    victim.killedByRun = true;
    victim.child.kill('SIGKILL');
    const at = Date.now();
    this.options.log(`worker ${victim.id} (pid ${victim.child.pid}) SIGKILLed`);
    this.spawnWorker(0, victim.dataDir);
    return at;
  }

  /** Kills every worker (SIGKILL: nothing is left to finish) and removes their data folders. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const w of this.workers) {
      w.killedByRun = true;
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    }
    await Promise.all([...this.workers].map((w) => w.exited));
    for (const dir of new Set([...this.workers].map((w) => w.dataDir)))
      fs.rmSync(dir, { recursive: true, force: true });
  }

  /** Log files of every worker started so far. */
  logFiles(): string[] {
    return [...this.workers].map((w) => w.logFile);
  }

  private notify(): void {
    for (const wake of [...this.waiters]) wake();
  }

  /** Starts a worker, on `reusedDataDir` when it replaces one (else on a new data folder). */
  private spawnWorker(delayMs = 0, reusedDataDir?: string): void {
    if (this.stopping) return;
    if (delayMs > 0) {
      setTimeout(() => this.spawnWorker(0, reusedDataDir), delayMs).unref();
      return;
    }
    const id = this.nextId++;
    const dataDir = reusedDataDir ?? path.join(this.options.dir, `worker-${id}`);
    fs.mkdirSync(dataDir, { recursive: true });
    const logFile = path.join(this.options.dir, `worker-${id}.log`);
    const log = fs.createWriteStream(logFile);
    const child = spawn(
      process.execPath,
      [...workerNodeFlags(), '--import', 'tsx', path.join(ROOT, 'src', 'main.ts')],
      {
        cwd: ROOT,
        // No HTTP API (the run decides through the client, unsigned, so the workers accept unsigned decisions).
        env: {
          ...process.env,
          ...workerProcessEnv(),
          LOG_LEVEL: 'warn',
          AGENT_API_PORT: 'off',
          AGENT_METRICS_ADDRESS: 'off',
          ...this.options.env,
          AGENT_DATA_DIR: dataDir,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let tail = '';
    const worker: ManagedWorker = {
      id,
      child,
      logFile,
      dataDir,
      startedAt: Date.now(),
      restart: reusedDataDir !== undefined,
      killedByRun: false,
      exited: new Promise<void>((resolve) => child.once('close', () => resolve())),
    };
    this.workers.add(worker);
    const onOutput = (chunk: Buffer): void => {
      log.write(chunk);
      tail = (tail + String(chunk)).slice(-4000);
      if (worker.readyAt === undefined && tail.includes(READY_LINE)) {
        worker.readyAt = Date.now();
        (worker.restart ? this.restartMs : this.startupMs).push(worker.readyAt - worker.startedAt);
        this.options.log(
          `worker ${id} (pid ${child.pid}) ready after ${worker.readyAt - worker.startedAt} ms${worker.restart ? ' (a restart)' : ''}`,
        );
        this.notify();
      }
    };
    child.stdout?.on('data', onOutput);
    child.stderr?.on('data', onOutput);
    const readyTimer = setTimeout(() => {
      if (worker.readyAt === undefined && !this.stopping) {
        this.options.log(`worker ${id} not ready after ${this.options.readyTimeoutMs ?? 120_000} ms; killing it`);
        child.kill('SIGKILL');
      }
    }, this.options.readyTimeoutMs ?? 120_000);
    readyTimer.unref();
    child.once('exit', (code, signal) => {
      clearTimeout(readyTimer);
      log.end();
      this.notify();
      if (worker.killedByRun || this.stopping) return;
      this.unexpectedExits.push({
        workerId: id,
        pid: child.pid,
        wasReady: worker.readyAt !== undefined,
        code,
        signal,
        at: Date.now(),
        tail: tail.split('\n').slice(-15).join('\n'),
      });
      this.options.log(`worker ${id} exited on its own (code ${code}, signal ${signal}); starting a replacement`);
      this.spawnWorker(1_000, dataDir);
    });
  }
}
