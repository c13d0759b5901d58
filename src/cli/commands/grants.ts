/**
 * `grants` and `revoke-grant`: a conversation's standing grants, from its
 * state, and revoking one (docs/approval-policies.md#standing-grants).
 * `revoke-grant` goes through the HTTP API whenever the CLI finds one, as
 * `approve` does (recorded under the token's subject), else through the
 * client directly (recorded under `--by`).
 */
import type { Command } from 'commander';
import { isWorkerOutage, type AgentClient } from '../../client/client';
import type { ConversationState, GrantView } from '../../contract';
import { stateThroughApi } from '../api-conversation';
import { callApi, remoteApi } from '../api-decisions';
import { withClient } from '../connect';
import { CLI_DECISION_WAIT_MS, localApi } from '../decide';
import { grantLine } from '../grant-lines';

/** What revoking did: as whom, and whether it waits for a worker. */
interface Revoked {
  revokedBy?: string;
  queued: boolean;
  grant?: GrantView;
}

/** Adds `grants` and `revoke-grant` to the program. */
export function addGrantCommands(program: Command): void {
  program
    .command('grants')
    .description(
      "list the conversation's standing grants (given with approvals: later calls of a tool run without asking, within limits), newest last",
    )
    .argument('<conversationId>')
    .option('--json', "print the state's grants as JSON")
    .action(async (conversationId: string, options: { json?: boolean }) => {
      const remote = remoteApi(process.env);
      const state = remote
        ? await stateThroughApi(remote, conversationId)
        : await withClient((client) => client.state(conversationId));
      const grants = state.grants ?? [];
      if (options.json) {
        process.stdout.write(`${JSON.stringify(grants, null, 2)}\n`);
        return;
      }
      if (grants.length === 0) {
        process.stdout.write(
          `No grant was given in conversation ${conversationId}. Give one with an approval: npm run cli -- approve ${conversationId} <toolCallId> --grant-calls 3\n`,
        );
        return;
      }
      const now = Date.now();
      for (const grant of grants) process.stdout.write(`${grantLine(grant, now)}\n`);
    });

  program
    .command('revoke-grant')
    .description('revoke a standing grant: the calls it would have covered wait for a person again')
    .argument('<conversationId>')
    .argument('<grantId>', 'the grant, named by the id of the decision that gave it (see "grants")')
    .option('--reason <text>', 'why, for the records')
    .option(
      '--by <name>',
      'who revokes, for the records (only without the HTTP API; through it, the token names who revokes)',
      process.env.USER,
    )
    .action(async (conversationId: string, grantId: string, options: { reason?: string; by?: string }) => {
      const { api } = localApi();
      const done: Revoked = api
        ? await callApi<Revoked>(
            api,
            'POST',
            `/v1/conversations/${encodeURIComponent(conversationId)}/grants/${encodeURIComponent(grantId)}/revoke`,
            options.reason ? { reason: options.reason } : {},
            'Nothing was revoked.',
          )
        : await withClient((client) => revokeDirectly(client, conversationId, grantId, options));
      const as = done.revokedBy ? ` as ${done.revokedBy}` : '';
      if (done.queued) {
        process.stdout.write(
          `Queued${as}: revoke grant ${grantId}. No worker answered for conversation ${conversationId} within ${CLI_DECISION_WAIT_MS / 1000} s, so the revocation waits in the conversation's history and applies when a worker runs (npm start).\n`,
        );
        return;
      }
      process.stdout.write(
        `Revoked${as}: grant ${grantId}; later calls of ${done.grant?.toolName ?? 'its tool'} in ${conversationId} wait for a person again.\n`,
      );
      if (done.grant) process.stdout.write(`  ${grantLine(done.grant, Date.now())}\n`);
    });
}

/**
 * Revokes a grant with the client: refuses one the conversation does not have or revoked already (changing nothing),
 * signals the revocation, and waits until the state shows it (queued when no worker answers).
 */
async function revokeDirectly(
  client: AgentClient,
  conversationId: string,
  grantId: string,
  options: { reason?: string; by?: string },
): Promise<Revoked> {
  const read = async (timeoutMs: number): Promise<ConversationState | undefined> =>
    client.state(conversationId, { timeoutMs }).catch((err: unknown) => {
      if (isWorkerOutage(err)) return undefined;
      throw err;
    });
  const before = await read(CLI_DECISION_WAIT_MS);
  const known = before?.grants?.find((g) => g.id === grantId);
  if (before && !known)
    throw new Error(
      `Conversation ${conversationId} has no grant "${grantId}" (see "grants": each is named by the id of the decision that gave it). Nothing was revoked.`,
    );
  if (known?.revokedAt !== undefined)
    throw new Error(
      `Grant "${grantId}" was revoked already${known.revokedBy ? ` by ${known.revokedBy}` : ''} at ${known.revokedAt}; nothing changed.`,
    );
  await client.revokeGrant(conversationId, {
    grantId,
    ...(options.by ? { revokedBy: options.by } : {}),
    ...(options.reason ? { reason: options.reason } : {}),
  });
  const revokedBy = options.by;
  if (!before) return { revokedBy, queued: true };
  const deadline = Date.now() + CLI_DECISION_WAIT_MS;
  while (Date.now() < deadline) {
    const grant = (await read(Math.max(deadline - Date.now(), 1)))?.grants?.find((g) => g.id === grantId);
    if (grant?.revokedAt !== undefined) return { revokedBy, queued: false, grant };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { revokedBy, queued: true };
}
