/**
 * `npm run chaos`: a bounded chaos run against real servers it starts itself
 * (Temporal dev server, embedded PostgreSQL, scripted model server, two worker
 * processes), ending with one summary. Exit code 1 when any "must be 0" is not 0.
 */
import { Command, InvalidArgumentError } from 'commander';
import { DefaultLogger, Runtime } from '@temporalio/worker';

// This process's own log lines (e.g. a pool noticing PostgreSQL stop at the end) stay off stdout,
// which carries the summary; the worker processes log at "warn" to their own files.
process.env.LOG_LEVEL ??= 'error';

const count =
  (min: number) =>
  (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min)
      throw new InvalidArgumentError(`expected an integer ≥ ${min}, got "${value}".`);
    return n;
  };

const share = (value: string): number => {
  const n = Number(value);
  if (value.trim() === '' || !(n >= 0 && n <= 1))
    throw new InvalidArgumentError(`expected a share between 0 and 1 (e.g. 0.5 for half), got "${value}".`);
  return n;
};

const program = new Command()
  .name('npm run chaos --')
  .description(
    'Drive conversations while killing workers, restarting Temporal and injecting model and tool faults; print one summary.',
  )
  .option('--conversations <n>', 'conversations to drive', count(1), 50)
  .option('--kills <n>', 'worker processes to SIGKILL (each replaced at once)', count(0), 20)
  .option('--server-restarts <n>', 'Temporal server restarts (stop the process, start it again in place)', count(0), 1)
  .option(
    '--cluster',
    "run on Temporal's own server binaries (PostgreSQL, 4 shards, mutual TLS; docs/temporal-cluster.md), not the dev server",
    false,
  )
  .option('--db-restarts <n>', 'PostgreSQL restarts (down 5-20 s each)', count(0), 1)
  .option('--concurrency <n>', 'conversations driven at once', count(1), 8)
  .option(
    '--responses-share <share>',
    'share of the conversations on the Responses API (0..1; the others on Chat Completions)',
    share,
    0.5,
  )
  .option('--seed <seed>', 'seed of every random choice (default: random)')
  .option('--max-minutes <n>', 'hard stop: end (and fail) the run after this many minutes', count(1), 10)
  .option(
    '--continue-as-new-after <events>',
    "conversations' continueAsNewAfterEvents (e.g. 40: continue as new between most turns)",
    count(1),
  )
  .option(
    '--no-takeover',
    'turn lost-worker takeover off in the workers (a killed worker waits for the heartbeat timeouts)',
  )
  .option('--no-control', 'measure no control before each kill (the time turns in flight take to move with no fault)')
  .option('--keep-files', 'keep the scratch folder (worker logs, Temporal SQLite file)', false)
  .option('--quiet', 'print only the summary', false);

async function main(): Promise<void> {
  program.parse();
  const opts = program.opts<{
    conversations: number;
    kills: number;
    serverRestarts: number;
    dbRestarts: number;
    concurrency: number;
    responsesShare: number;
    seed?: string;
    maxMinutes: number;
    continueAsNewAfter?: number;
    keepFiles: boolean;
    quiet: boolean;
    takeover: boolean;
    control: boolean;
    cluster: boolean;
  }>();
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const { runChaos } = await import('../test/chaos/run-chaos');
  const summary = await runChaos({
    conversations: opts.conversations,
    kills: opts.kills,
    serverRestarts: opts.serverRestarts,
    databaseRestarts: opts.dbRestarts,
    concurrency: opts.concurrency,
    responsesShare: opts.responsesShare,
    seed: opts.seed,
    maxMinutes: opts.maxMinutes,
    continueAsNewAfterEvents: opts.continueAsNewAfter,
    keepFiles: opts.keepFiles,
    lostWorkerTakeover: opts.takeover,
    controls: opts.control,
    cluster: opts.cluster,
    log: opts.quiet ? undefined : (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`\n${summary.text}\n`);
  process.exitCode = summary.passed ? 0 : 1;
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`chaos run failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 2;
  })
  // Everything the run started is stopped by now; native handles of the Temporal SDK may keep the loop alive.
  .finally(() => setTimeout(() => process.exit(), 200).unref());
