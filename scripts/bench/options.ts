/** The bench's command-line flags and the sizes they choose. */
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';

/** The parts a run can be limited to with `--only`. */
export const PARTS = [
  'project',
  'project-local',
  'project-local-tools',
  'project-unstreamed',
  'project-baseline',
  'ai-sdk',
  'langgraph',
  'floor',
  'plain',
  'interrupts',
  'waiting',
  'cold',
  'startup',
] as const;
/** One part of the bench. */
export type Part = (typeof PARTS)[number];
/**
 * The parts a run without `--only` runs: all but the project with only its tool calls local, which is asked for by
 * name.
 */
export const DEFAULT_PARTS: readonly Part[] = PARTS.filter(
  (p) => p !== 'project-local-tools' && p !== 'project-baseline',
);

/** Everything a run does, decided from the flags. */
export interface BenchOptions {
  quick: boolean;
  /** Tool steps per turn (each turn: `steps` model calls with a tool call, then the final answer). */
  steps: number;
  /** Model latencies to measure, ms. */
  latencies: number[];
  parts: Set<Part>;
  /** Sequential turns at concurrency 1. */
  singleTurns: number;
  /** Rounds of 10 concurrent turns. */
  mediumRounds: number;
  /** The medium concurrency (10). */
  mediumConcurrency: number;
  /** The high concurrency (100; fewer with --quick). */
  highConcurrency: number;
  /** Conversations left waiting for approval. */
  waiting: number;
  /** Of those, how many are approved to time approval → answer. */
  approvals: number;
  /** Worker processes started cold, one after the other. */
  coldStarts: number;
  /** Where bench-results.json goes. */
  outDir: string;
  /**
   * Dynamic config values for the dev server (`KEY=JSON_VALUE`), e.g.
   * `history.transferProcessorMaxPollRPS=1000`; none by default (the dev
   * server exactly as `npm start` runs it).
   */
  dynamicConfig: string[];
  /** SQLite pragmas for the dev server (`PRAGMA=VALUE`); none by default. */
  sqlitePragmas: string[];
  /** Run on Temporal's own server binaries (PostgreSQL, 4 shards, mutual TLS) instead of the dev server. */
  cluster: boolean;
  /** Run the project's worker compiled (`npm run build:app`, `build/main.js`) instead of through tsx. */
  compiled: boolean;
  /**
   * A git revision whose worker runs too, as the part `project-baseline` (its own checkout, its own tables), in the
   * same run as the working tree's: a change's before and after, side by side.
   */
  baseline?: string;
}

const integer =
  (min: number, max: number) =>
  (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`expected an integer from ${min} to ${max}, got "${value}".`);
    return n;
  };

const latencyList = (value: string): number[] => {
  const list = value.split(',').map((v) => Number(v.trim()));
  if (list.length === 0 || list.some((n) => !Number.isInteger(n) || n < 0 || n > 10_000)) {
    throw new InvalidArgumentError(`expected comma-separated milliseconds such as 0,200, got "${value}".`);
  }
  return list;
};

const partList = (value: string): Part[] => {
  const list = value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
  const unknown = list.filter((p) => !(PARTS as readonly string[]).includes(p));
  if (list.length === 0 || unknown.length > 0)
    throw new InvalidArgumentError(`expected some of ${PARTS.join(',')}, got "${value}".`);
  return list as Part[];
};

/** Parses `argv` (process.argv by default). */
export function parseOptions(argv: string[] = process.argv): BenchOptions {
  const program = new Command()
    .name('npm run bench --')
    .description(
      'One step of a conversation (a model call and a tool call) on this project, on @temporalio/ai-sdk, on LangGraph JS + PostgresSaver, on bare Temporal and in a plain loop, side by side; prints a table and writes bench-results.json.',
    )
    .option('--quick', 'small sizes for a sanity run (under 2 minutes)', false)
    .option('--steps <n>', 'tool steps per turn (default 10; 3 with --quick)', integer(1, 99))
    .option('--model-latency <ms,...>', 'model latencies to measure', latencyList, [0, 200])
    .option(
      '--only <parts>',
      `parts to run, comma-separated: ${PARTS.join(',')} (default: all but project-local-tools)`,
      partList,
      [...DEFAULT_PARTS],
    )
    .option(
      '--waiting <n>',
      'conversations left waiting for approval (default 1000; 50 with --quick)',
      integer(1, 100_000),
    )
    .option('--concurrency <n>', 'the high concurrency (default 100; 20 with --quick)', integer(1, 1_000))
    .option('--out <dir>', 'where bench-results.json goes', path.join('.data', 'bench'))
    .option(
      '--dynamic-config <key=value>',
      'a dynamic config value for the dev server (repeatable), e.g. history.transferProcessorMaxPollRPS=1000; default: none, the dev server as npm start runs it',
      (value: string, list: string[]) => {
        if (!/^[\w.]+=.+$/.test(value)) throw new InvalidArgumentError(`expected KEY=VALUE, got "${value}".`);
        return [...list, value];
      },
      [] as string[],
    )
    .option(
      '--sqlite-pragma <pragma=value>',
      "a SQLite pragma for the dev server's database (repeatable), e.g. journal_mode=wal; default: none",
      (value: string, list: string[]) => {
        if (!/^\w+=\w+$/.test(value)) throw new InvalidArgumentError(`expected PRAGMA=VALUE, got "${value}".`);
        return [...list, value];
      },
      [] as string[],
    );
  program.option(
    '--cluster',
    "run on Temporal's own server binaries (built by scripts/ensure-temporal-server.sh) on the run's PostgreSQL, 4 history shards, mutual TLS, instead of the dev server (docs/temporal-cluster.md)",
    false,
  );
  program.option(
    '--compiled',
    "run the project's worker compiled to JavaScript (the bench runs npm run build:app first, then build/main.js, as the Dockerfile does) instead of scripts/start-worker.mjs, as npm start runs it (the sources transpiled once with esbuild)",
    false,
  );
  program.option(
    '--baseline <rev>',
    "also run the worker of this git revision (a checkout of its own, its own tables) as the part project-baseline, beside the working tree's: a change's before and after in one run",
  );
  program.parse(argv);
  const o = program.opts<{
    quick: boolean;
    steps?: number;
    modelLatency: number[];
    only: Part[];
    waiting?: number;
    concurrency?: number;
    out: string;
    dynamicConfig: string[];
    sqlitePragma: string[];
    cluster: boolean;
    compiled: boolean;
    baseline?: string;
  }>();
  const quick = o.quick;
  const waiting = o.waiting ?? (quick ? 50 : 1_000);
  return {
    quick,
    steps: o.steps ?? (quick ? 3 : 10),
    latencies: [...new Set(o.modelLatency)],
    parts: new Set([...o.only, ...(o.baseline ? (['project-baseline'] as const) : [])]),
    singleTurns: quick ? 2 : 5,
    mediumRounds: quick ? 1 : 2,
    mediumConcurrency: 10,
    highConcurrency: o.concurrency ?? (quick ? 20 : 100),
    waiting,
    approvals: Math.min(waiting, quick ? 5 : 20),
    coldStarts: quick ? 1 : 3,
    outDir: path.resolve(o.out),
    dynamicConfig: o.dynamicConfig,
    sqlitePragmas: o.sqlitePragma,
    cluster: o.cluster,
    compiled: o.compiled,
    ...(o.baseline ? { baseline: o.baseline } : {}),
  };
}
