/**
 * `npm run bench`: what one step of a conversation (a model call and a tool
 * call) costs on this project, against Temporal's own AI integration
 * (`@temporalio/ai-sdk`), LangGraph JS + PostgresSaver, Temporal's floor and a plain loop,
 * measured side by side in one run on servers it starts itself. Prints a
 * table (stdout; progress on stderr) and writes `bench-results.json`.
 *
 * Flags: see `npm run bench -- --help` ({@link parseOptions}).
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';

// The bench's own log lines (e.g. a pool noticing PostgreSQL stop) stay off stdout; workers log at "warn" to files.
process.env.LOG_LEVEL ??= 'error';

import { Cleanup, exitOnSignals } from './cleanup';
import type { BenchContext } from './context';
import { machineInfo } from './machine';
import { useBaselineWorker, useCompiledProjectWorker } from './worker-process';
import { parseOptions, type Part } from './options';
import { contentionWarnings, DEFINITIONS, formatTable, writeResults } from './report';
import type { BenchResults } from './results';
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
    log(
      `note: load average ${loadAverageAtStart.join(' ')} at start: other work on this machine will skew the figures`,
    );
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
      projectWorker: options.compiled ? 'compiled (build/main.js)' : 'npm start (scripts/start-worker.mjs)',
      ...(options.baseline ? { baseline: options.baseline } : {}),
    },
    definitions: DEFINITIONS,
    machine: machineInfo(undefined, loadAverageAtStart),
    warnings: [],
    failedParts: [],
  };
  try {
    if (options.cluster && (options.dynamicConfig.length > 0 || options.sqlitePragmas.length > 0)) {
      throw new Error(
        '--dynamic-config and --sqlite-pragma tune the dev server; with --cluster, edit deploy/temporal/dynamicconfig/development-sql.yaml instead.',
      );
    }
    if (options.compiled) useCompiledProjectWorker(log);
    stack = await startStack(cleanup, log, options.dynamicConfig, options.sqlitePragmas, options.cluster);
    results.machine = machineInfo(stack, loadAverageAtStart);
    const ctx: BenchContext = { stack, options, cleanup, log, runTag: randomBytes(3).toString('hex') };
    // A part that throws is recorded and the run goes on: one failure must not throw away the figures of the others.
    const part = async <K extends keyof BenchResults>(
      name: Part,
      key: K,
      run: () => Promise<BenchResults[K]>,
    ): Promise<void> => {
      if (!options.parts.has(name)) return;
      try {
        results[key] = await run();
      } catch (err) {
        const error = err instanceof Error ? err.message : String(err);
        results.failedParts.push({ part: name, error });
        log(`part ${name} failed, going on with the others: ${err instanceof Error ? (err.stack ?? error) : error}`);
      }
    };
    await part('project', 'project', async () => (await import('./project')).benchProject(ctx));
    await part('project-local', 'projectLocal', async () => (await import('./project')).benchProject(ctx, 'local'));
    if (options.baseline) {
      const dir = path.join(stack.scratch, 'baseline-checkout');
      const remove = useBaselineWorker(options.baseline, dir, log);
      cleanup.add('baseline checkout', async () => remove());
    }
    await part('project-baseline', 'projectBaseline', async () =>
      (await import('./project')).benchProject(ctx, 'baseline'),
    );
    await part('project-unstreamed', 'projectUnstreamed', async () =>
      (await import('./project')).benchProject(ctx, 'unstreamed'),
    );
    await part('project-local-tools', 'projectLocalTools', async () =>
      (await import('./project')).benchProject(ctx, 'local-tools'),
    );
    await part('ai-sdk', 'aiSdk', async () => (await import('./ai-sdk')).benchAiSdk(ctx));
    await part('langgraph', 'langgraph', async () => (await import('./langgraph')).benchLangGraph(ctx));
    await part('floor', 'floor', async () => (await import('./floor')).benchFloor(ctx));
    await part('plain', 'plain', async () => (await import('./plain')).benchPlain(ctx));
    await part('interrupts', 'interrupts', async () => (await import('./interrupts')).benchInterrupts(ctx));
    await part('startup', 'startUp', async () => (await import('./startup')).benchStartUp(ctx, options.quick ? 1 : 2));
    await part('cold', 'coldStart', async () => (await import('./cold-start')).benchColdStart(ctx));
    // Last: it leaves its conversations waiting on the server.
    await part('waiting', 'waiting', async () => (await import('./waiting')).benchWaiting(ctx));
  } finally {
    await cleanup.runAll();
  }
  results.durationMs = Date.now() - startedAt;
  results.warnings = contentionWarnings(results);
  const file = writeResults(options.outDir, results);
  process.stdout.write(
    `\n${formatTable(results)}\n\nFull results: ${file} (run took ${(results.durationMs / 60_000).toFixed(1)} min)\n`,
  );
  if (results.failedParts.length > 0) process.exitCode = 1;
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  // Everything the run started is stopped by now; native handles of the Temporal SDK may keep the loop alive.
  .finally(() => setTimeout(() => process.exit(), 200).unref());
