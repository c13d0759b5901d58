/**
 * The conversation workflow's metrics, through the SDK's workflow
 * `metricMeter`: exported by whatever runtime the worker installed (the
 * standalone worker's Prometheus endpoint, or a team's own). The SDK records
 * nothing while a workflow replays, so a conversation rebuilt from its
 * history does not count its turns twice. Recording adds no command to the
 * history: no patch is needed.
 */
import { metricMeter } from '@temporalio/workflow';
import { AGENT_METRICS, type MetricSpec } from '../contract/metrics';
import type { OutcomeKind } from '../core/outcomes';
import type { DecisionKind } from '../contract/decisions';

const counter = (spec: MetricSpec) => metricMeter.createCounter(spec.name, spec.unit, spec.description);

/** The workflow's instruments, made once per workflow run (the meter is per workflow). */
export class WorkflowMetrics {
  private readonly turns = counter(AGENT_METRICS.turns);
  private readonly toolCalls = counter(AGENT_METRICS.toolCalls);
  private readonly decisions = counter(AGENT_METRICS.approvalDecisions);
  private readonly approvalWait = metricMeter.createHistogram(
    AGENT_METRICS.approvalWait.name,
    'int',
    AGENT_METRICS.approvalWait.unit,
    AGENT_METRICS.approvalWait.description,
  );

  /** A turn ended. */
  turnEnded(outcome: string): void {
    this.turns.add(1, { outcome });
  }

  /** The calls of a batch settled. */
  callsSettled(calls: readonly { tool: string; outcome: OutcomeKind }[]): void {
    for (const call of calls) this.toolCalls.add(1, { tool: call.tool, outcome: call.outcome });
  }

  /** A person's decision was applied to these calls. */
  decided(decision: DecisionKind, calls: readonly { tool: string; waitedMs: number }[]): void {
    for (const call of calls) {
      this.decisions.add(1, { tool: call.tool, decision });
      this.approvalWait.record(Math.round(call.waitedMs), { decision });
    }
  }
}
