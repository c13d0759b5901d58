/**
 * How the conversation workflow schedules its activities (timeouts, retries,
 * heartbeats), and how it reads their failures. One place for each; workflow
 * code (runs in Temporal's sandbox).
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  ChildWorkflowFailure,
  TerminatedFailure,
  proxyActivities,
  proxyLocalActivities,
  TimeoutFailure,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import { TimeoutType } from '@temporalio/common';
import {
  ActivityErrorType,
  CONVERSATION_ACTIVITY_NAMES,
  conversationActivityType,
  type ConversationActivities,
  type PrefixedConversationActivities,
  type StoreRefusedDetails,
} from '../contract/activities';
import type { BatchCall } from '../core/batch';
import type { ToolFailure } from '../core/conversation';
import { CONVERSATION_DEFAULTS, type ConversationInput } from '../contract';

/**
 * The backoff every activity of the conversation retries with; each adds its own attempt limit and non-retryable types.
 */
export const RETRY_BACKOFF = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '30 seconds',
} as const;

/**
 * The conversation activities, each taking an optional summary: the line the
 * Temporal UI and `temporal workflow show` print for the activity, fixed when
 * it is scheduled ("model call 2 of turn 5 (gpt-4.1)").
 */
export type SummarizedActivities = {
  [K in keyof ConversationActivities]: (
    input: Parameters<ConversationActivities[K]>[0],
    summary?: string,
  ) => ReturnType<ConversationActivities[K]>;
};

/**
 * The conversation activities with `options`, scheduled under their prefixed
 * types; as local activities with `local`, which keep the timeout and retries
 * but have no heartbeat timeout (a local call lives in its workflow task,
 * whose timeout notices a dead worker). A summary adds no command and
 * changes none.
 */
function conversationActivities(options: ActivityOptions, local = false): SummarizedActivities {
  const localOptions: LocalActivityOptions = { startToCloseTimeout: options.startToCloseTimeout, retry: options.retry };
  const proxy = local
    ? proxyLocalActivities<PrefixedConversationActivities>(localOptions)
    : proxyActivities<PrefixedConversationActivities>(options);
  type Scheduled = ((input: unknown) => Promise<unknown>) & {
    executeWithOptions(options: ActivityOptions | LocalActivityOptions, args: [unknown]): Promise<unknown>;
  };
  const byType = proxy as unknown as Record<string, Scheduled>;
  return Object.fromEntries(
    CONVERSATION_ACTIVITY_NAMES.map((name) => {
      const activity = byType[conversationActivityType(name)];
      const run = (input: unknown, summary?: string) =>
        summary === undefined
          ? activity(input)
          : activity.executeWithOptions({ ...(local ? localOptions : options), summary }, [input]);
      return [name, run];
    }),
  ) as unknown as SummarizedActivities;
}

/** The conversation's activities, each kind with its timeouts and retries. */
export interface ConversationSchedules {
  /**
   * Transcript and decision writes: short (a write takes milliseconds, and a
   * worker that dies mid-write is noticed at this timeout), with no attempt
   * limit (a database that is down delays the conversation, it never loses a
   * message) and at most 5 s apart (a database back from an outage is written
   * to within 5 s).
   */
  store: SummarizedActivities;
  /**
   * Checking a decision's signature: an ordinary activity (no I/O,
   * milliseconds), retried without limit like the writes. Not a local
   * activity: a local activity awaited in an update handler does not replay
   * (the recorded marker and the update's events come back in another order).
   */
  decisions: SummarizedActivities;
  /**
   * Model calls, with the conversation's timeout and attempts; a request the
   * provider refuses is not retried. Local activities when the conversation
   * asks for them (`localActivities.modelCalls`).
   */
  model: SummarizedActivities;
  /**
   * One tool call, with its own timeout and attempts; cancelled without
   * waiting (effect unknown). A local activity when the conversation asks for
   * local idempotent tools and the tool declared itself idempotent (run again
   * after a crash, which it allows); an ordinary one otherwise. `attempts`:
   * the call's own (`maxAttempts`) unless given.
   */
  tool(call: BatchCall, attempts?: number): SummarizedActivities;
  /**
   * Listing the tools of a conversation's MCP servers at a turn's start: a
   * few attempts (a server briefly down), none for a server the worker lacks
   * or a list over the providers' limit.
   */
  discovery: SummarizedActivities;
}

/** The activities of the conversation started with `input`. */
export function conversationSchedules(input: ConversationInput): ConversationSchedules {
  // How fast a crashed worker running a model call or a tool is noticed.
  const heartbeatTimeout = input.timeouts?.heartbeatMs ?? CONVERSATION_DEFAULTS.heartbeatMs;
  return {
    store: conversationActivities({
      startToCloseTimeout: '5 seconds',
      retry: { ...RETRY_BACKOFF, maximumInterval: '5 seconds' },
    }),
    decisions: conversationActivities({ startToCloseTimeout: '5 seconds', retry: RETRY_BACKOFF }),
    model: conversationActivities(
      {
        startToCloseTimeout: input.timeouts?.modelCallMs ?? CONVERSATION_DEFAULTS.modelCallMs,
        heartbeatTimeout,
        retry: {
          ...RETRY_BACKOFF,
          maximumAttempts: input.timeouts?.modelCallAttempts ?? CONVERSATION_DEFAULTS.modelCallAttempts,
          nonRetryableErrorTypes: [ActivityErrorType.ModelRequestRejected, ActivityErrorType.InvalidTranscript],
        },
      },
      input.localActivities?.modelCalls === true,
    ),
    tool: (call, attempts = call.maxAttempts) =>
      conversationActivities(
        {
          startToCloseTimeout: call.timeoutMs,
          heartbeatTimeout,
          retry: {
            ...RETRY_BACKOFF,
            maximumAttempts: attempts,
            nonRetryableErrorTypes: [
              ActivityErrorType.UnknownTool,
              ActivityErrorType.InvalidToolArguments,
              ActivityErrorType.ToolFailedPermanently,
            ],
          },
        },
        input.localActivities?.idempotentTools === true && call.idempotent === true,
      ),
    discovery: conversationActivities({
      startToCloseTimeout: '30 seconds',
      retry: {
        ...RETRY_BACKOFF,
        maximumAttempts: 3,
        nonRetryableErrorTypes: [ActivityErrorType.UnknownMcpServer, ActivityErrorType.TooManyTools],
      },
    }),
  };
}

/** The most telling message of an activity failure: its cause's, when it has one. */
export function failureMessage(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

/**
 * A model call's failure, as the core reads it: its message, and whether the
 * call was not made because the budget it draws on is spent (`BudgetExceeded`).
 */
export function modelFailure(err: unknown): { error: string; overBudget: boolean } {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  const overBudget = cause instanceof ApplicationFailure && cause.type === ActivityErrorType.BudgetExceeded;
  return { error: failureMessage(err), overBudget };
}

/**
 * A store failure no retry can fix (`StoreRefused`): what PostgreSQL said, and
 * the seqs it refused when it was a transcript write. Undefined for any other
 * failure.
 */
export function storeRefusal(err: unknown): { message: string; refusedSeqs: number[] } | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (!(cause instanceof ApplicationFailure) || cause.type !== ActivityErrorType.StoreRefused) return undefined;
  const details = cause.details?.[0] as Partial<StoreRefusedDetails> | undefined;
  return { message: cause.message, refusedSeqs: Array.isArray(details?.refusedSeqs) ? details.refusedSeqs : [] };
}

/** A tool activity's failure, as the core reads it: message, reason, and whether the run was cut off. */
export function describeToolFailure(err: unknown, timeoutMs: number): ToolFailure {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  let reason: ToolFailure['reason'] = 'error';
  if (cause instanceof ApplicationFailure && cause.type === ActivityErrorType.UnknownTool) reason = 'unknown_tool';
  if (cause instanceof ApplicationFailure && cause.type === ActivityErrorType.InvalidToolArguments)
    reason = 'invalid_arguments';
  const workerLost = cause instanceof ApplicationFailure && cause.type === ActivityErrorType.WorkerLost;
  return {
    message: failureMessage(err),
    reason,
    cutOff: whyCutOff(cause, timeoutMs),
    workerLost,
    workerStopped: workerStopped(err),
  };
}

/**
 * The failure of the child conversation of an agent called as a tool, as the
 * core reads it: one terminated, timed out or cancelled from outside was cut
 * off (its effects are unknown to the caller); one that failed said why.
 */
export function describeSubAgentFailure(err: unknown, agent: string): ToolFailure {
  const cause = err instanceof ChildWorkflowFailure ? err.cause : err;
  const message = `The ${agent} agent's conversation failed: ${cause instanceof Error ? cause.message : String(cause)}`;
  if (cause instanceof TerminatedFailure)
    return { message, reason: 'error', cutOff: `the ${agent} agent's conversation was terminated` };
  if (cause instanceof TimeoutFailure)
    return { message, reason: 'error', cutOff: `the ${agent} agent's conversation ran past its timeout` };
  if (cause instanceof CancelledFailure)
    return { message, reason: 'error', cutOff: `the ${agent} agent's conversation was cancelled` };
  return { message, reason: 'error' };
}

/**
 * Whether an activity's last attempt ended because its worker stopped (a
 * heartbeat timeout, or lost-worker takeover's `WorkerLost`), not because it
 * failed or ran past its timeout.
 */
function workerStopped(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (cause instanceof ApplicationFailure) return cause.type === ActivityErrorType.WorkerLost;
  return cause instanceof TimeoutFailure && cause.timeoutType === TimeoutType.HEARTBEAT;
}

/**
 * Why a run did not report back, when it was cut off (timed out, its worker
 * stopped heartbeating, or the tool lost the answer: `ToolEffectUnknown`)
 * rather than failed.
 */
function whyCutOff(cause: unknown, timeoutMs: number): string | undefined {
  if (cause instanceof ApplicationFailure && cause.type === ActivityErrorType.ToolEffectUnknown) return cause.message;
  if (!(cause instanceof TimeoutFailure)) return undefined;
  if (cause.timeoutType === TimeoutType.HEARTBEAT)
    return 'its worker stopped answering while it ran (heartbeat timeout)';
  if (cause.timeoutType === TimeoutType.START_TO_CLOSE) return `it ran longer than its timeout of ${timeoutMs} ms`;
  return 'it timed out';
}
