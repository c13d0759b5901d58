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
