/**
 * The spend of a budget shared by a tree of conversations: a top-level
 * conversation and every agent it calls as a tool, at any depth, in child
 * conversations that may run side by side. Each model call of such a tree
 * holds its estimated spend here before it asks the provider and records what
 * it spent once answered, keyed by its response key (the same for every
 * attempt: a retried call is counted once). A call may start only while what
 * the tree spent, with the calls in flight at their estimates, leaves room
 * for its own estimate under each limit; the row lock on the tree (an advisory lock) makes that check and the
 * hold one step, so calls in parallel children share what is left.
 */
import type { Pool } from 'pg';
import type { ConversationBudget } from '../contract/conversation-input';
import type { SpendScope } from '../contract/activities';
import type { AgentTables } from './schema';
import { inTransaction } from './transaction';

/** A model call of the tree and what it spent: tokens, and their cost (undefined when the model has no price). */
export interface SpentCall {
  responseKey: string;
  conversationId: string;
  agent?: string;
  tokens: number;
  costUsd: number | undefined;
}

/** A model call of the tree about to ask the provider, with its estimate: the prompt's tokens, plus `max_tokens`. */
export interface HeldCall extends SpentCall {
  /** How long the hold counts when the call never reports (its worker was lost): its attempt's timeout. */
  holdMs: number;
  /**
   * The call this one is made for, which must fit after it (a summary's: the model call it is written for, at that
   * call's estimate): checked with this call's estimate, never held. A summary the call after it could not be made
   * with is not written.
   */
  serves?: FollowingCall;
}

/** The estimate of the call a held call is made for (see {@link HeldCall.serves}), and what it is, in words. */
export interface FollowingCall {
  tokens: number;
  costUsd: number | undefined;
  what: string;
}

/** What the tree spent in one scope: tokens, dollars over priced calls, and calls whose cost is unknown. */
export interface TreeSpend {
  tokens: number;
  costUsd: number;
  unpriced: number;
}

/**
 * Holds the call's estimate against the tree's budget, or says which limit
 * it would pass (the call must not be made). A call already recorded as spent
 * is not held again.
 */
export async function holdSpend(
  pool: Pool,
  tables: AgentTables,
  scope: SpendScope,
  call: HeldCall,
): Promise<string | undefined> {
  return inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 7))', [scope.rootConversationId]);
    const { rows } = await client.query<Record<string, string | null>>(
      `SELECT
         coalesce(sum(tokens), 0) AS tokens,
         coalesce(sum(cost_usd), 0) AS cost_usd,
         count(*) FILTER (WHERE cost_usd IS NULL) AS unpriced,
         coalesce(sum(tokens) FILTER (WHERE root_turn = $2), 0) AS turn_tokens,
         coalesce(sum(cost_usd) FILTER (WHERE root_turn = $2), 0) AS turn_cost_usd,
         count(*) FILTER (WHERE root_turn = $2 AND cost_usd IS NULL) AS turn_unpriced,
         bool_or(response_key = $3 AND spent) AS counted
       FROM ${tables.budgetSpend}
       WHERE root_conversation_id = $1 AND (spent OR (held_until > now() AND response_key <> $3))`,
      [scope.rootConversationId, scope.rootTurn, call.responseKey],
    );
    const r = rows[0];
    if (r.counted) return undefined;
    const spend = (prefix: '' | 'turn_'): TreeSpend => ({
      tokens: Number(r[`${prefix}tokens`]),
      costUsd: Number(r[`${prefix}cost_usd`]),
      unpriced: Number(r[`${prefix}unpriced`]),
    });
    const reached = limitReached(scope.limits, spend('turn_'), spend(''), call);
    if (reached) return reached;
    await client.query(
      `INSERT INTO ${tables.budgetSpend}
         (response_key, root_conversation_id, root_turn, conversation_id, agent, tokens, cost_usd, held_until)
       VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8::double precision / 1000))
       ON CONFLICT (response_key) DO UPDATE
         SET tokens = EXCLUDED.tokens, cost_usd = EXCLUDED.cost_usd, held_until = EXCLUDED.held_until
         WHERE NOT ${tables.budgetSpend}.spent`,
      [...rowOf(scope, call), call.holdMs],
    );
    return undefined;
  });
}

/** Records what a held call spent, in place of its estimate. Idempotent: the first record stands. */
export async function recordSpend(pool: Pool, tables: AgentTables, scope: SpendScope, call: SpentCall): Promise<void> {
  await pool.query(
    `INSERT INTO ${tables.budgetSpend}
       (response_key, root_conversation_id, root_turn, conversation_id, agent, tokens, cost_usd, spent)
     VALUES ($1, $2, $3, $4, $5, $6, $7, true)
     ON CONFLICT (response_key) DO UPDATE
       SET tokens = EXCLUDED.tokens, cost_usd = EXCLUDED.cost_usd, spent = true, held_until = NULL
       WHERE NOT ${tables.budgetSpend}.spent`,
    rowOf(scope, call),
  );
}

/** A call's row in the ledger, as the first seven parameters of its insert. */
function rowOf(scope: SpendScope, call: SpentCall): unknown[] {
  return [
    call.responseKey,
    scope.rootConversationId,
    scope.rootTurn,
    call.conversationId,
    call.agent ?? null,
    call.tokens,
    call.costUsd ?? null,
  ];
}

/** Lets go of a held call that failed before it spent anything it will report. */
export async function releaseSpend(pool: Pool, tables: AgentTables, responseKey: string): Promise<void> {
  await pool.query(`DELETE FROM ${tables.budgetSpend} WHERE response_key = $1 AND NOT spent`, [responseKey]);
}

/**
 * Which limit the call would pass, in words (what was spent, the call's
 * estimate, the limit and its field), or undefined when it fits every limit.
 * Spend counts the calls in flight at their estimates, and a call whose cost
 * is unknown (its own, or one made before) stops a limit in dollars.
 */
export function limitReached(
  limits: ConversationBudget,
  turn: TreeSpend,
  all: TreeSpend,
  call: { tokens: number; costUsd: number | undefined; serves?: FollowingCall },
): string | undefined {
  const served = call.serves;
  const tokens = call.tokens + (served?.tokens ?? 0);
  const costUsd =
    call.costUsd === undefined || (served && served.costUsd === undefined)
      ? undefined
      : call.costUsd + (served?.costUsd ?? 0);
  // With the call it is made for: what both need, and that call's part.
  const withServed = (part: string) => (served ? ` with ${served.what} (${part} of it for that call)` : '');
  const scopes = [
    {
      what: 'turn',
      spend: turn,
      tokens: limits.turnTokens,
      usd: limits.turnCostUsd,
      then: 'The next message starts a turn with a budget of its own.',
    },
    {
      what: 'conversation',
      spend: all,
      tokens: limits.conversationTokens,
      usd: limits.conversationCostUsd,
      then: 'Its budget is fixed when it starts (ConversationInput.budget): go on in a new conversation with a higher one.',
    },
  ];
  for (const s of scopes) {
    const who = `The ${s.what} (with the agents it called as tools, calls still running at their estimate)`;
    const notMade = `This model call was not made. ${s.then}`;
    if (s.tokens !== undefined && s.spend.tokens + tokens > s.tokens)
      return `${who} used ${s.spend.tokens} tokens and this call needs about ${tokens}${withServed(`${served?.tokens}`)}; the budget is ${s.tokens} (budget.${s.what}Tokens). ${notMade}`;
    if (s.usd !== undefined && (s.spend.unpriced > 0 || costUsd === undefined))
      return `${who} has a model call whose cost is unknown: a limit in dollars needs a price for every model (AGENT_MODEL_PRICES, or the plugin's model.prices). ${notMade}`;
    if (s.usd !== undefined && s.spend.costUsd + costUsd! > s.usd)
      return `${who} cost $${usd(s.spend.costUsd)} and this call about $${usd(costUsd!)}${withServed(`$${usd(served?.costUsd ?? 0)}`)}; the budget is $${s.usd} (budget.${s.what}CostUsd). ${notMade}`;
  }
  return undefined;
}

function usd(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}
