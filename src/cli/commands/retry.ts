/**
 * `retry`: asks a conversation for its last answer again (regenerate) and
 * prints the new turn as `say` prints a turn. The earlier answer stays
 * readable as superseded messages.
 */
import type { Command } from 'commander';
import { sayThroughApi } from '../api-conversation';
import { remoteApi } from '../api-decisions';
import { withClient } from '../connect';
import { printTurn } from '../print-turn';

/** Adds `retry` to the program. */
export function addRetryCommand(program: Command): void {
  program
    .command('retry')
    .description('answer the last message again (the earlier answer is superseded, still readable) and print it')
    .argument('<conversationId>')
    .action(async (conversationId: string) => {
      const remote = remoteApi(process.env);
      if (remote) await sayThroughApi(remote, conversationId, { regenerate: true }, (out) => process.stdout.write(out));
      else
        await withClient((client) =>
          printTurn(client, conversationId, async () => {
            const { requestId, fromSeq } = await client.regenerate(conversationId);
            return { messageId: requestId, fromSeq };
          }),
        );
    });
}
