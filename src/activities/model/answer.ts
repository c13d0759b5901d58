/**
 * The last stage of a model call: the stored answer becomes the result the
 * workflow gets. A final answer meets the typed output asked for and the
 * output guardrails; each tool call gets its plan.
 */
import type { AssistantMessage, ModelCallResult, OutputCheck } from '../../contract/activities';
import type { GuardrailResult, GuardrailTrip, TokenUsage } from '../../contract';
import type { ResolvedOutput } from '../../common/typed-output';
import { costOf, type ModelPrices } from '../../core/pricing';
import { withholdModelResponse, type StoredModelResponse } from '../../db/transcript-store';
import { withDatabaseRetry } from '../database-retry';
import { firstTrip, guardrailNote, toolGuardrailsOf } from '../guardrails';
import { DEFAULT_INLINE_LIMIT, inlineOrPreview } from '../history-preview';
import { modelResponseReused } from '../metrics';
import { inSpan } from '../tracing';
import { argumentsOverLimit, planToolCalls } from './plans';
import { planContexts } from './call-checks';
import type { ModelEnv, PreparedCall } from './prepare';

/** The largest typed output, as JSON text, that a turn's record carries; a larger one stays in the answer. */
const OUTPUT_INLINE_LIMIT = 4096;

/**
 * The result the workflow gets: the answer as history carries it, its
 * cost, a plan per tool call and its typed output; or, when a guardrail
 * stopped the turn, the note stored in its place. An output guardrail
 * that trips withholds a final answer here (the stored note replaces it).
 */
export async function answerModelCall(
  env: ModelEnv,
  call: PreparedCall,
  response: StoredModelResponse,
): Promise<ModelCallResult> {
  const { deps, tables } = env;
  const { model, responseKey, guards, guardContext } = call;
  const base = {
    ...response,
    ...priced(deps.model.prices, model, response.usage),
    message: inHistory(response.message, deps.inlineResultLimit, responseKey),
    responseKey,
  };
  // A stored trip (this attempt's, or an earlier one's whose checks are not run again) is in the results too.
  if (response.guardrail) return { ...base, calls: [], guardrails: [tripResult(response.guardrail)] };
  const typed = checkedOutput(call.output, response.message);
  let checked: GuardrailResult[] = [];
  if (isFinal(response.message) && guards.output.length > 0 && typed.output?.ok !== false) {
    const subject = {
      text: response.message.content ?? '',
      ...(typed.value !== undefined ? { output: typed.value } : {}),
    };
    const { trip, results } = await firstTrip('output', guards.output, subject, guardContext);
    checked = results;
    if (trip) {
      const note = guardrailNote(trip, call.speaker?.name);
      const withheld = await withDatabaseRetry('withhold the answer', () =>
        withholdModelResponse(deps.pool, tables, responseKey, note, trip),
      );
      const stopped = await answerModelCall(env, call, withheld);
      return { ...stopped, guardrails: results }; // the full results, the trip's with its outputInfo
    }
  }
  const planned = await planToolCalls(
    call.registry,
    deps.maxParallelToolCalls,
    call.offer,
    response.message,
    (tool) => toolGuardrailsOf(guards, tool),
    planContexts(env, call),
    deps.approvalPolicy,
  );
  // The tool guardrails' results go with the input and output guardrails' into the turn's record, not in the plans.
  const calls = planned.map(({ guardrails: _results, ...plan }) => plan);
  const results = [...checked, ...planned.flatMap((p) => p.guardrails ?? [])];
  return {
    ...base,
    calls,
    ...(typed.output ? { output: typed.output } : {}),
    ...(results.length > 0 ? { guardrails: results } : {}),
  };
}

/** The result of the guardrail whose trip is stored with a response: its tripwire and reason (no `outputInfo`). */
function tripResult(trip: GuardrailTrip): GuardrailResult {
  return { on: trip.on, guardrail: trip.guardrail, tripwire: true, reason: trip.reason };
}

/** The answer an earlier attempt got but did not report (crash, lost completion): used again, not paid for twice. */
export function answerAgain(env: ModelEnv, call: PreparedCall, earlier: StoredModelResponse): Promise<ModelCallResult> {
  modelResponseReused(call.model, call.speaker?.name);
  return inSpan('model call', { ...call.spanAttributes, 'agent.outcome': 'reused' }, async () =>
    answerModelCall(env, call, earlier),
  );
}

/**
 * How a final answer fared against the typed output asked for (nothing for
 * answers with tool calls, or when none was asked for), and its parsed value.
 */
function checkedOutput(
  output: ResolvedOutput | undefined,
  message: AssistantMessage,
): { output?: OutputCheck; value?: unknown } {
  if (!output || !isFinal(message)) return {};
  const verdict = output.check(message.content ?? '');
  if (!verdict.ok)
    return { output: { ok: false, problem: verdict.problem, retries: output.retries, schemaName: output.name } };
  const value = verdict.value ?? null;
  const inline = JSON.stringify(value).length <= OUTPUT_INLINE_LIMIT;
  return { output: inline ? { ok: true, value } : { ok: true, inAnswer: true }, value };
}

/** True for a final answer: one without tool calls. */
function isFinal(message: AssistantMessage): boolean {
  return (message.tool_calls?.length ?? 0) === 0;
}

/** The call's cost, when its model has a price and the provider counted tokens. */
function priced(prices: ModelPrices | undefined, model: string, usage: TokenUsage | undefined): { costUsd?: number } {
  const costUsd = costOf(prices, model, usage);
  return costUsd === undefined ? {} : { costUsd };
}

/**
 * The assistant message as it travels through workflow history: a long text
 * (answer or reasoning) becomes a preview, like a long tool result; the whole
 * message is stored and appended by reference, so clients and later model
 * calls read it in full. Tool calls travel whole (the workflow runs them),
 * except the arguments of a call over the limit, which is not run.
 */
function inHistory(
  message: AssistantMessage,
  inlineResultLimit: number | undefined,
  responseKey: string,
): AssistantMessage {
  const limit = inlineResultLimit ?? DEFAULT_INLINE_LIMIT;
  const preview = (text: string, what: string) =>
    inlineOrPreview(text, limit, `${what} is stored under model response ${responseKey}`);
  return {
    ...message,
    ...(message.tool_calls?.some(argumentsOverLimit)
      ? {
          tool_calls: message.tool_calls.map((c) =>
            argumentsOverLimit(c) ? { ...c, function: { ...c.function, arguments: '{}' } } : c,
          ),
        }
      : {}),
    content: message.content === null ? null : preview(message.content, 'answer'),
    ...(message.reasoning_content !== undefined
      ? { reasoning_content: preview(message.reasoning_content, 'reasoning') }
      : {}),
  };
}
