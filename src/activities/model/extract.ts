/**
 * An agent tool's output extractor (`asTool({ customOutputExtractor })`),
 * run in the activity of its agent's final model call: that activity holds
 * the answer in full and its typed output, and its result is recorded in the
 * child's history, so a replay never runs the extractor again and no
 * workflow schedules anything more for it. What it made is stored as a tool
 * result under the calling call's key, which the caller appends by
 * reference; a retried attempt finds it there and does not run it again.
 */
import type { ExtractedAgentResult, ModelCallInput, ModelCallResult } from '../../contract/activities';
import { logger } from '../../common/logger';
import { storeToolResult } from '../../db/transcript-store';
import type { AgentTool } from '../../tools/agent-tool';
import { withDatabaseRetry } from '../database-retry';
import { DEFAULT_INLINE_LIMIT, inlineOrPreview } from '../history-preview';
import type { ModelEnv } from './prepare';

/** `result` with what the calling agent tool's extractor made of it, when it is such an agent's final answer. */
export async function withExtractedResult(
  env: ModelEnv,
  input: ModelCallInput,
  result: ModelCallResult,
): Promise<ModelCallResult> {
  const calledAs = input.origin?.calledAs;
  const final = (result.message.tool_calls?.length ?? 0) === 0 && !result.guardrail && result.output?.ok !== false;
  if (!calledAs || !final) return result;
  const asTool = callingTool(env, calledAs);
  if (!asTool?.customOutputExtractor) return result;
  return { ...result, extracted: await extract(env, input, result, asTool, calledAs.callKey) };
}

/** The agent tool that called this conversation's agent, when the worker knows it. */
function callingTool(
  { deps }: ModelEnv,
  calledAs: NonNullable<NonNullable<ModelCallInput['origin']>['calledAs']>,
): AgentTool | undefined {
  const caller = deps.agents?.get(calledAs.agent ?? deps.defaultAgent ?? '');
  return caller ? deps.agents?.agentTool(caller, calledAs.toolName) : undefined;
}

/** Runs the extractor on the stored answer (once: a stored result is reused) and stores what it made. */
async function extract(
  { deps, tables }: ModelEnv,
  input: ModelCallInput,
  result: ModelCallResult,
  asTool: AgentTool,
  callKey: string,
): Promise<ExtractedAgentResult> {
  const key = `${callKey}/extracted/${result.responseKey}`;
  const stored = await withDatabaseRetry('read the answer for the output extractor', () =>
    deps.pool.query<{ content: string | null; extracted: string | null }>(
      `SELECT r.message ->> 'content' AS content,
              (SELECT content FROM ${tables.toolResults} WHERE idempotency_key = $2) AS extracted
         FROM ${tables.modelResponses} r WHERE r.response_key = $1`,
      [result.responseKey, key],
    ),
  );
  const row = stored.rows[0];
  const preview = (text: string) =>
    inlineOrPreview(text, deps.inlineResultLimit ?? DEFAULT_INLINE_LIMIT, `result is stored under ${key}`);
  if (row?.extracted != null) return { ok: true, key, text: preview(row.extracted) };
  const text = row?.content ?? result.message.content ?? '';
  const speaker = deps.agents?.get(input.agent ?? deps.defaultAgent ?? '');
  const typed = speaker ? deps.agents?.outputOf(speaker)?.check(text) : undefined;
  let content: string;
  try {
    const made = await asTool.customOutputExtractor!({
      text,
      ...(typed?.ok ? { output: typed.value } : {}),
      conversationId: input.conversationId,
      ...(speaker ? { agent: speaker.name } : {}),
    });
    content = typeof made === 'string' ? made : (JSON.stringify(made) ?? 'null');
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    logger.warn(
      { conversationId: input.conversationId, toolName: asTool.toolName, err },
      `The customOutputExtractor of agent tool ${asTool.toolName} failed (${error}); the call settles as tool_failed`,
    );
    return { ok: false, error };
  }
  const kept = await withDatabaseRetry('store the extracted result', () =>
    storeToolResult(deps.pool, tables, {
      idempotencyKey: key,
      conversationId: input.conversationId,
      toolCallId: '',
      toolName: asTool.toolName,
      content,
    }),
  );
  return { ok: true, key, text: preview(kept) };
}
