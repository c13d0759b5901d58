/**
 * The floor's worker process: a plain Temporal worker with the floor workflow
 * and its no-op activities, and the project worker's settings
 * (`createAgentWorker` and the plugin's: sticky queue timeout, shutdown grace,
 * heartbeat throttle; every other option the SDK's default). Configured by
 * `TEMPORAL_ADDRESS` (and the standard `TEMPORAL_TLS_*` variables) and
 * `TEMPORAL_TASK_QUEUE`; prints a ready line once it polls.
 */
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { connectionOptions, loadTemporalConnection } from '../../src/app/temporal-connection';
import { activities } from './floor-worker-activities';

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const address = process.env.TEMPORAL_ADDRESS;
  const taskQueue = process.env.TEMPORAL_TASK_QUEUE;
  if (!address || !taskQueue) throw new Error('Set TEMPORAL_ADDRESS and TEMPORAL_TASK_QUEUE.');
  const connection = await NativeConnection.connect({ address, tls: connectionOptions(loadTemporalConnection()).tls });
  try {
    const worker = await Worker.create({
      connection,
      namespace: 'default',
      taskQueue,
      workflowsPath: require.resolve('./floor-workflows'),
      activities,
      shutdownGraceTime: '10 seconds',
      stickyQueueScheduleToStartTimeout: '3 seconds',
      defaultHeartbeatThrottleInterval: '1 second',
      maxHeartbeatThrottleInterval: '1 second',
    });
    process.stdout.write('bench floor worker is running\n');
    await worker.run();
  } finally {
    await connection.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`floor worker failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
