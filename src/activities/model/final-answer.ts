/**
 * After the answer stage: a final answer (no tool calls) is written into the
 * transcript by the call itself, at the seq the workflow gave it
 * (`answerSeq`), so the turn's end has nothing left to write and schedules
 * no activity of its own. An answer with tool calls is written later, with
 * its calls' results, as the workflow defers it.
 */
import type { ModelCallInput, ModelCallResult } from '../../contract/activities';
import { insertMessages } from '../../db/transcript-store';
import { writingRun } from '../activity-context';
import { withDatabaseRetry } from '../database-retry';
import type { ModelEnv } from './prepare';

/**
 * Writes the final answer of `result` at `input.answerSeq`, by reference to
 * the stored response (so a withheld answer's note, stored in its place, is
 * what is written), and says so in the result. Idempotent: a retried
 * attempt writes the same row again. Nothing when the workflow did not ask
 * (code from before the change) or the answer has tool calls.
 */
export async function writeFinalAnswer(
  { deps, tables }: ModelEnv,
  input: ModelCallInput,
  result: ModelCallResult,
): Promise<ModelCallResult> {
  const seq = input.answerSeq;
  if (seq === undefined || (result.message.tool_calls?.length ?? 0) > 0) return result;
  const entry = { seq, ref: { kind: 'model_response' as const, key: result.responseKey } };
  // A displaced run's write fails the call as RunDisplaced (the activity's failOnRefusal). A write the run fenced off
  // (it stopped this call) stores nothing: the run no longer waits for this result.
  const written = await withDatabaseRetry('store the final answer', () =>
    insertMessages(deps.pool, tables, input.conversationId, [entry], { runId: writingRun(), ownAnswer: true }),
  );
  return written ? { ...result, answerWritten: true } : result;
}
