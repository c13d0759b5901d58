// The team's workflows module: the conversation workflow in one line, and a
// workflow of its own written with the AI SDK through `@temporalio/ai-sdk`
// (its model calls run as that plugin's activities, its tool as the team's).
import { temporalProvider } from '@temporalio/ai-sdk/workflow';
import { proxyActivities } from '@temporalio/workflow';
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';
import type * as activities from './activities';

export { agentConversation } from 'durable-agent-worker/workflow';

const { lookUpAccount } = proxyActivities<typeof activities>({ startToCloseTimeout: '1 minute' });

/** What the AI SDK workflow answered, and the tools its steps called. */
export interface AccountSummary {
  text: string;
  toolCalls: string[];
  steps: number;
}

/** Answers a question about an account with one `generateText`: the model looks the account up, then answers. */
export async function accountSummary(accountId: string): Promise<AccountSummary> {
  const result = await generateText({
    model: temporalProvider.languageModel('scripted-model'),
    system: 'You answer questions about customer accounts. Look an account up before you describe it.',
    prompt: `What is the status of account ${accountId}?`,
    tools: {
      look_up_account: tool({
        description: 'Looks up a customer account: its status and plan.',
        inputSchema: z.object({ account_id: z.string() }),
        execute: ({ account_id }) => lookUpAccount(account_id),
      }),
    },
    stopWhen: stepCountIs(3),
  });
  return {
    text: result.text,
    toolCalls: result.steps.flatMap((step) => step.toolCalls.map((call) => call.toolName)),
    steps: result.steps.length,
  };
}
