/**
 * The phases every system of the bench runs at one model latency, in order:
 * warm-up (1 turn, then 10 short ones), 1 conversation (its first turn's
 * history read), 10 concurrent, then the high concurrency; each followed by
 * the system's own check of what the phase lost, when it has one.
 */
import type { BenchOptions } from './options';
import type { HistoryFigures } from './history';
import { runConcurrent, type ConcurrencyResult, type MeteredProcesses, type RunTurn } from './measure';

/** One system's figures at one model latency. */
export interface SystemFigures {
  latencyMs: number;
  single: ConcurrencyResult;
  medium: ConcurrencyResult;
  high: ConcurrencyResult;
  /** History of one turn of the single-conversation phase (Temporal systems). */
  history?: HistoryFigures;
  /** Work lost in each phase (the project): workflow tasks that timed out, model calls made again. */
  lost?: { single: LostWork; medium: LostWork; high: LostWork };
}

/**
 * Work a phase lost: its conversations' workflow tasks that timed out, and model calls beyond one per call its turns
 * needed.
 */
export interface LostWork {
  workflowTaskTimeouts: number;
  /**
   * Of those, the ones that timed out waiting to start (a sticky queue not polled within its schedule-to-start
   * timeout, then offered to any worker), the rest timed out running.
   */
  scheduleToStartTimeouts?: number;
  repeatedModelCalls: number;
}

/** One system at one model latency, as {@link measurePhases} runs it. */
export interface PhasesRun {
  options: BenchOptions;
  runTurn: RunTurn;
  latencyMs: number;
  meter: MeteredProcesses;
  /** Prefix of every conversation id of these phases. */
  idPrefix: string;
  /** The system's name in progress lines and the phases' names. */
  label: string;
  log: (line: string) => void;
  /** The history figures of one turn (the first of the single-conversation phase), by its workflow id. */
  history: (workflowId: string) => Promise<HistoryFigures>;
  /** Checks the turns since the last check and says what the phase lost; none for a system that cannot lose work. */
  check?: (phase: string) => Promise<LostWork>;
}

/** Runs the phases of one system at one model latency; its figures. */
export async function measurePhases(run: PhasesRun): Promise<SystemFigures> {
  const { options, label, latencyMs, idPrefix } = run;
  const base = { runTurn: run.runTurn, steps: options.steps, latencyMs, meter: run.meter };
  const at = `${label}, model ${latencyMs} ms`;
  run.log(`${at}: warming up`);
  await runConcurrent({ ...base, idPrefix: `${idPrefix}-warm1`, concurrency: 1 });
  await runConcurrent({ ...base, idPrefix: `${idPrefix}-warm10`, concurrency: options.mediumConcurrency, steps: 2 });
  await run.check?.(`${label} warm-up`);
  const single = await runConcurrent({
    ...base,
    idPrefix: `${idPrefix}-c1`,
    concurrency: 1,
    rounds: options.singleTurns,
  });
  const lostSingle = await run.check?.(`${label}, 1 conversation`);
  run.log(`${at}: 1 conversation ${single.msPerStep.toFixed(1)} ms/step`);
  const history = await run.history(`${idPrefix}-c1-0-0`);
  const medium = await runConcurrent({
    ...base,
    idPrefix: `${idPrefix}-c10`,
    concurrency: options.mediumConcurrency,
    rounds: options.mediumRounds,
  });
  const lostMedium = await run.check?.(`${label}, ${options.mediumConcurrency} conversations`);
  run.log(`${at}: ${options.mediumConcurrency} conversations ${medium.msPerStep.toFixed(1)} ms/step`);
  const high = await runConcurrent({ ...base, idPrefix: `${idPrefix}-c100`, concurrency: options.highConcurrency });
  const lostHigh = await run.check?.(`${label}, ${options.highConcurrency} conversations`);
  run.log(
    `${at}: ${options.highConcurrency} conversations ${high.stepsPerSecond.toFixed(1)} steps/s` +
      (lostHigh
        ? ` (${lostHigh.workflowTaskTimeouts} workflow tasks timed out, ${lostHigh.scheduleToStartTimeouts ?? 0} of them ` +
          `before they started, ${lostHigh.repeatedModelCalls} model calls repeated)`
        : ''),
  );
  const lost =
    lostSingle && lostMedium && lostHigh ? { single: lostSingle, medium: lostMedium, high: lostHigh } : undefined;
  return { latencyMs, single, medium, high, history, ...(lost ? { lost } : {}) };
}

/** {@link measurePhases} at each of the options' model latencies in turn; `idPrefix` gets `l<latency>` appended. */
export async function measureAtEachLatency(run: Omit<PhasesRun, 'latencyMs'>): Promise<SystemFigures[]> {
  const results: SystemFigures[] = [];
  for (const latencyMs of run.options.latencies)
    results.push(await measurePhases({ ...run, latencyMs, idPrefix: `${run.idPrefix}l${latencyMs}` }));
  return results;
}
