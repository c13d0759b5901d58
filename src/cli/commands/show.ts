/**
 * `show` and `state`: what a conversation holds, as text or as the state
 * query's JSON.
 */
import type { Command } from 'commander';
import { stateThroughApi, transcriptThroughApi } from '../api-conversation';
import { remoteApi } from '../api-decisions';
import { withClient } from '../connect';
import { formatTranscript } from '../format';
import { formatGuardrailResults } from '../guardrail-lines';
import { formatUsage } from '../usage-lines';
import { formatWaiting } from '../waiting-lines';

/** Adds `show` and `state` to the program. */
export function addShowCommands(program: Command): void {
  program
    .command('show')
    .description('print the transcript and status')
    .argument('<conversationId>')
    .action(async (conversationId: string) => {
      const remote = remoteApi(process.env);
      const { state, transcript } = remote
        ? {
            state: await stateThroughApi(remote, conversationId),
            transcript: await transcriptThroughApi(remote, conversationId),
          }
        : await withClient(async (client) => ({
            state: await client.state(conversationId),
            transcript: await client.transcript(conversationId),
          }));
      process.stdout.write(
        `${conversationId}: ${state.status}, ${state.steps} model calls${state.lastError ? `, last error: ${state.lastError}` : ''}\n`,
      );
      for (const line of formatWaiting(state)) process.stdout.write(`${line}\n`);
      if (state.forkedFrom)
        process.stdout.write(`forked from ${state.forkedFrom.conversationId} at seq ${state.forkedFrom.seq}\n`);
      process.stdout.write(`${formatTranscript(transcript)}\n`);
      if (state.usage) process.stdout.write(`${formatUsage(state)}\n`);
      const guardrails = formatGuardrailResults(state.recentTurns);
      if (guardrails) process.stdout.write(`${guardrails}\n`);
    });

  program
    .command('state')
    .description('print the state query result as JSON')
    .argument('<conversationId>')
    .action(async (conversationId: string) => {
      const remote = remoteApi(process.env);
      const state = remote
        ? await stateThroughApi(remote, conversationId)
        : await withClient((client) => client.state(conversationId));
      process.stdout.write(`${JSON.stringify(state, null, 2)}\n`);
    });
}
