/**
 * `pending` and `unknown-effects`: the tool calls that need a person, across
 * conversations (with the approval policy's rule each waits under: who may
 * decide it and its approvals so far).
 */
import type { Command } from 'commander';
import type { WaitingCall } from '../../contract';
import { remoteApi, waitingThroughApi } from '../api-decisions';
import { policyLine } from '../format';
import { withClient } from '../connect';
import { localApi } from '../decide';

/** Adds `pending` and `unknown-effects` to the program. */
export function addPendingCommands(program: Command): void {
  program
    .command('pending')
    .description(
      "list every tool call waiting for a decision, oldest first (from PostgreSQL; no search attribute needed); through the HTTP API (AGENT_API_URL, or the running npm start's), those your token may decide first",
    )
    .action(async () => {
      // AGENT_API_URL's API, else the running npm start's with its development approver: the caller's queue first.
      const api = remoteApi(process.env) ?? localApi().api;
      // Through the API its time is ISO text, from the client a Date; neither is printed.
      const waiting: (Omit<WaitingCall, 'requestedAt'> & { mayDecide?: boolean })[] = api
        ? await waitingThroughApi(api)
        : await withClient(async (client) => (await client.waitingCalls()).calls);
      if (waiting.length === 0) {
        process.stdout.write('No tool call is waiting for approval.\n');
        return;
      }
      if (api) {
        const yours = waiting.filter((p) => p.mayDecide).length;
        const who = api.subject ? ` (${api.subject})` : '';
        process.stdout.write(
          yours === 0
            ? `None of the ${waiting.length} is yours to decide${who}: each names who may.\n`
            : `${yours} of ${waiting.length} yours to decide${who}, listed first:\n`,
        );
      }
      for (const p of waiting) {
        const by = p.requestedBy.length > 0 ? `  asked by ${p.requestedBy.join(', ')}` : '';
        // A call inside an agent called as a tool: the top-level conversation it serves, and the agents down to it.
        const below = p.rootConversationId !== p.conversationId ? `  for ${p.rootConversationId}` : '';
        const agents = p.agentPath.length > 0 ? `  agents ${p.agentPath.join(' > ')}` : '';
        // Through the API, whether this token may decide it (four eyes, the rule's groups).
        const yours = p.mayDecide === false ? '  not yours to approve' : '';
        process.stdout.write(
          `${p.conversationId}  ${p.toolCallId}  ${p.toolName}(${JSON.stringify(p.arguments)})  waiting ${formatAge(p.ageMs)}${by}${below}${agents}  key ${p.callKey}${yours}\n`,
        );
        if (p.policy) process.stdout.write(`  ${policyLine(p.policy)}\n`);
      }
    });

  program
    .command('unknown-effects')
    .description(
      'list tool calls whose effect is unknown (found by the UnknownEffects search attribute, group unknownEffects): check each before acting again',
    )
    .action(async () => {
      await withClient(async (client) => {
        const found = await client.withUnknownEffects();
        if (found.length === 0) {
          process.stdout.write('No conversation has a tool call whose effect is unknown.\n');
          return;
        }
        for (const { conversationId, count, unknownEffects } of found) {
          process.stdout.write(`${conversationId}  ${count} call(s) with unknown effect\n`);
          for (const u of unknownEffects) {
            process.stdout.write(`  ${u.toolCallId}  ${u.toolName}  key ${u.callKey}  ${u.settledAt}  ${u.why}\n`);
          }
        }
      });
    });
}

function formatAge(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  return `${Math.round(s / 3600)}h`;
}
