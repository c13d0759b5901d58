/**
 * The activities' metrics, through the SDK's activity `metricMeter`: exported
 * by whatever runtime the worker installed. Outside an activity (a tool's
 * `once` called from a script, say) nothing is recorded.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, type MetricMeter } from '@temporalio/common';
import type { TokenUsage } from '../contract';
import { AGENT_METRICS, type MetricSpec } from '../contract/metrics';
import { ActivityErrorType } from '../contract/activities';

/** The current activity's meter, or none outside an activity. */
function meter(): MetricMeter | undefined {
  try {
    return Context.current().metricMeter;
  } catch {
    return undefined;
  }
}

const count = (m: MetricMeter, spec: MetricSpec, value: number, labels: Record<string, string>) =>
  m.createCounter(spec.name, spec.unit, spec.description).add(value, labels);

const record = (m: MetricMeter, spec: MetricSpec, value: number, labels: Record<string, string>) =>
  m.createHistogram(spec.name, 'int', spec.unit, spec.description).record(Math.max(Math.round(value), 0), labels);

/** The `outcome` label of a failed model call attempt, by the failure's type. */
const MODEL_FAILURE_OUTCOMES: Record<string, string> = {
  [ActivityErrorType.ModelCallFailed]: 'rate_limited_or_unavailable',
  [ActivityErrorType.ModelRequestRejected]: 'rejected',
  [ActivityErrorType.ContextLengthExceeded]: 'context_exceeded',
  [ActivityErrorType.IncompleteModelResponse]: 'incomplete',
  [ActivityErrorType.ModelStreamStalled]: 'stalled',
  [ActivityErrorType.ModelBehavior]: 'malformed',
};

/** A failed model call attempt's outcome label, in a word from a fixed set. */
export function modelFailureOutcome(err: unknown, cancelled: boolean): string {
  if (cancelled) return 'cancelled';
  return (err instanceof ApplicationFailure && err.type && MODEL_FAILURE_OUTCOMES[err.type]) || 'error';
}

/** A model call attempt that reached the provider ended. */
export function modelCallMeasured(call: {
  model: string;
  agent?: string;
  outcome: string;
  streamed: boolean;
  ms: number;
  usage?: TokenUsage;
  costUsd?: number;
}): void {
  const m = meter();
  if (!m) return;
  const agent = call.agent ?? '';
  count(m, AGENT_METRICS.modelCalls, 1, { model: call.model, agent, outcome: call.outcome });
  record(m, AGENT_METRICS.modelLatency, call.ms, {
    model: call.model,
    outcome: call.outcome,
    streamed: String(call.streamed),
  });
  const prompt = call.usage?.promptTokens ?? 0;
  const completion = call.usage?.completionTokens ?? 0;
  if (prompt > 0) count(m, AGENT_METRICS.modelTokens, prompt, { model: call.model, agent, kind: 'prompt' });
  if (completion > 0) count(m, AGENT_METRICS.modelTokens, completion, { model: call.model, agent, kind: 'completion' });
  if (call.costUsd !== undefined && call.costUsd > 0)
    count(m, AGENT_METRICS.modelCost, Math.round(call.costUsd * 1e6), { model: call.model, agent });
}

/** An earlier attempt's stored answer was used instead of calling the provider again. */
export function modelResponseReused(model: string, agent?: string): void {
  const m = meter();
  if (m) count(m, AGENT_METRICS.modelCalls, 1, { model, agent: agent ?? '', outcome: 'reused' });
}

/** A tool run attempt ended. */
export function toolRunMeasured(
  tool: string,
  outcome: 'ok' | 'failed' | 'failed_permanently' | 'cancelled',
  ms: number,
): void {
  const m = meter();
  if (!m) return;
  count(m, AGENT_METRICS.toolRuns, 1, { tool, outcome });
  record(m, AGENT_METRICS.toolLatency, ms, { tool, outcome });
}

/** The ledger held the effect already: it was not applied again. */
export function effectFromLedger(tool: string): void {
  const m = meter();
  if (m) count(m, AGENT_METRICS.effectsFromLedger, 1, { tool });
}
