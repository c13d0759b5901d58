/**
 * `chat`: an interactive conversation in the terminal, through the client
 * (approvals asked at the prompt) or through the HTTP API of AGENT_API_URL.
 */
import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { sayThroughApi, transcriptThroughApi } from '../api-conversation';
import { remoteApi, type ApiDecider } from '../api-decisions';
import { withClient } from '../connect';
import { formatTranscript } from '../format';
import { LineQueue } from '../lines';
import { printTurn } from '../print-turn';
import { ChildConversationError } from '../../common/errors';

/**
 * A refusal because the conversation is a child (it runs an agent called as a tool): every later line would be refused
 * too, so chat ends with it (exit 1) instead of prompting again. Through the API it is the code `child_conversation`.
 */
function isChildRefusal(err: Error): boolean {
  return err instanceof ChildConversationError || err.message.endsWith('(child_conversation)');
}

/** Adds `chat` to the program. */
export function addChatCommand(program: Command): void {
  program
    .command('chat')
    .description('interactive conversation (a new one unless you give an id)')
    .argument('[conversationId]', 'conversation to continue')
    .action(async (conversationId?: string) => {
      const id = conversationId ?? `conv-${randomUUID().slice(0, 8)}`;
      const remote = remoteApi(process.env);
      if (remote) {
        await chatThroughApi(remote, id);
        return;
      }
      await withClient(async (client) => {
        process.stdout.write(`Conversation ${id}. Type a message; /show prints the transcript, /quit leaves.\n`);
        const lines = new LineQueue(process.stdin, process.stdout);
        const ask = async (question: string) => (await lines.next(question, process.stdout)) ?? '';
        try {
          for (;;) {
            const typed = await lines.next('you> ', process.stdout);
            if (typed === undefined) break; // input closed
            const line = typed.trim();
            if (line === '/quit' || line === '/exit') break;
            if (line === '') continue;
            if (line === '/show') {
              process.stdout.write(`${formatTranscript(await client.transcript(id))}\n`);
              continue;
            }
            await printTurn(client, id, line, ask).catch((err: Error) => {
              if (isChildRefusal(err)) throw err;
              process.stdout.write(`error: ${err.message}\n`);
            });
          }
        } finally {
          lines.close();
        }
        process.stdout.write(`Bye. Continue later with: npm run cli -- chat ${id}\n`);
      });
    });
}

/**
 * `chat` through the HTTP API: each line a `say`; approvals are listed with the commands that decide them (another
 * person's token, under four eyes).
 */
async function chatThroughApi(api: ApiDecider, id: string): Promise<void> {
  process.stdout.write(
    `Conversation ${id} (through ${api.url}). Type a message; /show prints the transcript, /quit leaves.\n`,
  );
  const lines = new LineQueue(process.stdin, process.stdout);
  try {
    for (;;) {
      const typed = await lines.next('you> ', process.stdout);
      if (typed === undefined) break;
      const line = typed.trim();
      if (line === '/quit' || line === '/exit') break;
      if (line === '') continue;
      const write = (out: string): boolean => process.stdout.write(out);
      if (line === '/show') write(`${formatTranscript(await transcriptThroughApi(api, id))}\n`);
      else
        await sayThroughApi(api, id, line, write).catch((err: Error) => {
          if (isChildRefusal(err)) throw err;
          write(`error: ${err.message}\n`);
        });
    }
  } finally {
    lines.close();
  }
  process.stdout.write(`Bye. Continue later with: npm run cli -- chat ${id}\n`);
}
