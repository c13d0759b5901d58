/**
 * The worker process of Temporal's own AI integration: a plain Temporal
 * worker (`plain-worker.ts`, the floor worker's settings) with `AiSdkPlugin`
 * from `@temporalio/ai-sdk` (its model activities call the scripted model
 * server over HTTP through `@ai-sdk/openai-compatible`), the workflow of
 * `ai-sdk-workflows.ts` and its no-op tool activity. Configured like the
 * floor's, and by `OPENAI_BASE_URL`.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import type { AiSdkBenchActivities } from './ai-sdk-workflows';
import { runPlainWorker } from './plain-worker';

const activities: AiSdkBenchActivities = {
  async benchNoop({ i }) {
    return { ok: true, i };
  },
};

const baseURL = process.env.OPENAI_BASE_URL;
if (!baseURL) {
  process.stderr.write('ai-sdk worker failed: set OPENAI_BASE_URL.\n');
  process.exitCode = 1;
} else {
  runPlainWorker('ai-sdk', {
    workflowsPath: require.resolve('./ai-sdk-workflows'),
    activities,
    plugins: [
      new AiSdkPlugin({ modelProvider: createOpenAICompatible({ name: 'bench-model', apiKey: 'bench-key', baseURL }) }),
    ],
  });
}
