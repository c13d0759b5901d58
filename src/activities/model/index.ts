/**
 * The model activity: reads the transcript by reference, calls an
 * OpenAI-compatible endpoint, returns the new assistant message with a plan
 * for each tool call. It runs as four stages, each in a file of its own:
 * prepare (who answers, with what), read (the transcript, or an earlier
 * attempt's answer), call (the provider, with the request fitted to the
 * window) and answer (output checks and tool call plans); a final answer is
 * then written into the transcript by the call itself (final-answer.ts).
 */
import { Context } from '@temporalio/activity';
import type { ModelCallInput, ModelCallResult } from '../../contract/activities';
import { agentTables } from '../../db/schema';
import { releaseStickyWorker } from '../activity-context';
import type { ModelActivityDeps } from '../deps';
import { guardrailsByAgent } from '../guardrails';
import { failOnRefusal } from '../store-failures';
import { answerAgain, answerModelCall } from './answer';
import { writeFinalAnswer } from './final-answer';
import { askModel } from './call';
import { prepareModelCall, type ModelEnv } from './prepare';
import { readForModelCall, stopAtInputGuardrails } from './read';
import { openAnswerStream } from './stream';

/** Builds the `callModel` activity. */
export function createModelActivity(deps: ModelActivityDeps): (input: ModelCallInput) => Promise<ModelCallResult> {
  const env: ModelEnv = { deps, tables: agentTables(deps.schema), guardrailsOf: guardrailsByAgent(deps.guardrails) };
  // A value PostgreSQL refuses (in the messages written first, or the answer) fails the call at once as StoreRefused.
  return (input) => failOnRefusal(() => callModel(env, input));
}

/** One model call: its answer, a final one written into the transcript by the call itself. */
async function callModel(env: ModelEnv, input: ModelCallInput): Promise<ModelCallResult> {
  return writeFinalAnswer(env, input, await answer(env, input));
}

/** The stages: each gets what the ones before it decided, and nothing else. */
async function answer(env: ModelEnv, input: ModelCallInput): Promise<ModelCallResult> {
  const activity = Context.current();
  releaseStickyWorker(activity);
  const call = await prepareModelCall(env, activity, input);
  const read = await readForModelCall(env, call);
  if (read.earlier) return answerAgain(env, call, read.earlier);
  const stopped = await stopAtInputGuardrails(env, call, read.transcript);
  if (stopped) return answerModelCall(env, call, stopped);
  const answerStream = openAnswerStream(env, call);
  const stored = await askModel(env, call, read, answerStream);
  const result = await answerModelCall(env, call, stored);
  // A held stream sends the answer only now, once the output guardrails let it stand.
  if (answerStream.held) await answerStream.end(!result.guardrail);
  return result;
}
