/**
 * How the conversation workflow schedules its activities (timeouts, retries,
 * heartbeats), and how it reads their failures. One place for each; workflow
 * code (runs in Temporal's sandbox).
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import { TimeoutType } from '@temporalio/common';
import { ActivityErrorType, type ConversationActivities } from '../activities/contracts';
import type { BatchCall } from '../core/batch';
import type { ToolFailure } from '../core/conversation';
import { CONVERSATION_DEFAULTS, type ConversationInput } from '../core/contract';

/** The backoff every activity of the conversation retries with; each adds its own attempt limit and non-retryable types. */
export const RETRY_BACKOFF = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' } as const;

/** Transcript and decision writes. */
export const storeActivities = proxyActivities<ConversationActivities>({
  // Short: a write takes milliseconds, and a worker that dies mid-write is noticed at this timeout.
  startToCloseTimeout: '5 seconds',
  // No attempt limit: a database that is down delays the conversation, it never loses a message.
  retry: RETRY_BACKOFF,
});

/** How fast a crashed worker running a model call or a tool is noticed. */
export function heartbeatTimeoutMs(input: ConversationInput): number {
  return input.timeouts?.heartbeatMs ?? CONVERSATION_DEFAULTS.heartbeatMs;
}

/** Model calls, with the conversation's timeout and attempts; a request the provider refuses is not retried. */
export function modelActivities(input: ConversationInput) {
  return proxyActivities<ConversationActivities>({
    startToCloseTimeout: input.timeouts?.modelCallMs ?? CONVERSATION_DEFAULTS.modelCallMs,
    heartbeatTimeout: heartbeatTimeoutMs(input),
    retry: {
      ...RETRY_BACKOFF,
      maximumAttempts: input.timeouts?.modelCallAttempts ?? CONVERSATION_DEFAULTS.modelCallAttempts,
      nonRetryableErrorTypes: [ActivityErrorType.ModelRequestRejected, ActivityErrorType.InvalidTranscript],
    },
  });
}

/** Activities for one tool call, with its own timeout and attempts; cancelled without waiting (effect unknown). */
export function toolActivities(call: BatchCall, input: ConversationInput) {
  return proxyActivities<ConversationActivities>({
    startToCloseTimeout: call.timeoutMs,
    heartbeatTimeout: heartbeatTimeoutMs(input),
    retry: {
      ...RETRY_BACKOFF,
      maximumAttempts: call.maxAttempts,
      nonRetryableErrorTypes: [
        ActivityErrorType.UnknownTool,
        ActivityErrorType.InvalidToolArguments,
        ActivityErrorType.ToolFailedPermanently,
      ],
    },
  });
}

/** The most telling message of an activity failure: its cause's, when it has one. */
export function failureMessage(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

/** A tool activity's failure, as the core reads it: message, reason, and whether the run was cut off. */
export function describeToolFailure(err: unknown, timeoutMs: number): ToolFailure {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  let reason: ToolFailure['reason'] = 'error';
  if (cause instanceof ApplicationFailure && cause.type === ActivityErrorType.UnknownTool) reason = 'unknown_tool';
  if (cause instanceof ApplicationFailure && cause.type === ActivityErrorType.InvalidToolArguments) reason = 'invalid_arguments';
  return { message: failureMessage(err), reason, cutOff: whyCutOff(cause, timeoutMs) };
}

/** Why a run did not report back, when it was cut off (timed out, its worker stopped heartbeating) rather than failed. */
function whyCutOff(cause: unknown, timeoutMs: number): string | undefined {
  if (!(cause instanceof TimeoutFailure)) return undefined;
  if (cause.timeoutType === TimeoutType.HEARTBEAT) return 'its worker stopped answering while it ran (heartbeat timeout)';
  if (cause.timeoutType === TimeoutType.START_TO_CLOSE) return `it ran longer than its timeout of ${timeoutMs} ms`;
  return 'it timed out';
}
