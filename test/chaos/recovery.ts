/**
 * Recovery times after worker kills, Temporal server restarts and database
 * restarts.
 *
 * Definition: from the fault (the SIGKILL, or the moment the server or the
 * database was stopped) until every conversation that had a turn in flight at that moment
 * has progressed, "progressed" meaning that a new message of it was stored in
 * PostgreSQL or the driver saw its turn finish. Sampled every `sampleMs`.
 * A conversation that never progresses again (stuck) is reported apart and
 * left out of the time, so one stuck conversation does not hide the others.
 */
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import type { Pool } from 'pg';
import type { RunLog } from './run-log';

/** One measured fault. */
export interface RecoveryMeasurement {
  kind: 'worker_kill' | 'server_restart' | 'database_restart';
  at: number;
  /** Conversations with a turn in flight at the fault. */
  inFlight: number;
  /** Fault → the last of them that progressed did; unset when none progressed. */
  recoveredMs?: number;
  /** The conversation that progressed last. */
  slowest?: string;
  /** Conversations in flight at the fault that never progressed afterwards. */
  neverProgressed: string[];
  /** What the slowest conversation waited for, read from its history (see {@link explainRecoveries}). */
  cause?: RecoveryCause;
}

/** What held up the conversation that recovered last. */
export type RecoveryCause =
  | 'workflow task timeout'
  | 'sticky queue timeout'
  | 'activity heartbeat timeout'
  | 'activity start-to-close timeout'
  | 'timer (approval timeout)'
  | 'no timeout (work or retry wait)'
  | 'history not found';

const { EventType, TimeoutType } = temporal.api.enums.v1;

/**
 * Reads, for each measurement, the history of the conversation that moved
 * last and names the timeout it waited for: the last one to end inside the
 * window from the fault to its recovery (a workflow task or sticky queue
 * timeout is an event of its own; an activity attempt's timeout shows on the
 * attempt that followed, as its last failure; a fired timer is the approval
 * timeout). None: it waited for work or a retry's backoff.
 */
export async function explainRecoveries(client: Client, measurements: readonly RecoveryMeasurement[]): Promise<void> {
  for (const m of measurements) {
    if (!m.slowest || m.recoveredMs === undefined) continue;
    let events: temporal.api.history.v1.IHistoryEvent[];
    try {
      events = (await client.workflow.getHandle(m.slowest).fetchHistory()).events ?? [];
    } catch {
      m.cause = 'history not found';
      continue;
    }
    const end = m.at + m.recoveredMs + 500;
    let latest: { at: number; cause: RecoveryCause } | undefined;
    for (const event of events) {
      const at = event.eventTime ? tsToMs(event.eventTime) : 0;
      if (at < m.at || at > end) continue;
      let cause: RecoveryCause | undefined;
      if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT) {
        cause = event.workflowTaskTimedOutEventAttributes?.timeoutType === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START ? 'sticky queue timeout' : 'workflow task timeout';
      } else if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
        const timeout = event.activityTaskStartedEventAttributes?.lastFailure?.timeoutFailureInfo?.timeoutType;
        if (timeout === TimeoutType.TIMEOUT_TYPE_HEARTBEAT) cause = 'activity heartbeat timeout';
        else if (timeout === TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE) cause = 'activity start-to-close timeout';
      } else if (event.eventType === EventType.EVENT_TYPE_TIMER_FIRED) {
        cause = 'timer (approval timeout)';
      }
      if (cause && (!latest || at >= latest.at)) latest = { at, cause };
    }
    m.cause = latest?.cause ?? 'no timeout (work or retry wait)';
  }
}

interface OpenMeasurement {
  measurement: RecoveryMeasurement;
  /** conversation id → [stored max seq, turns finished] at the fault, for those that have not progressed yet. */
  pending: Map<string, [number, number]>;
}

/** Samples progress and closes measurements as conversations move again. */
export class RecoveryTracker {
  readonly measurements: RecoveryMeasurement[] = [];
  private readonly open: OpenMeasurement[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sampling: Promise<void> = Promise.resolve();

  constructor(
    private readonly pool: Pool,
    private readonly runLog: RunLog,
    private readonly conversationPrefix: string,
    private readonly sampleMs = 250,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.sampling = this.sampling.then(() => this.sample()).catch(() => undefined);
    }, this.sampleMs);
  }

  /** Stops sampling; what has not progressed by now never did. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.sampling;
    for (const entry of this.open.splice(0)) entry.measurement.neverProgressed = [...entry.pending.keys()];
  }

  /** Starts measuring a fault that happened at `at`. */
  async begin(kind: RecoveryMeasurement['kind'], at: number): Promise<void> {
    const ids = this.runLog.inFlight();
    const measurement: RecoveryMeasurement = { kind, at, inFlight: ids.length, neverProgressed: [] };
    this.measurements.push(measurement);
    if (ids.length === 0) return;
    // Turns finished are read now, before the query below yields: a turn that finishes meanwhile counts as progress.
    const turns = new Map(ids.map((id) => [id, this.runLog.conversations.get(id)!.turnsFinished]));
    const seqs = await this.maxSeqs().catch(() => new Map<string, number>());
    const pending = new Map<string, [number, number]>(ids.map((id) => [id, [seqs.get(id) ?? -1, turns.get(id)!]]));
    this.open.push({ measurement, pending });
  }

  private async maxSeqs(): Promise<Map<string, number>> {
    const { rows } = await this.pool.query<{ conversation_id: string; seq: number }>(
      `SELECT conversation_id, max(seq) AS seq FROM durable_agent.conversation_messages WHERE conversation_id LIKE $1 GROUP BY conversation_id`,
      [`${this.conversationPrefix}%`],
    );
    return new Map(rows.map((r) => [r.conversation_id, Number(r.seq)]));
  }

  private async sample(): Promise<void> {
    if (this.open.length === 0) return;
    const seqs = await this.maxSeqs();
    const now = Date.now();
    for (const entry of [...this.open]) {
      for (const [id, [seq, turns]] of entry.pending) {
        const conversation = this.runLog.conversations.get(id)!;
        if ((seqs.get(id) ?? -1) > seq || conversation.turnsFinished > turns) {
          entry.pending.delete(id);
          entry.measurement.recoveredMs = now - entry.measurement.at;
          entry.measurement.slowest = id;
        }
      }
      if (entry.pending.size === 0) this.open.splice(this.open.indexOf(entry), 1);
    }
  }
}

/** The value at quantile `q` (0..1) of `values`, nearest rank; undefined when empty. */
export function quantile(values: readonly number[], q: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}
