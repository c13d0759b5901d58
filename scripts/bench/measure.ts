/**
 * How every system is measured the same way: turns of S steps run at a given
 * concurrency, per-turn wall times, steps per second, and the CPU time each
 * process spent meanwhile.
 */
import {
  descendants,
  machineTimes,
  postgresCpuMs,
  processCpuMs,
  processTable,
  type MachineTimes,
  type ProcessEntry,
} from './proc';

/** Runs one turn (a fresh conversation or workflow id) of `steps` steps; resolves with its wall time in ms. */
export type RunTurn = (id: string, steps: number, latencyMs: number) => Promise<number>;

/** The processes whose CPU time is read around a phase. */
export interface MeteredProcesses {
  /** The worker process, when the system has one. */
  worker?: number;
  temporal: number;
  postmaster: number;
}

/** CPU time per step of each process during a phase, in ms (one core fully busy for 1 s = 1000 ms). */
export interface CpuPerStep {
  /** The worker process (undefined for the in-process plain loop). */
  worker?: number;
  /** The Temporal dev server. */
  temporal: number;
  /** PostgreSQL: postmaster and backends. */
  postgres: number;
  /** The bench process itself: the scripted model server, the client, turn detection (and the plain loop itself). */
  driver: number;
  /**
   * Other processes the machine ran meanwhile (another test run, the kernel's
   * own threads): all process CPU time minus that of the bench's process tree
   * (itself, the servers and workers it started). Should be near 0.
   */
  other: number;
  /** Interrupt handling (irq, softirq: mostly the loopback traffic between the processes), counted to no process. */
  interrupts: number;
  /** Time the hypervisor gave to other guests while this machine had work (a busy host slows every figure). */
  steal: number;
  /** Idle time while processes waited for the disk (SQLite's and PostgreSQL's fsyncs). */
  iowait: number;
  /**
   * The busiest processes outside the bench's tree during the phase, when `other` is not small (CPU ms, whole phase).
   */
  topOthers?: { pid: number; name: string; cpuMs: number }[];
  /** Cores busy on average during the phase: all processes and interrupts (2 = both cores of a 2-core machine). */
  machineCoresBusy: number;
}

interface CpuSnapshot {
  at: number;
  worker?: number;
  temporal: number;
  postgres: number;
  driver: number;
  machine: MachineTimes;
  processes: Map<number, ProcessEntry>;
}

function snapshot(p: MeteredProcesses): CpuSnapshot {
  const usage = process.cpuUsage();
  return {
    at: Date.now(),
    worker: p.worker === undefined ? undefined : processCpuMs(p.worker),
    temporal: processCpuMs(p.temporal) ?? NaN,
    postgres: postgresCpuMs(p.postmaster),
    driver: (usage.user + usage.system) / 1000,
    machine: machineTimes(),
    processes: processTable(),
  };
}

/** CPU time of the bench's process tree (with reaped children, so processes that exit stay counted), ms. */
function treeCpuMs(table: Map<number, ProcessEntry>): number {
  let total = 0;
  for (const pid of descendants(table, process.pid)) total += table.get(pid)?.cpuWithChildrenMs ?? 0;
  return total;
}

/** Starts a CPU measurement; the returned function ends it and divides by `steps`. */
export function startCpuMeter(p: MeteredProcesses): (steps: number) => CpuPerStep {
  const before = snapshot(p);
  return (steps: number) => {
    const after = snapshot(p);
    const d = (k: 'temporal' | 'postgres' | 'driver'): number => after[k] - before[k];
    const m = (k: keyof MachineTimes): number => after.machine[k] - before.machine[k];
    const worker = before.worker !== undefined && after.worker !== undefined ? after.worker - before.worker : undefined;
    const other = Math.max(0, m('processes') - (treeCpuMs(after.processes) - treeCpuMs(before.processes)));
    const ourPids = new Set([
      ...descendants(before.processes, process.pid),
      ...descendants(after.processes, process.pid),
    ]);
    const topOthers = [...after.processes]
      .filter(([pid]) => !ourPids.has(pid))
      .map(([pid, p]) => ({ pid, name: p.name, cpuMs: Math.round(p.cpuMs - (before.processes.get(pid)?.cpuMs ?? 0)) }))
      .filter((p) => p.cpuMs >= 100)
      .sort((a, b) => b.cpuMs - a.cpuMs)
      .slice(0, 3);
    return {
      worker: worker === undefined ? undefined : worker / steps,
      temporal: d('temporal') / steps,
      postgres: d('postgres') / steps,
      driver: d('driver') / steps,
      other: other / steps,
      ...(topOthers.length > 0 ? { topOthers } : {}),
      interrupts: m('interrupts') / steps,
      steal: m('steal') / steps,
      iowait: m('iowait') / steps,
      machineCoresBusy: (m('processes') + m('interrupts')) / Math.max(1, after.at - before.at),
    };
  };
}

/** Turns run at one concurrency. */
export interface ConcurrencyResult {
  concurrency: number;
  turns: number;
  stepsPerTurn: number;
  /** Wall time of each turn, ms. */
  turnMs: number[];
  /** Median turn wall time ÷ steps. */
  msPerStep: number;
  /** Median (turn wall − model time) ÷ steps: what the system adds to the model. */
  overheadMsPerStep: number;
  /** Steps of all turns ÷ the phase's wall time (first start to last end). */
  stepsPerSecond: number;
  phaseMs: number;
  cpuPerStep?: CpuPerStep;
}

/** Options of {@link runConcurrent}. */
export interface ConcurrentRun {
  runTurn: RunTurn;
  /** Prefix of the ids; each turn gets `${prefix}-${round}-${i}`. */
  idPrefix: string;
  concurrency: number;
  /** Rounds of `concurrency` turns, one after the other. Default 1. */
  rounds?: number;
  steps: number;
  latencyMs: number;
  /** Read CPU times of these processes around the whole phase. */
  meter?: MeteredProcesses;
}

/**
 * Runs `rounds` rounds of `concurrency` turns started at once (a round ends
 * when its last turn does). With concurrency 1 and several rounds: turns one
 * after the other.
 */
export async function runConcurrent(run: ConcurrentRun): Promise<ConcurrencyResult> {
  const rounds = run.rounds ?? 1;
  const turnMs: number[] = [];
  const stopMeter = run.meter ? startCpuMeter(run.meter) : undefined;
  const started = Date.now();
  for (let r = 0; r < rounds; r++) {
    const walls = await Promise.all(
      Array.from({ length: run.concurrency }, (_, i) =>
        run.runTurn(`${run.idPrefix}-${r}-${i}`, run.steps, run.latencyMs),
      ),
    );
    turnMs.push(...walls);
  }
  const phaseMs = Date.now() - started;
  const totalSteps = turnMs.length * run.steps;
  const median = quantile(turnMs, 0.5);
  // A turn is `steps` tool steps plus the final answer: steps + 1 model calls.
  const modelMs = (run.steps + 1) * run.latencyMs;
  return {
    concurrency: run.concurrency,
    turns: turnMs.length,
    stepsPerTurn: run.steps,
    turnMs,
    msPerStep: median / run.steps,
    overheadMsPerStep: (median - modelMs) / run.steps,
    stepsPerSecond: (totalSteps * 1000) / phaseMs,
    phaseMs,
    cpuPerStep: stopMeter?.(totalSteps),
  };
}

/** The q-quantile (0..1) of `values`, linear between ranks; NaN when empty. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** Runs `task` over `items` with at most `limit` at once; results in the items' order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  task: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await task(items[index], index);
      }
    }),
  );
  return results;
}

/**
 * The three phases every system runs at one model latency, after warming up: 1 conversation, the medium and the high
 * concurrency.
 */
export interface Phases {
  single: ConcurrencyResult;
  medium: ConcurrencyResult;
  high: ConcurrencyResult;
}

/**
 * Warms up (a turn alone, then short turns at the medium concurrency), then
 * measures the {@link Phases} with ids starting with `prefix`.
 */
export async function runPhases(
  base: Omit<ConcurrentRun, 'idPrefix' | 'concurrency' | 'rounds'>,
  prefix: string,
  sizes: { singleTurns: number; mediumConcurrency: number; mediumRounds: number; highConcurrency: number },
): Promise<Phases> {
  await runConcurrent({ ...base, idPrefix: `${prefix}-warm1`, concurrency: 1 });
  await runConcurrent({ ...base, idPrefix: `${prefix}-warm10`, concurrency: sizes.mediumConcurrency, steps: 2 });
  const single = await runConcurrent({ ...base, idPrefix: `${prefix}-c1`, concurrency: 1, rounds: sizes.singleTurns });
  const medium = await runConcurrent({
    ...base,
    idPrefix: `${prefix}-c10`,
    concurrency: sizes.mediumConcurrency,
    rounds: sizes.mediumRounds,
  });
  const high = await runConcurrent({ ...base, idPrefix: `${prefix}-c100`, concurrency: sizes.highConcurrency });
  return { single, medium, high };
}
