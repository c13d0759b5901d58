/**
 * `npx tsx scripts/bench/replay-cpu.ts [history.json] [--times N]`: what the
 * conversation workflow's code costs the worker per workflow task, without a
 * server, a database or a model: a recorded history replayed N times (500 by
 * default) on one replay worker, the CPU of the worker's threads read from
 * /proc before and after. Replay runs the same workflow code and the same
 * sandbox as a live worker, so a change to workflow code (the core, the
 * workflow function, their promises) shows here first, with far less noise
 * than the bench's 100 conversations. Prints figures; asserts nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { readHistoryFile } from '../../src/testing/histories';

const ROOT = path.join(__dirname, '..', '..');

/** CPU ms of this process's threads, by thread name. */
function threadCpu(): Map<string, number> {
  const ticks = 1000 / 100; // USER_HZ is 100 on Linux
  const byName = new Map<string, number>();
  for (const tid of fs.readdirSync('/proc/self/task')) {
    const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    byName.set(name, (byName.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) * ticks);
  }
  return byName;
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const args = process.argv.slice(2);
  const timesAt = args.indexOf('--times');
  const times = timesAt >= 0 ? Number(args[timesAt + 1]) : 500;
  const file =
    args.find((a, i) => !a.startsWith('--') && i !== timesAt + 1) ??
    path.join(ROOT, 'test', 'fixtures', 'histories', 'deferred-transcript-writes.json');
  const quiet = (): undefined => undefined;
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: path.join(ROOT, 'src', 'workflows', 'index.ts'),
    workflowInterceptorModules: [path.join(ROOT, 'src', 'workflows', 'interceptors.ts')],
    logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: console.error },
  });
  const recorded = readHistoryFile(file);
  const { events } = recorded.history as { events?: { workflowTaskCompletedEventAttributes?: unknown }[] };
  const tasks = (events ?? []).filter((e) => e.workflowTaskCompletedEventAttributes).length;
  const copies = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ ...recorded, workflowId: `${recorded.workflowId}-${i}` }));
  const replay = async (n: number): Promise<void> => {
    for await (const result of Worker.runReplayHistories({ workflowBundle }, copies(n)))
      if (result.error) throw new Error(`replay failed: ${result.error.message}`);
  };
  await replay(Math.min(50, times)); // warm up: the sandbox, V8's code
  const before = threadCpu();
  const started = process.hrtime.bigint();
  await replay(times);
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  const after = threadCpu();
  const spent = [...after]
    .map(([name, ms]) => [name, ms - (before.get(name) ?? 0)] as const)
    .filter(([, ms]) => ms > 0);
  const total = spent.reduce((sum, [, ms]) => sum + ms, 0);
  console.log(
    `${path.basename(file)}: ${times} replays of ${tasks} workflow tasks, ${wallMs.toFixed(0)} ms wall; ` +
      `CPU ${(total / times).toFixed(2)} ms per replay, ${(total / times / tasks).toFixed(3)} ms per workflow task`,
  );
  for (const [name, ms] of spent.sort((a, b) => b[1] - a[1]))
    console.log(`  ${name}: ${(ms / times / tasks).toFixed(3)} ms per workflow task`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
