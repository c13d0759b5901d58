/**
 * The worker process of Temporal's own AI integration: a plain Temporal
 * worker with `AiSdkPlugin` from `@temporalio/ai-sdk` (its model activities
 * call the scripted model server over HTTP through `@ai-sdk/openai-compatible`),
 * the workflow of `ai-sdk-workflows.ts` and its no-op tool activity, and the
 * floor worker's settings (every other option the SDK's default). Configured
 * by `TEMPORAL_ADDRESS` (and the standard `TEMPORAL_TLS_*` variables),
 * `TEMPORAL_TASK_QUEUE` and `OPENAI_BASE_URL`; prints a ready line once it polls.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { connectionOptions, loadTemporalConnection } from '../../src/app/temporal-connection';
import type { AiSdkBenchActivities } from './ai-sdk-workflows';

const activities: AiSdkBenchActivities = {
  async benchNoop({ i }) {
    return { ok: true, i };
  },
};

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const address = process.env.TEMPORAL_ADDRESS;
  const taskQueue = process.env.TEMPORAL_TASK_QUEUE;
  const baseURL = process.env.OPENAI_BASE_URL;
  if (!address || !taskQueue || !baseURL)
    throw new Error('Set TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE and OPENAI_BASE_URL.');
  const connection = await NativeConnection.connect({ address, tls: connectionOptions(loadTemporalConnection()).tls });
  try {
    const worker = await Worker.create({
      connection,
      namespace: 'default',
      taskQueue,
      workflowsPath: require.resolve('./ai-sdk-workflows'),
      activities,
      plugins: [
        new AiSdkPlugin({
          modelProvider: createOpenAICompatible({ name: 'bench-model', apiKey: 'bench-key', baseURL }),
        }),
      ],
      shutdownGraceTime: '10 seconds',
      stickyQueueScheduleToStartTimeout: '3 seconds',
      defaultHeartbeatThrottleInterval: '1 second',
      maxHeartbeatThrottleInterval: '1 second',
    });
    process.stdout.write('bench ai-sdk worker is running\n');
    await worker.run();
  } finally {
    await connection.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`ai-sdk worker failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
