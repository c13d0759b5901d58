/**
 * `come-back <conversationId> <note> (--in <minutes> | --at <time>)` and
 * `come-back-cancel <conversationId> <comeBackId>`: asks a conversation to
 * start a turn later with a note as its message, or cancels that
 * (docs/coming-back-later.md). Through the HTTP API with AGENT_API_URL and a
 * requester's or operator's token (recorded under its subject), else with the
 * client directly.
 */
import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { callApi, remoteApi } from '../api-decisions';
import { withClient } from '../connect';

/** Adds `come-back` and `come-back-cancel` to the program. */
export function addComeBackCommands(program: Command): void {
  program
    .command('come-back')
    .description('ask a conversation to come back later: a turn starts then with the note as its message')
    .argument('<conversationId>')
    .argument('<note>', 'what the turn is about')
    .option('--in <minutes>', 'minutes from now')
    .option('--at <time>', 'an ISO 8601 time, e.g. 2026-03-02T09:00:00Z')
    .action(async (conversationId: string, note: string, options: { in?: string; at?: string }) => {
      if ((options.in === undefined) === (options.at === undefined))
        throw new Error('Give exactly one of --in <minutes> and --at <ISO 8601 time>.');
      const minutes = options.in === undefined ? undefined : Number(options.in);
      if (minutes !== undefined && !(minutes > 0)) throw new Error(`--in takes minutes above 0; got "${options.in}".`);
      const remote = remoteApi(process.env);
      const body = { note, ...(minutes !== undefined ? { inMinutes: minutes } : { at: options.at }) };
      const sent = remote
        ? await callApi<{ comeBackId: string; at: string }>(
            remote,
            'POST',
            `/v1/conversations/${encodeURIComponent(conversationId)}/come-backs`,
            body,
            'Nothing was asked.',
          )
        : await withClient((client) =>
            client.comeBackLater(conversationId, {
              comeBackId: randomUUID(),
              at: minutes !== undefined ? new Date(Date.now() + minutes * 60_000) : options.at!,
              note,
            }),
          );
      process.stdout.write(
        `${conversationId} comes back at ${sent.at} (come-back ${sent.comeBackId}); cancel with: come-back-cancel ${conversationId} ${sent.comeBackId}\n`,
      );
    });

  program
    .command('come-back-cancel')
    .description('cancel a come-back: its turn does not start')
    .argument('<conversationId>')
    .argument('<comeBackId>')
    .action(async (conversationId: string, comeBackId: string) => {
      const remote = remoteApi(process.env);
      if (remote)
        await callApi(
          remote,
          'POST',
          `/v1/conversations/${encodeURIComponent(conversationId)}/come-backs/${encodeURIComponent(comeBackId)}/cancel`,
          undefined,
          'Nothing was cancelled.',
        );
      else await withClient((client) => client.cancelComeBack(conversationId, comeBackId));
      process.stdout.write(`Cancel of come-back ${comeBackId} sent to ${conversationId}.\n`);
    });
}
