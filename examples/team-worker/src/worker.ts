import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { NativeConnection, Worker } from '@temporalio/worker';
import { DurableAgentPlugin } from 'durable-agent-worker';
import * as activities from './activities';
import { closeAccount } from './tools';

/** Where the worker connects. */
export interface WorkerSettings {
  temporalAddress: string;
  taskQueue: string;
  databaseUrl: string;
  /** The OpenAI-compatible model both plugins call. */
  model: { name: string; apiKey: string; baseUrl?: string };
}

/**
 * The team's worker: its own task queue, workflows and activities, with two
 * plugins side by side: the durable agent, and Temporal's AI SDK integration
 * for the team's own AI SDK workflow.
 */
export async function createWorker(
  settings: WorkerSettings,
): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = await NativeConnection.connect({ address: settings.temporalAddress });
  const worker = await Worker.create({
    connection,
    taskQueue: settings.taskQueue,
    workflowsPath: require.resolve('./workflows'),
    activities,
    plugins: [
      new DurableAgentPlugin({
        tools: [closeAccount],
        model: settings.model,
        database: { url: settings.databaseUrl },
      }),
      new AiSdkPlugin({
        modelProvider: createOpenAICompatible({
          name: 'team-model',
          apiKey: settings.model.apiKey,
          baseURL: settings.model.baseUrl ?? 'https://api.openai.com/v1',
        }),
      }),
    ],
  });
  return { worker, connection };
}
