/**
 * Temporal's own AI integration, `@temporalio/ai-sdk`: one turn written the
 * way its documentation writes one. A single `generateText` from `ai` with the
 * model through the plugin's `temporalProvider` (each model call an
 * `invokeModel` activity of the plugin) and one tool whose `execute` runs a
 * no-op activity. Bundled into the AI SDK worker's sandbox (`ai-sdk-worker.ts`).
 */
import { temporalProvider } from '@temporalio/ai-sdk/workflow';
import { proxyActivities } from '@temporalio/workflow';
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';

/** The tool's activity: a no-op, like the floor's tool and the project's bench tool. */
export interface AiSdkBenchActivities {
  benchNoop(input: { i: number }): Promise<{ ok: true; i: number }>;
}

/** One turn: the scripted user message, the tool's name and how many tool steps the model will ask for. */
export interface AiSdkTurnInput {
  prompt: string;
  tool: string;
  steps: number;
}

/** What a turn did: its model calls (the AI SDK's steps) and tool calls. */
export interface AiSdkTurnResult {
  modelCalls: number;
  toolCalls: number;
  text: string;
}

// As its documentation proxies a tool's activity.
const { benchNoop } = proxyActivities<AiSdkBenchActivities>({ startToCloseTimeout: '1 minute' });

/** Runs one turn: `steps` model calls that each ask for the tool, then the final answer. */
export async function aiSdkTurn(input: AiSdkTurnInput): Promise<AiSdkTurnResult> {
  const result = await generateText({
    model: temporalProvider.languageModel('scripted-model'),
    system: 'You are a benchmark. Call the tool when told.',
    prompt: input.prompt,
    tools: {
      [input.tool]: tool({
        description: 'Does nothing and answers at once.',
        inputSchema: z.object({ i: z.number().int() }),
        execute: (args) => benchNoop(args),
      }),
    },
    // The same number of model calls as the project's turn allows (maxSteps = steps + 1).
    stopWhen: stepCountIs(input.steps + 1),
  });
  return {
    modelCalls: result.steps.length,
    toolCalls: result.steps.reduce((n, step) => n + step.toolCalls.length, 0),
    text: result.text,
  };
}
