import { NativeConnection, Worker } from '@temporalio/worker';
import { DurableAgentPlugin } from 'durable-agent-worker';
import { closeAccount } from './tools';

/** Where the worker connects. */
export interface WorkerSettings {
  temporalAddress: string;
  taskQueue: string;
  databaseUrl: string;
  model: { name: string; apiKey: string; baseUrl?: string };
}

/** The team's worker: its own task queue and workflows, with the durable agent added as a plugin. */
export async function createWorker(
  settings: WorkerSettings,
): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = await NativeConnection.connect({ address: settings.temporalAddress });
  const worker = await Worker.create({
    connection,
    taskQueue: settings.taskQueue,
    workflowsPath: require.resolve('./workflows'),
    plugins: [
      new DurableAgentPlugin({
        tools: [closeAccount],
        model: settings.model,
        database: { url: settings.databaseUrl },
      }),
    ],
  });
  return { worker, connection };
}
