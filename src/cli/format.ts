/** Readable transcripts and waiting calls' rules for terminals. */
import { approvalsSoFar, escalationSoFar, whoMayDecide } from '../api/who-decides';
import type { WaitingPolicy } from '../contract';
import type { StoredMessage } from '../db/transcript-store';

/**
 * The approval policy's rule a call waits under, in one line: its name, who may decide it, its approvals so far and
 * its reason, e.g. `rule large-refunds: members of finance decide; approvals 1 of 2 (by alice); "Refunds over 500"`.
 */
export function policyLine(policy: WaitingPolicy): string {
  const requester = policy.requesterMayApprove ? ' (whoever asked may approve too)' : '';
  const reason = policy.reason ? `; ${JSON.stringify(policy.reason)}` : '';
  const escalation = escalationSoFar(policy);
  const ladder = escalation ? `; escalation ${escalation}` : '';
  return `rule ${policy.rule}: ${whoMayDecide(policy)} decide${policy.groups?.length ? '' : 's'}${requester}; approvals ${approvalsSoFar(policy)}${ladder}${reason}`;
}

/**
 * One line (or a few) per message: seq, role (with the agent that wrote an answer, in conversations with agents), text
 * or tool calls.
 */
export function formatTranscript(messages: readonly StoredMessage[]): string {
  return messages
    .map(({ seq, message }) => {
      const head = `#${String(seq).padEnd(3)} ${message.role.padEnd(9)}`;
      switch (message.role) {
        case 'assistant': {
          const calls = (message.tool_calls ?? []).map(
            (c) => `\n${' '.repeat(14)}→ ${c.function.name}(${c.function.arguments})  [${c.id}]`,
          );
          const agent = message.name === undefined ? '' : ` (${message.name})`;
          return `${head}${agent} ${message.content ?? ''}${calls.join('')}`;
        }
        case 'tool':
          return `${head} [${message.tool_call_id}] ${message.content}`;
        default:
          return `${head} ${message.content}`;
      }
    })
    .join('\n');
}
