/**
 * Workflow interceptors of the conversation workflow (run in the workflow sandbox).
 *
 * The one interceptor here keeps live execution and replay in step when a
 * query reaches a worker that does not have the conversation cached.
 *
 * Temporal answers a query sent while no workflow task is outstanding with a
 * "legacy query task", which carries the whole history as it is when a worker
 * takes the task. When the conversation's worker died (and, in principle, in a
 * short race with new events), that history can end with events no workflow task has processed
 * yet: a timer that fired, an activity that finished. The SDK core then applies
 * those events in an activation of their own, keeps the result in its cache,
 * and hands the signals that arrive next in a later activation. Replay groups
 * the same events by workflow task and runs a group's signals first. So live,
 * an approval deadline's timer can be handled before a decision signal, and on
 * replay after it: a nondeterminism error that leaves the conversation stuck
 * (seen in the chaos run; reproduced in `test/integration/decision-deadline-crash.test.ts`).
 *
 * Such an activation is recognisable: it is not a replay, it carries work
 * besides queries, and it saw a longer history than the previous activation
 * while its clock did not move (a query task has no workflow task of its own,
 * so it reuses the last one's start time; a real workflow task has a new start
 * time, and a second activation within one task sees the same history). The
 * guard fails it before any job runs. The query gets an error that says to
 * retry, the worker drops the cached run, and the next real workflow task
 * rebuilds it from history, grouped exactly as replay will.
 */
import { workflowInfo, type WorkflowInterceptorsFactory } from '@temporalio/workflow';
import { CONVERSATION_WORKFLOW_TYPE, STALE_QUERY_TASK_MESSAGE } from '../contract';

/** A protobuf timestamp as an exact, comparable key. */
function timestampKey(ts: { seconds?: unknown; nanos?: number | null } | null | undefined): string | undefined {
  if (!ts || ts.seconds === undefined || ts.seconds === null) return undefined;
  return `${String(ts.seconds)}.${ts.nanos ?? 0}`;
}

/**
 * Interceptors of the conversation workflow. The plugin adds this module to a
 * team's workflow bundle, where it is installed in every workflow; it guards
 * only conversations and leaves the team's own workflows as they are.
 */
export const interceptors: WorkflowInterceptorsFactory = () => {
  if (workflowInfo().workflowType !== CONVERSATION_WORKFLOW_TYPE) return {};
  // The previous activation that carried work: its clock and the history length it saw.
  let previous: { at: string | undefined; historyLength: number } | undefined;
  return {
    internals: [
      {
        activate(input, next) {
          const { activation, batchIndex } = input;
          const carriesWork = (activation.jobs ?? []).some((job) => !job.queryWorkflow);
          if (carriesWork && batchIndex === 0) {
            const current = { at: timestampKey(activation.timestamp), historyLength: activation.historyLength ?? 0 };
            // New history under an unchanged clock: no workflow task delivered it. (A second activation
            // of the same workflow task, such as an activity's cancellation, keeps both the clock and
            // the history length.)
            const staleQueryTask =
              !activation.isReplaying &&
              previous !== undefined &&
              current.at !== undefined &&
              current.at === previous.at &&
              current.historyLength !== previous.historyLength;
            if (staleQueryTask) throw new Error(STALE_QUERY_TASK_MESSAGE);
            previous = current;
          }
          next(input);
        },
      },
    ],
  };
};
