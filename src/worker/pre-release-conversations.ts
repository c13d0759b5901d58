/**
 * Conversations started by a build before 1.0. Their histories need the
 * workflow code that started them (1.0 removed the paths that replayed
 * them), and they are of another workflow type, `conversationWorkflow`, so a
 * 1.0 worker polling their task queue would fail their workflow tasks for
 * good. A 1.0 worker refuses to start while its task queue has any open, and
 * says how to drain them.
 */
import type { NativeConnection } from '@temporalio/worker';
import type { Connection } from '@temporalio/client';
import { AgentError } from '../common/errors';
import { isTemporalNotReady, TEMPORAL_START_WAIT_MS, waitForServer } from '../common/wait-for-server';

/** The workflow type of conversations started by builds before 1.0. */
export const PRE_RELEASE_WORKFLOW_TYPE = 'conversationWorkflow';

/** A task queue still has conversations a build before 1.0 started; nothing was started. */
export class PreReleaseConversationsError extends AgentError {}

/**
 * Throws a {@link PreReleaseConversationsError} when the task queue has open
 * conversations started by a build before 1.0 (one visibility count on
 * system attributes, which every visibility store has).
 */
export async function refusePreReleaseConversations(
  connection: NativeConnection | Connection,
  namespace: string,
  taskQueue: string,
): Promise<void> {
  const query = `WorkflowType = '${PRE_RELEASE_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue.replace(/'/g, "''")}'`;
  // A server that has just started, or whose database is down, may not know the namespace for a moment.
  const { count } = await waitForServer(
    `the conversations of task queue "${taskQueue}"`,
    () => connection.workflowService.countWorkflowExecutions({ namespace, query }),
    isTemporalNotReady,
    TEMPORAL_START_WAIT_MS,
  );
  const open = Number(count ?? 0);
  if (open === 0) return;
  const cliQuery = query.replace(/"/g, '\\"');
  throw new PreReleaseConversationsError(
    `Task queue "${taskQueue}" of namespace "${namespace}" has ${open} open conversation${open === 1 ? '' : 's'} started by a build before 1.0 ` +
      `(workflow type ${PRE_RELEASE_WORKFLOW_TYPE}), which this worker cannot run: their histories need the code that started them. Either ` +
      `let that build finish them first (keep its workers running until every conversation has ended; end idle ones with its CLI's end command), ` +
      `end them now: temporal workflow terminate --namespace ${namespace} --query "${cliQuery}" --reason "upgrade to 1.0", ` +
      `or run this worker on another task queue (TEMPORAL_TASK_QUEUE, or the worker's taskQueue) while that build drains this one.`,
  );
}
