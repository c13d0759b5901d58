/**
 * What the model and tool activities do the same way with their activity
 * context, ordinary or local: heartbeats while they run, and how a
 * cancellation is reported.
 */
import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import { logger } from '../common/logger';
import { HEARTBEAT_EVERY_MS } from '../contract/activities';

/**
 * Heartbeats an ordinary activity, which is how its cancellation reaches it
 * (its `cancellationSignal` aborts); nothing for a local one, which has no
 * heartbeats (its workflow task's timeout stands for them) and is cancelled
 * in-process.
 */
export function beat(context: Context): void {
  if (!context.info.isLocal) context.heartbeat();
}

/** Heartbeats every {@link HEARTBEAT_EVERY_MS} until the returned function is called. */
export function heartbeatWhileRunning(context: Context): () => void {
  const timer = setInterval(() => beat(context), HEARTBEAT_EVERY_MS);
  return () => clearInterval(timer);
}

/**
 * The cancellation to report when the activity was cancelled, whatever the
 * aborted work threw: the SDK reports a call as cancelled (not failed, so not
 * retried; a local activity would be) only for a `CancelledFailure`.
 */
export function asCancellation(context: Context): CancelledFailure | undefined {
  if (!context.cancellationSignal.aborted) return undefined;
  const reason: unknown = context.cancellationSignal.reason;
  return reason instanceof CancelledFailure ? reason : new CancelledFailure('The activity was cancelled.');
}

/**
 * For a retried attempt of an ordinary activity: asks Temporal to send the
 * conversation's next workflow task to any worker rather than to the worker
 * that last ran it. The attempt before may have died with its worker
 * (SIGKILL, a lost host), and that worker likely held the conversation in its
 * cache: its sticky queue would hold the next workflow task for the sticky
 * schedule-to-start timeout before any other worker may take it. Costs one
 * request per retry, and at most a replay when the cached worker is alive.
 * Never fails the attempt.
 */
export function releaseStickyWorker(context: Context): void {
  const { info } = context;
  if (info.isLocal || info.attempt <= 1 || !info.workflowExecution) return;
  let client: Context['client'];
  try {
    client = context.client;
  } catch {
    return; // an activity environment without a client (tests)
  }
  void client.workflowService
    .resetStickyTaskQueue({
      namespace: info.workflowNamespace ?? client.options.namespace,
      execution: info.workflowExecution,
    })
    .catch((err: Error) =>
      logger.debug(
        { err: err.message, workflowId: info.workflowExecution?.workflowId },
        'could not reset the sticky queue of a retried activity',
      ),
    );
}

/**
 * The workflow run the current activity works for, which its transcript writes name (`WriteScope.runId`); undefined
 * outside an activity, or for an activity started by a client rather than a workflow.
 */
export function writingRun(): string | undefined {
  try {
    return Context.current().info.workflowExecution?.runId;
  } catch {
    return undefined;
  }
}
