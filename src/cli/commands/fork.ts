/**
 * `fork`: a new conversation from an existing one's transcript, up to a seq
 * or the start of a turn (`AgentClient.fork`, or the HTTP API's
 * `POST /v1/conversations/{id}/forks` with AGENT_API_URL). Prints the new id.
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { ForkAt, ForkResult } from '../../client/fork';
import { callApi, remoteApi } from '../api-decisions';
import { withClient } from '../connect';

/** Adds `fork` to the program. */
export function addForkCommand(program: Command): void {
  program
    .command('fork')
    .description(
      'start a new conversation from this one up to a message (--seq) or the start of a turn (--turn); prints its id',
    )
    .argument('<conversationId>')
    .option('--seq <n>', 'keep the messages through this seq', nonNegative)
    .option('--turn <n>', 'keep what comes before this turn (turns are numbered from 1)', nonNegative)
    .option('--id <conversationId>', "the fork's id (default: a new fork-<uuid>)")
    .action(async (conversationId: string, options: { seq?: number; turn?: number; id?: string }) => {
      if ((options.seq === undefined) === (options.turn === undefined))
        throw new Error('Say where to fork with exactly one of --seq <n> or --turn <n>.');
      const at: ForkAt = options.seq !== undefined ? { seq: options.seq } : { turn: options.turn! };
      const remote = remoteApi(process.env);
      const fork = remote
        ? await callApi<ForkResult>(remote, 'POST', `/v1/conversations/${encodeURIComponent(conversationId)}/forks`, {
            ...at,
            ...(options.id ? { conversationId: options.id } : {}),
          })
        : await withClient((client) =>
            client.fork(conversationId, at, options.id ? { conversationId: options.id } : {}),
          );
      process.stdout.write(`${fork.conversationId}\n`);
      const open = fork.answeredCalls.filter((c) => c.how === 'not_run').length;
      process.stderr.write(
        `forked from ${fork.forkedFrom.conversationId} at seq ${fork.forkedFrom.seq}: ${fork.messageCount} messages` +
          (open > 0 ? `, ${open} open call${open === 1 ? '' : 's'} answered as not run in the fork` : '') +
          '\n',
      );
    });
}

/** A non-negative integer option. */
function nonNegative(value: string): number {
  if (!/^[0-9]+$/.test(value)) throw new InvalidArgumentError(`expected a whole number, got "${value}"`);
  return Number(value);
}
