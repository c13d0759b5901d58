/**
 * The command line: `chat`, `say`, `show`, `state`, `end`.
 * Finds Temporal and PostgreSQL from the environment, or from the runtime
 * file a running `npm start` writes.
 */
import { randomUUID } from 'node:crypto';
import readline from 'node:readline/promises';
import { Command } from 'commander';
import { loadConfig } from '../runtime/config';
import { readRuntimeInfo } from '../runtime/services';
import { AgentClient } from './client';
import { formatTranscript } from './format';

async function connect(): Promise<AgentClient> {
  const config = loadConfig();
  const runtime = readRuntimeInfo(config.dataDir);
  const temporalAddress = config.temporal.address ?? runtime?.temporalAddress;
  const databaseUrl = config.databaseUrl ?? runtime?.databaseUrl;
  if (!temporalAddress || !databaseUrl) {
    throw new Error(
      `No running worker found (no ${config.dataDir}/runtime.json) and TEMPORAL_ADDRESS/DATABASE_URL are not both set. Start one with "npm start" in another terminal.`,
    );
  }
  return AgentClient.connect({
    temporalAddress,
    databaseUrl,
    namespace: config.temporal.namespace ?? runtime?.namespace,
    taskQueue: config.temporal.taskQueue ?? runtime?.taskQueue,
  });
}

async function withClient(action: (client: AgentClient) => Promise<void>): Promise<void> {
  const client = await connect();
  try {
    await action(client);
  } finally {
    await client.close();
  }
}

async function printTurn(client: AgentClient, conversationId: string, text: string): Promise<void> {
  const before = (await client.state(conversationId).catch(() => undefined))?.messages.length ?? 0;
  const { turn, answer } = await client.ask(conversationId, text);
  const transcript = await client.transcript(conversationId);
  for (const { message } of transcript.slice(before)) {
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) process.stdout.write(`  ⚙ ${call.function.name}(${call.function.arguments})\n`);
    } else if (message.role === 'tool') {
      process.stdout.write(`  ↳ ${message.content.slice(0, 200)}\n`);
    }
  }
  if (turn.outcome === 'answered') process.stdout.write(`agent> ${answer ?? ''}\n`);
  else process.stdout.write(`agent> (turn failed: ${turn.error})\n`);
}

const program = new Command()
  .name('agent')
  .description('Talk to the durable agent worker. Start the worker first with "npm start".');

program
  .command('chat')
  .description('interactive conversation (a new one unless you give an id)')
  .argument('[conversationId]', 'conversation to continue')
  .action(async (conversationId?: string) => {
    const id = conversationId ?? `conv-${randomUUID().slice(0, 8)}`;
    await withClient(async (client) => {
      process.stdout.write(`Conversation ${id}. Type a message; /show prints the transcript, /quit leaves.\n`);
      const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
      try {
        for (;;) {
          let line: string;
          try {
            line = (await rl.question('you> ')).trim();
          } catch {
            break; // input closed
          }
          if (line === '/quit' || line === '/exit') break;
          if (line === '') continue;
          if (line === '/show') {
            process.stdout.write(`${formatTranscript(await client.transcript(id))}\n`);
            continue;
          }
          await printTurn(client, id, line).catch((err: Error) => process.stdout.write(`error: ${err.message}\n`));
        }
      } finally {
        rl.close();
      }
      process.stdout.write(`Bye. Continue later with: npm run cli -- chat ${id}\n`);
    });
  });

program
  .command('say')
  .description('send one message and print the answer')
  .argument('<conversationId>')
  .argument('<text...>')
  .action(async (conversationId: string, words: string[]) => {
    await withClient((client) => printTurn(client, conversationId, words.join(' ')));
  });

program
  .command('show')
  .description('print the transcript and status')
  .argument('<conversationId>')
  .action(async (conversationId: string) => {
    await withClient(async (client) => {
      const state = await client.state(conversationId);
      process.stdout.write(`${conversationId}: ${state.status}, ${state.steps} model calls${state.lastError ? `, last error: ${state.lastError}` : ''}\n`);
      process.stdout.write(`${formatTranscript(await client.transcript(conversationId))}\n`);
    });
  });

program
  .command('state')
  .description('print the state query result as JSON')
  .argument('<conversationId>')
  .action(async (conversationId: string) => {
    await withClient(async (client) => {
      process.stdout.write(`${JSON.stringify(await client.state(conversationId), null, 2)}\n`);
    });
  });

program
  .command('end')
  .description('end a conversation after its current turn')
  .argument('<conversationId>')
  .action(async (conversationId: string) => {
    await withClient((client) => client.end(conversationId));
  });

program.parseAsync().catch((err: Error) => {
  process.stderr.write(`error: ${err.message}\n`);
  process.exitCode = 1;
});
