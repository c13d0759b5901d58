/** What a conversation spent, as `show` prints it: in all, and by agent when agents are named. */
import type { ConversationState } from '../contract/conversation-state';
import type { ConversationUsage } from '../contract/turn-records';

/**
 * `spent: 1234 tokens, $0.0021` and, when agents are named, one line per
 * agent (its own calls and those of the agents it called as tools are
 * counted in the total: a budget covers them all).
 */
export function formatUsage(state: Pick<ConversationState, 'usage' | 'usageByAgent'>): string {
  const lines = [`spent: ${describe(state.usage)}`];
  for (const [agent, usage] of Object.entries(state.usageByAgent ?? {})) lines.push(`  ${agent}: ${describe(usage)}`);
  return lines.join('\n');
}

function describe(u: ConversationUsage): string {
  const tokens = `${u.promptTokens + u.completionTokens} tokens (${u.promptTokens} prompt, ${u.completionTokens} completion)`;
  const cost = u.costUsd > 0 ? `, $${u.costUsd}` : '';
  const unpriced = u.unpricedCalls > 0 ? `, ${u.unpricedCalls} calls without a price` : '';
  return `${tokens}${cost}${unpriced}`;
}
