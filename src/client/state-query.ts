/**
 * Asking a conversation's worker for its state (the `state` query), and
 * telling a failure for want of a worker from a failure of what was asked.
 */
import { isGrpcServiceError } from '@temporalio/client';
import { STALE_QUERY_TASK_MESSAGE, stateQuery, type ConversationState } from '../contract';
import type { ClientContext } from './context';

/** How often {@link queryState} asks again when a worker declined a query it could not answer safely. */
const STALE_QUERY_RETRIES = 20;

/** No worker answered a query in time: none runs on the task queue, or none reaches the server. */
export class NoWorkerAnsweredError extends Error {
  constructor(conversationId: string, taskQueue: string, timeoutMs: number) {
    super(
      `No worker answered conversation ${conversationId} within ${Math.round(timeoutMs / 1000)} s. Is a worker running on task queue "${taskQueue}" (npm start)? Nothing was changed.`,
    );
    this.name = 'NoWorkerAnsweredError';
  }
}

/** The conversation's state, as `AgentClient.state` answers it. */
export async function queryState(
  context: ClientContext,
  conversationId: string,
  options: { timeoutMs?: number } = {},
): Promise<ConversationState> {
  const handle = context.temporal.workflow.getHandle(conversationId);
  const timeoutMs = options.timeoutMs ?? context.queryTimeoutMs;
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      if (timeoutMs === undefined) return await handle.query(stateQuery);
      return await context.temporal.connection.withDeadline(started + timeoutMs, () => handle.query(stateQuery));
    } catch (err) {
      if (timeoutMs !== undefined && Date.now() - started >= timeoutMs - 50)
        throw new NoWorkerAnsweredError(conversationId, context.taskQueue, timeoutMs);
      // A worker that took over a conversation declines a query whose history has unhandled
      // events (see src/workflows/interceptors.ts); the next workflow task answers it.
      const declined = err instanceof Error && err.message.includes(STALE_QUERY_TASK_MESSAGE);
      if (!declined || attempt >= STALE_QUERY_RETRIES) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.min(100 * attempt, 1_000)));
    }
  }
}

/**
 * A query that failed because no worker could answer it now, not for what it
 * asked: no worker answering within the client's query timeout; gRPC
 * CANCELLED, DEADLINE_EXCEEDED or UNAVAILABLE (as when the worker that cached
 * the conversation was killed, or the server restarts); or the server saying
 * no worker polls the task queue (FAILED_PRECONDITION "no poller seen", as
 * while the only worker restarts). What waits for a turn asks again; a
 * one-off read fails with it.
 */
export function isWorkerOutage(err: unknown): boolean {
  if (err instanceof NoWorkerAnsweredError) return true;
  const grpc = isGrpcServiceError(err)
    ? err
    : err instanceof Error && isGrpcServiceError(err.cause)
      ? err.cause
      : undefined;
  if (grpc === undefined) return false;
  return [1, 4, 14].includes(grpc.code) || (grpc.code === 9 && /no poller/i.test(`${grpc.message} ${grpc.details}`));
}
