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
import type { GuardrailResult } from '../../contract/guardrail-results';
import { agentTables } from '../../db/schema';
import { releaseStickyWorker } from '../activity-context';
import type { ModelActivityDeps } from '../deps';
import { guardrailsByAgent } from '../guardrails';
import { failOnRefusal } from '../store-failures';
import { answerAgain, answerModelCall } from './answer';
import { writeFinalAnswer } from './final-answer';
import { withExtractedResult } from './extract';
import { askModel } from './call';
import { prepareModelCall, type ModelEnv, type PreparedCall } from './prepare';
import { recordModelSpend } from './spend';
import { readForModelCall, stopAtInputGuardrails } from './read';
import { withSummarySpend } from './summary-spend';
import { openAnswerStream } from './stream';

/** Builds the `callModel` activity. */
export function createModelActivity(deps: ModelActivityDeps): (input: ModelCallInput) => Promise<ModelCallResult> {
  const env: ModelEnv = { deps, tables: agentTables(deps.schema), guardrailsOf: guardrailsByAgent(deps.guardrails) };
  // A value PostgreSQL refuses (in the messages written first, or the answer) fails the call at once as StoreRefused.
  return (input) => failOnRefusal(() => callModel(env, input));
}

/** One model call: its answer, a final one written into the transcript by the call itself. */
async function callModel(env: ModelEnv, input: ModelCallInput): Promise<ModelCallResult> {
  return writeFinalAnswer(env, input, await withExtractedResult(env, input, await answer(env, input)));
}

/** The stages: each gets what the ones before it decided, and nothing else. */
async function answer(env: ModelEnv, input: ModelCallInput): Promise<ModelCallResult> {
  const activity = Context.current();
  releaseStickyWorker(activity);
  const call = await prepareModelCall(env, activity, input);
  const read = await readForModelCall(env, call);
  if (read.earlier) return spent(env, call, await answerAgain(env, call, read.earlier));
  const checked = await stopAtInputGuardrails(env, call, read.transcript);
  if (checked.stopped) return withInputResults(await answerModelCall(env, call, checked.stopped), checked.results);
  const answerStream = openAnswerStream(env, call);
  const stored = await askModel(env, call, read, answerStream);
  const result = withInputResults(await spent(env, call, await answerModelCall(env, call, stored)), checked.results);
  // A held stream sends the answer only now, once the output guardrails let it stand.
  if (answerStream.held) await answerStream.end(!result.guardrail);
  return result;
}

/**
 * The answer, once what it spent is recorded against the budget it draws on (when it draws on one), with what its
 * summaries of earlier turns cost (when it wrote any).
 */
async function spent(env: ModelEnv, call: PreparedCall, result: ModelCallResult): Promise<ModelCallResult> {
  await recordModelSpend(env, call, result);
  return withSummarySpend(env, call, result);
}

/**
 * The result with the input guardrails' results first; a trip's result read back from its stored note (no
 * `outputInfo`) gives way to the full one.
 */
function withInputResults(result: ModelCallResult, input: GuardrailResult[]): ModelCallResult {
  if (input.length === 0) return result;
  const covered = (r: GuardrailResult) => input.some((i) => i.on === r.on && i.guardrail === r.guardrail);
  return { ...result, guardrails: [...input, ...(result.guardrails ?? []).filter((r) => !covered(r))] };
}
