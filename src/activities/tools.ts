/** The tool activity: runs one tool call with its idempotency key. */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Pool, PoolClient } from 'pg';
import { ToolEffectUnknownError, ToolError, type ToolContext } from '../tools/tool';
import { inTransaction } from '../db/transaction';
import { logger } from '../common/logger';
import { asCancellation, heartbeatWhileRunning, releaseStickyWorker } from './activity-context';
import { ActivityErrorType, type ToolCallInput, type ToolCallResult } from '../contract/activities';
import { checkToolCall } from './tool-calls';
import { storeToolResult } from '../db/transcript-store';
import { withDatabaseRetry } from './database-retry';
import { describeRefusal, isRefusedValue } from '../db/errors';
import { parseJsonOrText, toStorableValue } from '../contract/text';
import { DEFAULT_INLINE_LIMIT, inlineOrPreview } from './history-preview';
import { agentTables, type AgentTables } from '../db/schema';
import { effectFromLedger, toolRunMeasured } from './metrics';
import { inSpan } from './tracing';
import { turnRegistry } from './mcp-tools';
import { effectKey } from './effect-key';
import type { ToolActivityDeps } from './deps';

/** Builds the `runTool` activity. */
export function createToolActivity(deps: ToolActivityDeps): (input: ToolCallInput) => Promise<ToolCallResult> {
  const limit = deps.inlineResultLimit ?? DEFAULT_INLINE_LIMIT;
  const tables = agentTables(deps.schema);
  return async function runTool(input: ToolCallInput): Promise<ToolCallResult> {
    const registry = await turnRegistry(deps.tools, deps.mcp, input.toolset);
    const checked = checkToolCall(registry, undefined, input.name, input.arguments);
    if (!checked.ok) {
      throw ApplicationFailure.nonRetryable(
        checked.message,
        checked.reason === 'unknown_tool' ? ActivityErrorType.UnknownTool : ActivityErrorType.InvalidToolArguments,
      );
    }
    const activity = Context.current();
    releaseStickyWorker(activity);
    let fromLedger = false;
    const key = effectKey(input.idempotencyKey, checked.tool.name, checked.args);
    const context: ToolContext = {
      conversationId: input.conversationId,
      toolCallId: input.toolCallId,
      idempotencyKey: key,
      attempt: activity.info.attempt,
      signal: activity.cancellationSignal,
      db: deps.pool,
      once: (effect) =>
        applyOnce(deps.pool, tables, key, input.name, effect, () => (fromLedger = true), input.idempotencyKey),
    };
    const attributes = {
      'agent.conversation_id': input.conversationId,
      'agent.tool': checked.tool.name,
      'agent.tool_call_id': input.toolCallId,
      'agent.attempt': activity.info.attempt,
    };
    const result = await inSpan('tool run', attributes, async (span) => {
      // Heartbeats carry cancellation to the tool (its `signal` aborts) when its turn is cancelled.
      const stopHeartbeats = heartbeatWhileRunning(activity);
      const started = Date.now();
      try {
        const ran: unknown = await checked.tool.execute(checked.args, context);
        toolRunMeasured(checked.tool.name, 'ok', Date.now() - started);
        span.setAttributes({ 'agent.outcome': 'ok', 'agent.from_ledger': fromLedger });
        return ran;
      } catch (err) {
        // Cancelled: reported as such whatever the tool threw when its signal aborted (a failure would be retried).
        const cancelled = asCancellation(activity);
        // The effect is in the ledger (an earlier attempt applied it, then its worker died; or the tool failed after
        // it):
        // it happened, so the call reports what it recorded, never a failure that would read as "not run".
        const recorded = cancelled
          ? undefined
          : await withDatabaseRetry('read the tool ledger', () =>
              recordedEffect(deps.pool, tables, key, input.idempotencyKey),
            );
        if (recorded) {
          logger.warn(
            {
              idempotencyKey: key,
              tool: checked.tool.name,
              attempt: activity.info.attempt,
              error: (err as Error).message,
            },
            'the tool failed, but its effect is in the ledger (applied by this or an earlier attempt); reporting the recorded result',
          );
          effectFromLedger(checked.tool.name);
          fromLedger = true;
          toolRunMeasured(checked.tool.name, 'ok', Date.now() - started);
          span.setAttributes({ 'agent.outcome': 'ok', 'agent.from_ledger': true });
          return recorded.result;
        }
        const outcome = cancelled
          ? 'cancelled'
          : err instanceof ToolError || err instanceof ToolEffectUnknownError
            ? 'failed_permanently'
            : 'failed';
        toolRunMeasured(checked.tool.name, outcome, Date.now() - started);
        span.setAttribute('agent.outcome', outcome);
        if (cancelled) throw cancelled;
        if (err instanceof ToolError) {
          throw ApplicationFailure.nonRetryable(err.message, ActivityErrorType.ToolFailedPermanently);
        }
        if (isRefusedValue(err)) {
          throw ApplicationFailure.nonRetryable(
            `PostgreSQL refused a value the tool wrote: ${describeRefusal(err)}`,
            ActivityErrorType.ToolFailedPermanently,
          );
        }
        if (err instanceof ToolEffectUnknownError) {
          throw ApplicationFailure.nonRetryable(err.message, ActivityErrorType.ToolEffectUnknown);
        }
        throw err;
      } finally {
        stopHeartbeats();
      }
    });
    // The tool has run: a database outage now must not cost the attempt (a tool that is not idempotent has one).
    const content = await withDatabaseRetry('store the tool result', () =>
      storeToolResult(deps.pool, tables, {
        idempotencyKey: key,
        conversationId: input.conversationId,
        toolCallId: input.toolCallId,
        toolName: input.name,
        content: input.edited
          ? editedResult(input, result)
          : typeof result === 'string'
            ? result
            : JSON.stringify(result ?? null),
      }),
    ).catch((err: unknown) => {
      if (!isRefusedValue(err)) throw err;
      // It ran, and what it returned is lost: the model must check before asking again.
      throw ApplicationFailure.nonRetryable(
        `The tool ran, but PostgreSQL refused to store its result, so the result is lost: ${describeRefusal(err)}`,
        ActivityErrorType.ToolEffectUnknown,
      );
    });
    return {
      content: inlineOrPreview(content, limit, `result is stored under ${key}`),
      storedResultKey: key,
      ...(fromLedger ? { fromLedger: true } : {}),
    };
  };
}

/** The result of a call a person edited: what ran, with which arguments, changed by whom, so the model sees it. */
function editedResult(input: ToolCallInput, result: unknown): string {
  return JSON.stringify({
    note: 'A person edited the arguments before approving; the call ran with theirs.',
    edited_by: input.edited?.by ?? null,
    arguments: parseJsonOrText(input.arguments),
    model_arguments: parseJsonOrText(input.edited?.modelArguments ?? ''),
    result: result ?? null,
  });
}

/**
 * The result recorded under `key` in the tool ledger, or under `legacyKey` (an attempt of this call on a worker from
 * before effect keys named the arguments), if an effect was applied under it.
 */
async function recordedEffect(
  pool: Pool,
  tables: AgentTables,
  key: string,
  legacyKey: string,
): Promise<{ result: unknown } | undefined> {
  const { rows } = await pool.query<{ result: unknown }>(
    `SELECT result FROM ${tables.toolLedger} WHERE idempotency_key = ANY ($1::text[]) ORDER BY idempotency_key = $2 DESC LIMIT 1`,
    [[key, legacyKey], key],
  );
  return rows[0];
}

/**
 * Runs `effect` and records its result under `key` in one transaction, in the
 * tool ledger of `tables`. A second caller with the same key (a retry, or a
 * concurrent zombie attempt, which waits on the row lock) gets the recorded
 * result and applies nothing (and `onFound` is called).
 *
 * `legacyKey` is the call's key as workers before effect keys named the
 * arguments recorded it: an effect an attempt of this call applied under it
 * (the worker stopped mid-call, and the retry runs on an upgraded worker)
 * counts as applied too.
 */
export async function applyOnce<T>(
  pool: Pool,
  tables: AgentTables,
  key: string,
  toolName: string,
  effect: (tx: PoolClient) => Promise<T>,
  onFound?: () => void,
  legacyKey?: string,
): Promise<T> {
  return inTransaction(pool, async (client) => {
    const claim = await client.query(
      `INSERT INTO ${tables.toolLedger} (idempotency_key, tool_name)
       SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM ${tables.toolLedger} WHERE idempotency_key = $3)
       ON CONFLICT (idempotency_key) DO NOTHING`,
      [key, toolName, legacyKey ?? null],
    );
    if (claim.rowCount === 0) {
      const { rows } = await client.query<{ result: T }>(
        `SELECT result FROM ${tables.toolLedger} WHERE idempotency_key = ANY ($1::text[]) ORDER BY idempotency_key = $2 DESC LIMIT 1`,
        [[key, legacyKey ?? key], key],
      );
      logger.info(
        { idempotencyKey: key, tool: toolName },
        'side effect already applied; returning the recorded result',
      );
      effectFromLedger(toolName);
      onFound?.();
      return rows[0].result;
    }
    const result = await effect(client);
    const recorded = JSON.stringify(toStorableValue(result ?? null).value);
    await client.query(`UPDATE ${tables.toolLedger} SET result = $2 WHERE idempotency_key = $1`, [key, recorded]);
    return JSON.parse(recorded) as T;
  });
}
