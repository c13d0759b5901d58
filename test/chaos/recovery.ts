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
 *
 * A control measures the same at a moment with no fault: how long the turns
 * in flight take to move by their own work alone. It is the floor under
 * every recovery time above, whatever the runtime does.
 */
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'pg';
import type { RunLog } from './run-log';
import { WORKER_LOST_ERROR_TYPE } from '../../src/worker/lost-workers';

/** One measured fault. */
export interface RecoveryMeasurement {
  /**
   * A fault, or a control: a moment with no fault (every worker up, every earlier fault's conversations moved again).
   */
  kind: 'worker_kill' | 'server_restart' | 'database_restart' | 'control';
  at: number;
  /** A control that a fault ended before every conversation in it had moved (left out of the times). */
  cutShort?: boolean;
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
  /** Each conversation in flight at the fault: when it progressed (ms after the fault), and what it waited for. */
  progressed: Map<string, { ms: number; cause?: RecoveryCause; resumedMs?: number }>;
  /**
   * Fault → the last of the conversations it held up progressed: those whose
   * wait included a timeout (the others only waited for their own work).
   * Unset when it held none up.
   */
  heldUpMs?: number;
}

/** What held up the conversation that recovered last. */
export type RecoveryCause =
  | 'workflow task timeout'
  | 'sticky queue timeout'
  | 'activity heartbeat timeout'
  | 'activity start-to-close timeout'
  | 'worker lost (taken over)'
  | 'timer (approval timeout)'
  | 'no timeout (work or retry wait)'
  | 'history not found';

const { EventType, TimeoutType } = temporal.api.enums.v1;

/** The waits a lost worker or server causes (an approval timer or work of its own is not one). */
export const HELD_UP_BY_FAULT: readonly RecoveryCause[] = [
  'workflow task timeout',
  'sticky queue timeout',
  'activity heartbeat timeout',
  'activity start-to-close timeout',
  'worker lost (taken over)',
];

/**
 * Reads, for each measurement, the history of every conversation in flight
 * at the fault and names the timeout it waited for: the last one to end
 * inside the window from the fault to its progress (a workflow task or sticky
 * queue timeout is an event of its own; an activity attempt's timeout shows
 * on the attempt that followed, as its last failure; a fired timer is the
 * approval timeout; an attempt failed over by lost-worker takeover shows as
 * its `WorkerLost` failure). None: it waited for work or a retry's backoff. Sets
 * each measurement's `cause` (of its slowest conversation) and `heldUpMs`
 * (from the conversations whose wait included a timeout a fault causes; an
 * approval timer is not one).
 */
export async function explainRecoveries(client: Client, measurements: readonly RecoveryMeasurement[]): Promise<void> {
  const histories = new Map<string, temporal.api.history.v1.IHistoryEvent[] | undefined>();
  const historyOf = async (id: string) => {
    if (!histories.has(id)) histories.set(id, await everyRun(client, id).catch(() => undefined));
    return histories.get(id);
  };
  for (const m of measurements) {
    for (const [id, progress] of m.progressed) {
      const events = await historyOf(id);
      const found = events ? causeIn(events, m.at, m.at + progress.ms + 500) : { cause: 'history not found' as const };
      progress.cause = found.cause;
      if (found.resumedAt !== undefined) progress.resumedMs = Math.max(0, found.resumedAt - m.at);
      if (HELD_UP_BY_FAULT.includes(progress.cause)) m.heldUpMs = Math.max(m.heldUpMs ?? 0, progress.ms);
    }
    if (m.slowest) m.cause = m.progressed.get(m.slowest)?.cause;
  }
}

/**
 * The events of every run of a conversation, oldest run first: a
 * conversation that continued as new since the fault held its turn in an
 * earlier run (the latest run alone would show no wait at all).
 */
async function everyRun(client: Client, workflowId: string): Promise<temporal.api.history.v1.IHistoryEvent[]> {
  const runs: temporal.api.history.v1.IHistoryEvent[][] = [];
  let runId: string | undefined;
  for (;;) {
    const events = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    runs.unshift(events);
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
    if (!runId) return runs.flat();
  }
}

/**
 * The last timeout to end between `from` and `to` among `events`, and when
 * the work it held up ran again: the retried attempt's start, or the start
 * of the workflow task after a workflow task timeout.
 */
function causeIn(
  events: temporal.api.history.v1.IHistoryEvent[],
  from: number,
  to: number,
): { cause: RecoveryCause; resumedAt?: number } {
  let latest: { at: number; cause: RecoveryCause; taskTimedOut: boolean; resumedAt?: number } | undefined;
  for (const event of events) {
    // A workflow task timed out: the held-up work ran again when the next workflow task started.
    if (
      event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED &&
      latest?.taskTimedOut &&
      latest.resumedAt === undefined
    ) {
      latest.resumedAt = event.eventTime ? tsToMs(event.eventTime) : undefined;
    }
    const at = event.eventTime ? tsToMs(event.eventTime) : 0;
    if (at < from || at > to) continue;
    let cause: RecoveryCause | undefined;
    if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT) {
      cause =
        event.workflowTaskTimedOutEventAttributes?.timeoutType === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START
          ? 'sticky queue timeout'
          : 'workflow task timeout';
    } else if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      const lastFailure = event.activityTaskStartedEventAttributes?.lastFailure;
      const timeout = lastFailure?.timeoutFailureInfo?.timeoutType;
      if (lastFailure?.applicationFailureInfo?.type === WORKER_LOST_ERROR_TYPE) cause = 'worker lost (taken over)';
      else if (timeout === TimeoutType.TIMEOUT_TYPE_HEARTBEAT) cause = 'activity heartbeat timeout';
      else if (timeout === TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE) cause = 'activity start-to-close timeout';
    } else if (event.eventType === EventType.EVENT_TYPE_TIMER_FIRED) {
      cause = 'timer (approval timeout)';
    }
    if (cause && (!latest || at >= latest.at)) {
      const taskTimedOut = event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT;
      // A retried attempt's start is the event itself; a fired timer held up no work.
      latest = {
        at,
        cause,
        taskTimedOut,
        resumedAt: event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED ? at : undefined,
      };
    }
  }
  return latest ? { cause: latest.cause, resumedAt: latest.resumedAt } : { cause: 'no timeout (work or retry wait)' };
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

  /** Starts measuring a fault (or a control) that happened at `at`. */
  async begin(kind: RecoveryMeasurement['kind'], at: number): Promise<RecoveryMeasurement> {
    const ids = this.runLog.inFlight();
    const measurement: RecoveryMeasurement = {
      kind,
      at,
      inFlight: ids.length,
      neverProgressed: [],
      progressed: new Map(),
    };
    this.measurements.push(measurement);
    if (ids.length === 0) return measurement;
    // Turns finished are read now, before the query below yields: a turn that finishes meanwhile counts as progress.
    const turns = new Map(ids.map((id) => [id, this.runLog.conversations.get(id)!.turnsFinished]));
    const seqs = await this.maxSeqs().catch(() => new Map<string, number>());
    const pending = new Map<string, [number, number]>(ids.map((id) => [id, [seqs.get(id) ?? -1, turns.get(id)!]]));
    this.open.push({ measurement, pending });
    return measurement;
  }

  /**
   * Waits until no measurement is open (every conversation in flight at each
   * fault or control has moved again); false when `timeoutMs` passed first or
   * `signal` aborted.
   */
  async settled(timeoutMs: number, signal: AbortSignal): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.open.length > 0) {
      if (signal.aborted || Date.now() >= deadline) return false;
      await sleep(this.sampleMs / 2);
    }
    return true;
  }

  /** Ends a control still open (a fault is about to happen): it is left out of the times. */
  cutShort(measurement: RecoveryMeasurement): void {
    const entry = this.open.find((o) => o.measurement === measurement);
    if (!entry) return;
    this.open.splice(this.open.indexOf(entry), 1);
    measurement.cutShort = true;
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
          entry.measurement.progressed.set(id, { ms: now - entry.measurement.at });
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
