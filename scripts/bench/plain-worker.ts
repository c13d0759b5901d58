/**
 * A plain Temporal worker process of the bench (the floor's, the AI SDK's):
 * connects as `TEMPORAL_ADDRESS` (and the standard `TEMPORAL_TLS_*`
 * variables) says, on `TEMPORAL_TASK_QUEUE`, with the project worker's
 * settings (`createAgentWorker` and the plugin's: sticky queue timeout,
 * shutdown grace, heartbeat throttle; every other option the SDK's default),
 * prints its ready line once it polls and runs until stopped.
 */
import { DefaultLogger, NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import { connectionOptions, loadTemporalConnection } from '../../src/app/temporal-connection';

/** What a plain worker adds to the settings: its workflows and activities (and plugins). */
export type PlainWorkerOptions = Pick<WorkerOptions, 'workflowsPath' | 'activities' | 'plugins'>;

/** Runs the worker; `name` names it in its ready line and its failure. */
export function runPlainWorker(name: string, options: PlainWorkerOptions): void {
  const main = async (): Promise<void> => {
    Runtime.install({ logger: new DefaultLogger('WARN') });
    const address = process.env.TEMPORAL_ADDRESS;
    const taskQueue = process.env.TEMPORAL_TASK_QUEUE;
    if (!address || !taskQueue) throw new Error('Set TEMPORAL_ADDRESS and TEMPORAL_TASK_QUEUE.');
    const tls = connectionOptions(loadTemporalConnection()).tls;
    const connection = await NativeConnection.connect({ address, tls });
    try {
      const worker = await Worker.create({
        connection,
        namespace: 'default',
        taskQueue,
        ...options,
        shutdownGraceTime: '10 seconds',
        stickyQueueScheduleToStartTimeout: '3 seconds',
        defaultHeartbeatThrottleInterval: '1 second',
        maxHeartbeatThrottleInterval: '1 second',
      });
      process.stdout.write(`bench ${name} worker is running\n`);
      await worker.run();
    } finally {
      await connection.close();
    }
  };
  main().catch((err: unknown) => {
    process.stderr.write(`${name} worker failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  });
}
