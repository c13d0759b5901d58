/**
 * `cancel` and `end`: stopping a conversation's turn, or the conversation.
 */
import type { Command } from 'commander';
import { withClient } from '../connect';

/** Adds `cancel` and `end` to the program. */
export function addStopCommands(program: Command): void {
  program
    .command('cancel')
    .description('cancel the current turn: finished results are kept, running calls interrupted, the rest cancelled')
    .argument('<conversationId>')
    .option('--reason <text>', 'why')
    .action(async (conversationId: string, options: { reason?: string }) => {
      await withClient((client) => client.cancelTurn(conversationId, options.reason));
    });

  program
    .command('end')
    .description('end a conversation after its current turn')
    .argument('<conversationId>')
    .action(async (conversationId: string) => {
      await withClient((client) => client.end(conversationId));
    });
}
