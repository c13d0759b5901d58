/**
 * What summaries of earlier turns spend (`summaries.ts`), in the budget the conversation draws on and in its usage.
 *
 * - Before a summary request is sent, its estimate (its prompt's tokens, counted, and its `max_tokens`) is held in
 *   the budget's ledger under the summary's own key, as a model call's is: a summary that would pass a limit, with
 *   the call it is written for after it, is not asked for; the call fails as `BudgetExceeded` and the turn ends
 *   `budget_exceeded`.
 * - Once answered, what the request spent replaces its hold, under the key of the row that keeps it: the summary,
 *   or, when the model wrote nothing, a row that keeps only what it cost. A request that failed (refused, a server
 *   error, a broken connection) reports no usage and is not billed: its hold is let go.
 * - The model call reports its summaries' usage in its result (`ModelCallResult.summary`), so the workflow counts
 *   it once, in the turn's and the conversation's usage. A call that failed for good after writing summaries
 *   reports nothing; the next call of the conversation that summarises reports them.
 */
import { ApplicationFailure } from '@temporalio/common';
import { countTokens } from '../../common/tokens';
import { ActivityErrorType, type ModelCallResult, type SummarySpend } from '../../contract/activities';
import type { ChatMessage } from '../../contract/messages';
import { costOf } from '../../core/pricing';
import { holdSpend, recordSpend, releaseSpend, type FollowingCall } from '../../db/budget-ledger';
import { adoptUnreported, summariesWrittenBy, summaryLedgerKey, type StoredSummary } from '../../db/context-summaries';
import { withDatabaseRetry } from '../database-retry';
import type { ModelEnv, PreparedCall } from './prepare';

/** Framing tokens per message and per request, as the context budget and providers count them. */
const TOKENS_PER_MESSAGE = 4;
const REPLY_PRIMING_TOKENS = 3;

/** The prompt tokens of a summary request, counted (its messages are plain text), scaled by the calibration. */
export function summaryPromptTokens(messages: readonly ChatMessage[], calibration: number): number {
  const counted = messages.reduce(
    (n, m) => n + TOKENS_PER_MESSAGE + (typeof m.content === 'string' ? countTokens(m.content) : 0),
    REPLY_PRIMING_TOKENS,
  );
  return Math.ceil(counted * Math.max(1, calibration));
}

/**
 * The estimate of the model call a summary is written for (the request as it would be sent with turns left out),
 * checked with the summary's own; undefined for a conversation without a budget.
 */
export function servedCall(call: PreparedCall, env: ModelEnv, promptTokens: number): FollowingCall | undefined {
  if (!call.input.budget) return undefined;
  const reply = call.settings.maxTokens ?? 0;
  return {
    tokens: promptTokens + reply,
    costUsd: costOf(env.deps.model.prices, call.model, { promptTokens, completionTokens: reply }),
    what: 'the model call it is written for',
  };
}

/**
 * Holds a summary request's estimate under `key` (its prompt's tokens and its `max_tokens`), checked with the call
 * it is written for. Throws a non-retryable `BudgetExceeded` failure, saying which limit and what was spent, when
 * they would pass a limit: the summary is not asked for.
 */
export async function holdSummarySpend(
  env: ModelEnv,
  call: PreparedCall,
  key: string,
  estimate: { promptTokens: number; maxTokens: number },
  serves: FollowingCall | undefined,
): Promise<void> {
  const scope = call.input.budget;
  if (!scope) return;
  const { promptTokens, maxTokens } = estimate;
  const reached = await withDatabaseRetry('hold the summary request against its budget', () =>
    holdSpend(env.deps.pool, env.tables, scope, {
      responseKey: key,
      conversationId: call.input.conversationId,
      ...(call.speaker ? { agent: call.speaker.name } : {}),
      tokens: promptTokens + maxTokens,
      costUsd: costOf(env.deps.model.prices, call.model, { promptTokens, completionTokens: maxTokens }),
      holdMs: call.activity.info.startToCloseTimeoutMs,
      ...(serves ? { serves } : {}),
    }),
  );
  if (reached) {
    throw ApplicationFailure.nonRetryable(
      `The summary of earlier turns was not asked for: ${reached}`,
      ActivityErrorType.BudgetExceeded,
    );
  }
}

/** Lets go of a summary request's hold: it failed, or what it spent is recorded under another key. */
export async function releaseSummarySpend(env: ModelEnv, call: PreparedCall, key: string): Promise<void> {
  if (!call.input.budget) return;
  await releaseSpend(env.deps.pool, env.tables, key).catch(() => undefined);
}

/** Records what a stored summary (or a request that left none) spent, under its own key; again, it changes nothing. */
export async function recordSummarySpend(env: ModelEnv, call: PreparedCall, s: StoredSummary): Promise<void> {
  const scope = call.input.budget;
  if (!scope || !s.usage) return;
  await withDatabaseRetry('record the summary against its budget', () =>
    recordSpend(env.deps.pool, env.tables, scope, {
      responseKey: summaryLedgerKey(s),
      conversationId: call.input.conversationId,
      ...(call.speaker ? { agent: call.speaker.name } : {}),
      tokens: s.usage!.promptTokens + s.usage!.completionTokens,
      costUsd: s.costUsd,
    }),
  );
}

/**
 * The result with what this call's summary requests cost (by any of its attempts, and those of an earlier call
 * that failed for good after writing them; a summary another call wrote and reported and this one reused is that
 * call's). Unchanged for a call that does not summarise or has none to report.
 */
export async function withSummarySpend(
  env: ModelEnv,
  call: PreparedCall,
  result: ModelCallResult,
): Promise<ModelCallResult> {
  if (call.settings.contextOverflow !== 'summarize') return result;
  const { pool } = env.deps;
  const written = await withDatabaseRetry('read what the summaries cost', async () => {
    await adoptUnreported(pool, env.tables, call.input.conversationId, call.responseKey);
    return summariesWrittenBy(pool, env.tables, call.responseKey);
  });
  if (written.length === 0) return result;
  // Each was recorded in the ledger when written; again here (a no-op then) for one whose record an attempt that
  // failed just after storing it never made.
  for (const s of written) await recordSummarySpend(env, call, s);
  const spend: SummarySpend = {
    usage: {
      promptTokens: written.reduce((n, s) => n + (s.usage?.promptTokens ?? 0), 0),
      completionTokens: written.reduce((n, s) => n + (s.usage?.completionTokens ?? 0), 0),
    },
    requests: written.length,
  };
  // A cost only when every summary has one: an unknown cost stays unknown (it stops a limit in dollars).
  if (written.every((s) => s.costUsd !== undefined)) spend.costUsd = written.reduce((n, s) => n + s.costUsd!, 0);
  return { ...result, summary: spend };
}
