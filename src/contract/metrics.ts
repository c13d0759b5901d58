/**
 * The agent's own metrics: one catalog for the workflow, the activities and
 * the standalone worker, and for the README's table. Pure data, safe in the
 * workflow sandbox.
 *
 * Every label takes values from a small, fixed set: an outcome, a decision,
 * a model or tool name the worker is configured with. Never a conversation,
 * call or person: a label that grows without bound breaks the metrics store.
 * Durations are in milliseconds, like the Temporal SDK's own.
 */

/** A metric of the catalog. */
export interface MetricSpec {
  name: string;
  kind: 'counter' | 'histogram' | 'gauge';
  unit: string;
  description: string;
  /**
   * The labels the agent sets (the SDK adds `namespace`, `task_queue` and, in workflows and activities, their type).
   */
  labels: readonly string[];
  /** Histogram bucket bounds, when the SDK's defaults (50 ms to 10 s) do not fit what it measures. */
  buckets?: readonly number[];
}

/** Every metric the agent records, by a short key. */
export const AGENT_METRICS = {
  turns: {
    name: 'agent_turns_total',
    kind: 'counter',
    unit: 'turns',
    description:
      'Turns that ended, by outcome (answered, failed, cancelled, interrupted, budget_exceeded, invalid_output, guardrail_tripped).',
    labels: ['outcome'],
  },
  toolCalls: {
    name: 'agent_tool_calls_total',
    kind: 'counter',
    unit: 'calls',
    description:
      'Tool calls settled, by tool and outcome (ok, tool_failed, rejected, approval_timeout, cancelled, interrupted, effect_unknown). Calls that were never run because the model named no known tool or sent arguments over the limit count under tool "(not run)".',
    labels: ['tool', 'outcome'],
  },
  approvalDecisions: {
    name: 'agent_approval_decisions_total',
    kind: 'counter',
    unit: 'calls',
    description:
      'Tool calls decided by a person, by tool and decision (approve, reject, edit, respond). Calls whose approval timed out count in agent_tool_calls_total.',
    labels: ['tool', 'decision'],
  },
  approvalWait: {
    name: 'agent_approval_wait',
    kind: 'histogram',
    unit: 'ms',
    description:
      'How long a tool call waited for its decision, from the model asking to the decision being applied, by decision.',
    labels: ['decision'],
    // A person answers in seconds or in days: 1 s to 7 days.
    buckets: [1_000, 10_000, 60_000, 600_000, 3_600_000, 14_400_000, 86_400_000, 259_200_000, 604_800_000],
  },
  modelCalls: {
    name: 'agent_model_calls_total',
    kind: 'counter',
    unit: 'calls',
    description:
      "Attempts to call the model, by model, agent (empty for conversations of one unnamed agent) and outcome: ok, reused (an earlier attempt's stored answer, not paid twice), or the failure (rate_limited_or_unavailable, rejected, context_exceeded, incomplete, stalled, malformed, cancelled, error).",
    labels: ['model', 'agent', 'outcome'],
  },
  modelLatency: {
    name: 'agent_model_call_latency',
    kind: 'histogram',
    unit: 'ms',
    description:
      'Duration of a model call attempt that reached the provider, by model, outcome and whether it streamed.',
    labels: ['model', 'outcome', 'streamed'],
    // A model answers in a fraction of a second or, reasoning, in minutes: 100 ms to 5 min.
    buckets: [100, 250, 500, 1_000, 2_500, 5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000],
  },
  modelTokens: {
    name: 'agent_model_tokens_total',
    kind: 'counter',
    unit: 'tokens',
    description:
      'Tokens the provider reported for answered calls, by model, agent (empty for conversations of one unnamed agent) and kind (prompt, completion).',
    labels: ['model', 'agent', 'kind'],
  },
  modelCost: {
    name: 'agent_model_cost_microdollars_total',
    kind: 'counter',
    unit: 'microdollars',
    description:
      "What answered model calls cost, in millionths of a US dollar, by model and agent (empty for conversations of one unnamed agent); only models with a price (AGENT_MODEL_PRICES, the plugin's model.prices).",
    labels: ['model', 'agent'],
  },
  toolRuns: {
    name: 'agent_tool_runs_total',
    kind: 'counter',
    unit: 'attempts',
    description:
      'Attempts to run a tool, by tool and outcome (ok, failed, failed_permanently, cancelled). A retried call counts each attempt.',
    labels: ['tool', 'outcome'],
  },
  toolLatency: {
    name: 'agent_tool_run_latency',
    kind: 'histogram',
    unit: 'ms',
    description: 'Duration of a tool run attempt, by tool and outcome.',
    labels: ['tool', 'outcome'],
    buckets: [10, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000],
  },
  effectsFromLedger: {
    name: 'agent_effects_from_ledger_total',
    kind: 'counter',
    unit: 'effects',
    description:
      'Side effects not applied again because the ledger held them already (a retry or a second worker), by tool.',
    labels: ['tool'],
  },
  conversationsAwaitingApproval: {
    name: 'agent_conversations_awaiting_approval',
    kind: 'gauge',
    unit: 'conversations',
    description:
      "Conversations of the task queue waiting for a person (counted by Temporal's visibility, or from PostgreSQL without the approvals search attributes), by how long the oldest call has waited (waited: any, over_1h, over_1d, over_7d). Every standalone worker reports the same figure.",
    labels: ['waited'],
  },
  webhookDeliveries: {
    name: 'agent_webhook_deliveries_total',
    kind: 'counter',
    unit: 'attempts',
    description:
      'Attempts to deliver a notification to a webhook endpoint, by endpoint (its configured name) and outcome (delivered: answered 2xx; failed: another status, no answer in time, no connection).',
    labels: ['endpoint', 'outcome'],
  },
  webhookUndelivered: {
    name: 'agent_webhook_undelivered',
    kind: 'gauge',
    unit: 'events',
    description:
      "Notifications not delivered yet, by endpoint and state (pending; failing: after the dispatcher's number of failed attempts, still retried). Every worker delivering to the endpoint reports the same figure.",
    labels: ['endpoint', 'state'],
  },
  webhookOldestUndelivered: {
    name: 'agent_webhook_oldest_undelivered_age',
    kind: 'gauge',
    unit: 'ms',
    description:
      'How long ago the oldest notification not yet delivered to the endpoint was written (0 when none waits), by endpoint.',
    labels: ['endpoint'],
  },
} as const satisfies Record<string, MetricSpec>;

/** The `waited` label values of {@link AGENT_METRICS}.conversationsAwaitingApproval, with their thresholds (ms). */
export const APPROVAL_AGE_THRESHOLDS = [
  { waited: 'over_1h', ms: 3_600_000 },
  { waited: 'over_1d', ms: 86_400_000 },
  { waited: 'over_7d', ms: 7 * 86_400_000 },
] as const;

/** The `tool` label of a call that was never run (its name is the model's, not one of the worker's tools). */
export const NOT_RUN_TOOL_LABEL = '(not run)';

/** The bucket bounds of the agent's histograms, as the SDK's `histogramBucketOverrides` takes them. */
export function agentHistogramBuckets(): Record<string, number[]> {
  const specs: readonly MetricSpec[] = Object.values(AGENT_METRICS);
  return Object.fromEntries(specs.flatMap((m) => (m.buckets ? [[m.name, [...m.buckets]]] : [])));
}
