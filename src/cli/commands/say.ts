/**
 * `say`: sends one message (from arguments, standard input or a file) and
 * prints the turn.
 */
import fs from 'node:fs';
import type { Command } from 'commander';
import { sayThroughApi } from '../api-conversation';
import { remoteApi } from '../api-decisions';
import { withClient } from '../connect';
import { readAll } from '../lines';
import { printTurn } from '../print-turn';

/** Adds `say` to the program. */
export function addSayCommand(program: Command): void {
  program
    .command('say')
    .description('send one message and print the answer (the text as arguments, "-" for standard input, or --file)')
    .argument('<conversationId>')
    .argument('[text...]')
    .option('--file <path>', 'the message is the text of this file')
    .action(async (conversationId: string, words: string[], options: { file?: string }) => {
      let text = words.join(' ');
      if (options.file) {
        if (words.length > 0) throw new Error('Give the message as text, "-" or --file, not several.');
        text = fs.readFileSync(options.file, 'utf8');
      } else if (words.length === 1 && words[0] === '-') {
        text = await readAll(process.stdin);
      }
      if (text.trim() === '')
        throw new Error('The message is empty: give its text, "-" to read it from standard input, or --file <path>.');
      const message = text.replace(/\n$/, '');
      const remote = remoteApi(process.env);
      if (remote) await sayThroughApi(remote, conversationId, message, (out) => process.stdout.write(out));
      else await withClient((client) => printTurn(client, conversationId, message));
    });
}
