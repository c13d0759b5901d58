/**
 * Evidence for what spaces back-to-back workflow tasks (not part of
 * `npm run bench`): runs the floor workflow (2 no-op activities per step,
 * model latency 0) one turn at a time on two fresh dev servers, one with
 * Temporal's defaults and one with `history.transferProcessorMaxPollRPS`
 * raised, and prints ms/step and the schedule→start wait of every workflow
 * task of one turn.
 *
 *   npx tsx scripts/bench/throttle-check.ts [--steps 40] [--rps 1000] [--extra KEY=VALUE ...]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { findTemporalCli } from '../../src/app/temporal-server';
import { activities } from './floor-worker-activities';
import { historyFigures } from './history';
import { quantile } from './measure';

interface Variant {
  name: string;
  dynamicConfig: string[];
}

async function measure(variant: Variant, steps: number, turns: number): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-throttle-'));
  const cliPath = findTemporalCli();
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: cliPath ? { type: 'existing-path', path: cliPath } : { type: 'cached-download' },
      dbFilename: path.join(dir, 'temporal.sqlite'),
      log: { format: 'pretty', level: 'error' },
      extraArgs: variant.dynamicConfig.flatMap((kv) => ['--dynamic-config-value', kv]),
    },
  });
  try {
    const taskQueue = 'throttle-check';
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('./floor-workflows'),
      activities,
      stickyQueueScheduleToStartTimeout: '3 seconds',
    });
    await worker.runUntil(async () => {
      const perStep: number[] = [];
      let lastId = '';
      for (let i = 0; i < turns + 1; i++) {
        lastId = `throttle-${i}`;
        const started = Date.now();
        await env.client.workflow.execute('floorTurn', {
          taskQueue,
          workflowId: lastId,
          args: [{ steps, activitiesPerStep: 2, latencyMs: 0 }],
        });
        if (i > 0) perStep.push((Date.now() - started) / steps); // the first turn warms up
        await new Promise((resolve) => setTimeout(resolve, 1_500)); // let the rate limiter's bucket fill up again
      }
      const h = await historyFigures(env.client, lastId, steps, (type) => type === 'floorModel');
      const waits = h.anatomy.workflowTaskWaits;
      process.stdout.write(
        `\n${variant.name}: ${quantile(perStep, 0.5).toFixed(1)} ms/step (median of ${turns} turns of ${steps} steps, 2 no-op activities each)\n` +
          `  workflow task schedule→start, ms, in order: ${waits.map((w) => w.toFixed(0)).join(' ')}\n` +
          `  first 20 tasks p50 ${quantile(waits.slice(0, 20), 0.5).toFixed(1)} ms; after them p50 ${quantile(waits.slice(20), 0.5).toFixed(1)} ms\n` +
          `  ${JSON.stringify({ ...h.anatomy, workflowTaskWaits: undefined })}\n`,
      );
    });
  } finally {
    await env.teardown();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const arg = (name: string, fallback: string): string => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : fallback;
  };
  const steps = Number(arg('--steps', '40'));
  const rps = Number(arg('--rps', '1000'));
  const extra = process.argv.flatMap((a, i) => (process.argv[i - 1] === '--extra' ? [a] : []));
  const variants: Variant[] = [
    { name: 'defaults', dynamicConfig: [] },
    {
      name: `history.transferProcessorMaxPollRPS=${rps}`,
      dynamicConfig: [`history.transferProcessorMaxPollRPS=${rps}`],
    },
    ...(extra.length > 0 ? [{ name: extra.join(', '), dynamicConfig: extra }] : []),
  ];
  for (const v of variants) await measure(v, steps, 3);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
