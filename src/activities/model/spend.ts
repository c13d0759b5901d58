/**
 * A model call's share of the budget it draws on (the top-level
 * conversation's, shared by every agent called below it): held at its
 * estimate before the provider is asked, recorded once answered, let go when
 * the call fails. Nothing for a conversation without a budget.
 */
import { ApplicationFailure } from '@temporalio/common';
import { ActivityErrorType, type ModelCallResult } from '../../contract/activities';
import { costOf } from '../../core/pricing';
import { holdSpend, recordSpend, releaseSpend } from '../../db/budget-ledger';
import { withDatabaseRetry } from '../database-retry';
import type { ModelEnv, PreparedCall } from './prepare';

/**
 * Holds the call's estimate (the prompt's tokens as counted before sending,
 * and `max_tokens` when set). Throws a non-retryable `BudgetExceeded` failure,
 * saying which limit and what was spent, when the budget is spent: the call is
 * not made and the turn ends as `budget_exceeded`.
 */
export async function holdModelSpend(env: ModelEnv, call: PreparedCall, promptTokens: number): Promise<void> {
  const scope = call.input.budget;
  if (!scope) return;
  const reply = call.settings.maxTokens ?? 0;
  const reached = await withDatabaseRetry('hold the model call against its budget', () =>
    holdSpend(env.deps.pool, env.tables, scope, {
      responseKey: call.responseKey,
      conversationId: call.input.conversationId,
      ...(call.speaker ? { agent: call.speaker.name } : {}),
      tokens: promptTokens + reply,
      costUsd: costOf(env.deps.model.prices, call.model, { promptTokens, completionTokens: reply }),
      holdMs: call.activity.info.startToCloseTimeoutMs,
    }),
  );
  if (reached) throw ApplicationFailure.nonRetryable(reached, ActivityErrorType.BudgetExceeded);
}

/** Records what the answered call spent, in place of its estimate (an answer read again records nothing new). */
export async function recordModelSpend(env: ModelEnv, call: PreparedCall, result: ModelCallResult): Promise<void> {
  const scope = call.input.budget;
  if (!scope || !result.usage) return;
  await withDatabaseRetry('record the model call against its budget', () =>
    recordSpend(env.deps.pool, env.tables, scope, {
      responseKey: call.responseKey,
      conversationId: call.input.conversationId,
      ...(call.speaker ? { agent: call.speaker.name } : {}),
      tokens: result.usage!.promptTokens + result.usage!.completionTokens,
      costUsd: result.costUsd,
    }),
  );
}

/** Lets go of the call's hold when it failed: a retry holds again, and a call given up spends nothing more. */
export async function releaseModelSpend(env: ModelEnv, call: PreparedCall): Promise<void> {
  if (!call.input.budget) return;
  await releaseSpend(env.deps.pool, env.tables, call.responseKey).catch(() => undefined);
}
