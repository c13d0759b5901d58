/** A conversation's budget: whether a limit is reached before the next model call. Pure. */
import type { TurnRecord } from '../contract/turn-records';
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
