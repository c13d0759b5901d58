/**
 * `npm run bench`: what one step of a conversation (a model call and a tool
 * call) costs on this project, against LangGraph JS + PostgresSaver,
 * Temporal's floor and a plain loop,
 * measured side by side in one run on servers it starts itself. Prints a
 * table (stdout; progress on stderr) and writes `bench-results.json`.
 *
 * Flags: see `npm run bench -- --help` ({@link parseOptions}).
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { DefaultLogger, Runtime } from '@temporalio/worker';

// The bench's own log lines (e.g. a pool noticing PostgreSQL stop) stay off stdout; workers log at "warn" to files.
process.env.LOG_LEVEL ??= 'error';

import { Cleanup, exitOnSignals } from './cleanup';
import type { BenchContext } from './context';
import { machineInfo } from './machine';
import { parseOptions } from './options';
import { contentionWarnings, DEFINITIONS, formatTable, writeResults, type BenchResults } from './report';
import { startStack, type Stack } from './stack';

async function main(): Promise<void> {
  const options = parseOptions();
  const startedAt = Date.now();
  const loadAverageAtStart = os.loadavg().map((v) => Math.round(v * 100) / 100);
  const log = (line: string): void => {
    process.stderr.write(`[bench +${((Date.now() - startedAt) / 1000).toFixed(1)}s] ${line}\n`);
  };
  // Signals are the bench's to handle: it stops what it started, then exits.
  Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: [] });
  const cleanup = new Cleanup(log);
  exitOnSignals(cleanup, log);
  if (loadAverageAtStart[0] > 0.5) {
    log(`note: load average ${loadAverageAtStart.join(' ')} at start: other work on this machine will skew the figures`);
  }

  let stack: Stack | undefined;
  const results: BenchResults = {
    startedAt: new Date(startedAt).toISOString(),
    durationMs: 0,
    options: {
      quick: options.quick,
      steps: options.steps,
      latenciesMs: options.latencies,
      parts: [...options.parts],
      singleTurns: options.singleTurns,
      mediumConcurrency: options.mediumConcurrency,
      mediumRounds: options.mediumRounds,
      highConcurrency: options.highConcurrency,
      waiting: options.waiting,
      dynamicConfig: options.dynamicConfig,
      sqlitePragmas: options.sqlitePragmas,
      temporal: options.cluster ? 'cluster' : 'dev server',
    },
    definitions: DEFINITIONS,
    machine: machineInfo(undefined, loadAverageAtStart),
    warnings: [],
  };
  try {
    if (options.cluster && (options.dynamicConfig.length > 0 || options.sqlitePragmas.length > 0)) {
      throw new Error(
        '--dynamic-config and --sqlite-pragma tune the dev server; with --cluster, edit deploy/temporal/dynamicconfig/development-sql.yaml instead.',
      );
    }
    stack = await startStack(cleanup, log, options.dynamicConfig, options.sqlitePragmas, options.cluster);
    results.machine = machineInfo(stack, loadAverageAtStart);
    const ctx: BenchContext = { stack, options, cleanup, log, runTag: randomBytes(3).toString('hex') };
    if (options.parts.has('project')) results.project = await (await import('./project')).benchProject(ctx);
    if (options.parts.has('project-local')) results.projectLocal = await (await import('./project')).benchProject(ctx, 'local');
    if (options.parts.has('langgraph')) results.langgraph = await (await import('./langgraph')).benchLangGraph(ctx);
    if (options.parts.has('floor')) results.floor = await (await import('./floor')).benchFloor(ctx);
    if (options.parts.has('plain')) results.plain = await (await import('./plain')).benchPlain(ctx);
    if (options.parts.has('interrupts')) results.interrupts = await (await import('./interrupts')).benchInterrupts(ctx);
    if (options.parts.has('startup')) results.startUp = await (await import('./startup')).benchStartUp(ctx, options.quick ? 1 : 2);
    if (options.parts.has('cold')) results.coldStart = await (await import('./cold-start')).benchColdStart(ctx);
    // Last: it leaves its conversations waiting on the server.
    if (options.parts.has('waiting')) results.waiting = await (await import('./waiting')).benchWaiting(ctx);
  } finally {
    await cleanup.runAll();
  }
  results.durationMs = Date.now() - startedAt;
  results.warnings = contentionWarnings(results);
  const file = writeResults(options.outDir, results);
  process.stdout.write(`\n${formatTable(results)}\n\nFull results: ${file} (run took ${(results.durationMs / 60_000).toFixed(1)} min)\n`);
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  // Everything the run started is stopped by now; native handles of the Temporal SDK may keep the loop alive.
  .finally(() => setTimeout(() => process.exit(), 200).unref());
