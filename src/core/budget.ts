/**
 * A conversation's budget: whether a limit is reached before the next model
 * call, what each call and each agent called as a tool spent, and the budget a
 * model call draws on (the top-level conversation's, shared by every agent
 * below it). Pure.
 */
import type { SpendScope } from '../contract/activities';
import type { SubAgentTurn } from '../contract/conversation-state';
import type { ConversationUsage, TokenUsage, TurnRecord } from '../contract/turn-records';
import { roundUsd } from './pricing';
import type { CoreState } from './state';
import { record } from './turn-record';

const COST_UNKNOWN =
  "a limit in dollars needs a price for the model (AGENT_MODEL_PRICES, or the plugin's model.prices)";

/**
 * Before a model call: when a limit of the conversation's budget is reached,
 * the turn's record (`budget_exceeded`, saying which limit, what was spent and
 * how to go on); otherwise undefined. Only between steps, so every call of the
 * turn is answered by then.
 */
export function budgetStop(s: CoreState): TurnRecord | undefined {
  const budget = s.input.budget;
  if (!budget) return undefined;
  const t = s.turn;
  const u = s.kept.usage;
  const scopes = [
    {
      what: 'turn',
      tokens: (t.usage?.promptTokens ?? 0) + (t.usage?.completionTokens ?? 0),
      usd: t.cost.usd,
      unpriced: t.cost.unpriced,
      limits: { tokens: budget.turnTokens, usd: budget.turnCostUsd },
      then: 'No further model call was made in this turn; the next message starts a turn with a budget of its own.',
    },
    {
      what: 'conversation',
      tokens: u.promptTokens + u.completionTokens,
      usd: u.costUsd,
      unpriced: u.unpricedCalls,
      limits: { tokens: budget.conversationTokens, usd: budget.conversationCostUsd },
      then:
        'No further model call is made in this conversation: its budget is fixed when it starts (ConversationInput.budget); ' +
        'go on in a new conversation with a higher one.',
    },
  ];
  for (const scope of scopes) {
    const { tokens, usd } = scope.limits;
    const reached =
      tokens !== undefined && scope.tokens >= tokens
        ? `The ${scope.what} used ${scope.tokens} tokens, its budget is ${tokens} (budget.${scope.what}Tokens).`
        : usd !== undefined && scope.unpriced > 0
          ? `The ${scope.what}'s cost is unknown: ${COST_UNKNOWN}.`
          : usd !== undefined && scope.usd >= usd
            ? `The ${scope.what} cost $${scope.usd}, its budget is $${usd} (budget.${scope.what}CostUsd).`
            : undefined;
    if (reached) return record(s, 'budget_exceeded', { error: `${reached} ${scope.then}` });
  }
  return undefined;
}

/**
 * Adds a model call's tokens and cost to the turn's, the conversation's and
 * its agent's (`agent`: the one that answered; none for a conversation of one
 * unnamed agent).
 */
export function addSpend(s: CoreState, usage: TokenUsage, costUsd: number | undefined, agent?: string): void {
  const unpriced = costUsd === undefined ? 1 : 0;
  addTo(s, { ...usage, costUsd: costUsd ?? 0, unpricedCalls: unpriced });
  if (agent !== undefined) s.kept.usageByAgent[agent] = sum(s.kept.usageByAgent[agent], usage, costUsd ?? 0, unpriced);
}

/**
 * The child conversation of an agent called as a tool ended: what it spent
 * (its own calls and its agents', at any depth) is the caller's spend too,
 * counted in the caller's turn and conversation, so the caller's budget sees
 * it. Children that ended before this rule (patch `called-agents-spend`) and
 * children of older code (no `usage` in their summary) add nothing.
 */
export function addCalledAgentSpend(s: CoreState, child: SubAgentTurn | undefined): void {
  if (!child?.usage || !s.env.allows('called-agents-spend')) return;
  addTo(s, child.usage);
  for (const [agent, u] of Object.entries(child.usageByAgent ?? {})) {
    s.kept.usageByAgent[agent] = sum(s.kept.usageByAgent[agent], u, u.costUsd, u.unpricedCalls);
  }
}

/**
 * The budget the next model call draws on, when the conversation has one:
 * its top-level conversation's, in that conversation's current turn. A child
 * started by older code, which does not know that turn, keeps its own
 * budget only (nothing).
 */
export function spendScope(s: CoreState): { budget?: SpendScope } {
  const limits = s.input.budget;
  const caller = s.input.calledBy;
  if (!limits || (caller && caller.rootTurn === undefined)) return {};
  return {
    budget: {
      rootConversationId: caller?.rootConversationId ?? s.id,
      rootTurn: caller?.rootTurn ?? s.kept.turns,
      limits: { ...limits },
    },
  };
}

function addTo(s: CoreState, spent: ConversationUsage): void {
  const t = s.turn;
  const turnTokens = t.usage ?? { promptTokens: 0, completionTokens: 0 };
  t.usage = {
    promptTokens: turnTokens.promptTokens + spent.promptTokens,
    completionTokens: turnTokens.completionTokens + spent.completionTokens,
  };
  t.cost.usd = roundUsd(t.cost.usd + spent.costUsd);
  t.cost.unpriced += spent.unpricedCalls;
  const u = s.kept.usage;
  u.promptTokens += spent.promptTokens;
  u.completionTokens += spent.completionTokens;
  u.costUsd = roundUsd(u.costUsd + spent.costUsd);
  u.unpricedCalls += spent.unpricedCalls;
}

function sum(
  was: ConversationUsage | undefined,
  usage: TokenUsage,
  costUsd: number,
  unpricedCalls: number,
): ConversationUsage {
  return {
    promptTokens: (was?.promptTokens ?? 0) + usage.promptTokens,
    completionTokens: (was?.completionTokens ?? 0) + usage.completionTokens,
    costUsd: roundUsd((was?.costUsd ?? 0) + costUsd),
    unpricedCalls: (was?.unpricedCalls ?? 0) + unpricedCalls,
  };
}
