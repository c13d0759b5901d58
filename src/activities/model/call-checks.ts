/**
 * The context of each tool call a model call plans, and its `needsApproval`
 * function run there: outside the workflow, once per plan (the workflow
 * records the plan, so a replay never runs it again; only a retried
 * activity plans again). Earlier messages are read only when a check asks.
 */
import type { Pool } from 'pg';
import type { TurnOrigin, VerifyDecisionInput } from '../../contract/activities';
import type { ChatMessage } from '../../contract/messages';
import { logger } from '../../common/logger';
import { agentTables, type AgentTables } from '../../db/schema';
import { readTranscript } from '../../db/transcript-store';
import { APPROVAL_CHECK_TIMEOUT_MS, type NeedsApproval, type ToolCallContext } from '../../tools/call-context';
import type { GuardrailContext, ToolGuardrailContext } from '../../tools/guardrails';
import { withDatabaseRetry } from '../database-retry';
import type { ActivityDeps } from '../deps';
import { guardrailContext } from '../guardrails';
import type { ModelEnv, PreparedCall } from './prepare';

/** Makes the context of each call of one answer; the transcript is read at most once for all of them. */
export type CallContexts = (toolCallId: string) => ToolGuardrailContext;

/** Where the calls' context comes from: the conversation, what the model read, who asked. */
export interface CallContextSource {
  pool: Pool;
  tables: AgentTables;
  conversationId: string;
  /** The last seq the model read (undefined: the whole transcript, e.g. for an edit's check). */
  throughSeq?: number;
  /** Seqs the model was not sent (transcript repair). */
  omitSeqs?: readonly number[];
  origin?: TurnOrigin;
  agent?: string;
  /** The guardrail context of the model call (its model, its cancellation). */
  guard: GuardrailContext;
}

/** The context factory for the calls of one model call's answer. */
export function callContexts(source: CallContextSource): CallContexts {
  let read: Promise<ChatMessage[]> | undefined;
  const messages = (): Promise<ChatMessage[]> => {
    read ??= withDatabaseRetry('read the transcript for a check of a tool call', () =>
      readTranscript(source.pool, source.tables, source.conversationId, source.throughSeq),
    ).then((stored) => {
      const omit = new Set(source.omitSeqs ?? []);
      return stored.filter((m) => !omit.has(m.seq)).map((m) => m.message);
    });
    // Each caller gets its own copy: a check that changes what it read changes nothing for the next.
    return read.then((all) => structuredClone(all));
  };
  return (toolCallId) => ({
    ...source.guard,
    conversationId: source.conversationId,
    rootConversationId: source.origin?.rootConversationId ?? source.conversationId,
    requestedBy: [...(source.origin?.requestedBy ?? [])],
    ...(source.agent !== undefined ? { agent: source.agent } : {}),
    toolCallId,
    messages,
  });
}

/**
 * Whether a call waits for a person, by its `needsApproval`. A function that
 * throws, or does not answer within {@link APPROVAL_CHECK_TIMEOUT_MS}, means
 * yes (a failing check must not let a call skip its approval), and the
 * worker logs why; its `signal` is aborted when the time is up.
 */
export async function approvalAsked<Args>(
  needsApproval: NeedsApproval<Args> | undefined,
  args: Args,
  context: ToolCallContext,
  toolName: string,
  timeoutMs = APPROVAL_CHECK_TIMEOUT_MS,
): Promise<boolean> {
  if (typeof needsApproval !== 'function') return needsApproval ?? false;
  try {
    const answer = await withinTime((signal) => needsApproval(args, { ...context, signal }), context.signal, timeoutMs);
    if (typeof answer === 'boolean') return answer;
    throw new Error(`it returned ${JSON.stringify(answer) ?? String(answer)}, not true or false`);
  } catch (err) {
    logger.warn(
      { conversationId: context.conversationId, toolCallId: context.toolCallId, toolName, err },
      `The needsApproval function of ${toolName} failed (${err instanceof Error ? err.message : String(err)}); ` +
        'the call waits for a person to approve it, as a call whose check fails always does',
    );
    return true;
  }
}

/**
 * Runs a check of the author's with a signal that aborts when `timeoutMs`
 * pass (or `cancelled` aborts), and fails it then: a check that hangs must
 * not hold the model call's activity until its timeout, attempt after attempt.
 */
export async function withinTime<T>(
  check: (signal: AbortSignal) => T | Promise<T>,
  cancelled: AbortSignal,
  timeoutMs: number,
): Promise<T> {
  const timer = new AbortController();
  let timeout: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timeout = setTimeout(() => {
      timer.abort();
      reject(new Error(`it did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([Promise.resolve(check(AbortSignal.any([cancelled, timer.signal]))), late]);
  } finally {
    clearTimeout(timeout);
  }
}

/**
 * The context of a tool guardrail that checks the arguments a person gave in an edit of a waiting call. A guardrail
 * that asks the model asks it on the agent's API when the agent sets one, else the worker's (the decision does not
 * carry the conversation's settings).
 */
export function editCheckContext(
  deps: Pick<ActivityDeps, 'model' | 'pool' | 'schema' | 'agents'>,
  conversationId: string,
  edit: NonNullable<VerifyDecisionInput['edit']>,
): ToolGuardrailContext {
  return callContexts({
    pool: deps.pool,
    tables: agentTables(deps.schema),
    conversationId,
    ...(edit.origin ? { origin: edit.origin } : {}),
    ...(edit.agent !== undefined ? { agent: edit.agent } : {}),
    guard: guardrailContext(
      deps,
      conversationId,
      edit.agent,
      edit.agent !== undefined ? deps.agents?.get(edit.agent)?.modelSettings?.api : undefined,
    ),
  })(edit.toolCallId ?? '');
}

/** The context factory for the calls of the answer of `call`: what its model read, who asked, its agent. */
export function planContexts({ deps, tables }: ModelEnv, call: PreparedCall): CallContexts {
  const { input } = call;
  return callContexts({
    pool: deps.pool,
    tables,
    conversationId: input.conversationId,
    throughSeq: input.throughSeq,
    omitSeqs: input.omitSeqs,
    ...(input.origin ? { origin: input.origin } : {}),
    ...(call.speaker ? { agent: call.speaker.name } : {}),
    guard: call.guardContext,
  });
}
