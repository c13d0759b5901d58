/**
 * Lost-worker takeover (runs in the worker process, outside workflow code).
 *
 * A worker killed outright (SIGKILL, the OOM killer, a lost host) leaves its
 * started activity attempts to Temporal's timeouts: a model call or a tool is
 * retried only when its heartbeat timeout fires and the retry's backoff has
 * passed, 3 to 4 s after the kill with a 3 s heartbeat timeout, 10 to 11 s
 * with the default 10 s. Each worker here holds a PostgreSQL advisory lock
 * on a session of its own for as long as its process lives, and records the
 * task token of every conversation activity attempt running longer than
 * 50 ms. The operating system closes a killed process's connections at
 * once, so PostgreSQL frees its lock at once; a peer that sees the lock free
 * for `confirmMs` claims it (one peer wins), fails the dead worker's attempts
 * by task token with a retryable `WorkerLost` failure that asks for the
 * retry at once, tells Temporal the worker's sticky queue is gone (its
 * cached conversations' next tasks go to any worker instead of waiting for
 * the sticky timeout), and deletes its rows.
 *
 * Nothing here replaces Temporal's timeouts: they still catch a worker that
 * hangs with its process alive (its lock stays held), a worker that dies
 * while the database is down, and attempts not recorded (younger than 50 ms,
 * or whose row had not landed). A worker whose own session drops (a
 * database restart) locks its key again when it reconnects; peers judge
 * nobody during `graceMs` after PostgreSQL started or their own session
 * reconnected, so a database restart does not look like every worker dying.
 * A worker declared lost while alive (its session alone was cut for longer
 * than `confirmMs`) sees its attempts' heartbeats refused and their retries
 * run elsewhere: the outcome of a heartbeat timeout.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client as PgClient, type Pool } from 'pg';
import type { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { Client } from '@temporalio/client';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { AgentTables } from '../db/schema';
import { logger } from '../common/logger';
import { ActivityErrorType } from '../contract/activities';
import { prepared } from '../db/prepared';

/** The failure type of an attempt failed because its worker was lost. */
export const WORKER_LOST_ERROR_TYPE = ActivityErrorType.WorkerLost;

/** The advisory lock class of worker liveness locks (the key is per worker). */
const LOCK_CLASS = 0x44415754;
/** application_name of the liveness sessions (visible in pg_stat_activity). */
const LIVENESS_APPLICATION_NAME = 'durable-agent-worker liveness';

/**
 * An attempt is recorded once it has run this long: transcript writes and
 * quick tools end sooner and never touch the table (a worker killed within
 * an attempt's first 50 ms leaves it to the heartbeat timeout).
 */
const RECORD_AFTER_MS = 50;

/** How long workers judge nobody after PostgreSQL started or their own liveness session reconnected, ms. */
export const DEFAULT_GRACE_MS = 5_000;

/** Options of lost-worker takeover. */
export interface LostWorkerOptions {
  /** Default true. Off: a killed worker's attempts wait for their heartbeat timeouts, as in plain Temporal. */
  enabled?: boolean;
  /** How often a worker looks for lost peers, ms. Default 100. */
  checkEveryMs?: number;
  /** How long a peer's lock must stay free before it is declared lost, ms. Default 300. */
  confirmMs?: number;
  /**
   * How long it judges nobody after its own session reconnected, or after
   * PostgreSQL started, ms (every worker's session ends when the database
   * restarts, and each locks its key again at its next check once the
   * database is back). Default {@link DEFAULT_GRACE_MS}.
   */
  graceMs?: number;
}

/** Where the watch runs: known once the worker exists. */
export interface LostWorkerWatchTarget {
  client: Client;
  identity: string;
  namespace: string;
  taskQueue: string;
}

interface WorkerRow {
  worker_key: string;
  lock_key: number;
  identity: string;
  sticky_queue: string | null;
}

interface ActivityRow {
  task_token: Buffer;
  workflow_id: string;
  run_id: string | null;
}

const { EventType, TaskQueueKind } = temporal.api.enums.v1;

/**
 * The sticky queue of the worker `identity`, read from a conversation's
 * history: a workflow task scheduled on a sticky queue right after a task
 * that worker completed, or started by that worker. The last one found.
 */
export function stickyQueueIn(
  events: readonly temporal.api.history.v1.IHistoryEvent[],
  identity: string,
): string | undefined {
  let found: string | undefined;
  let completedByIt = false;
  let scheduledOn: string | undefined;
  for (const event of events) {
    if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) {
      completedByIt = event.workflowTaskCompletedEventAttributes?.identity === identity;
    } else if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED) {
      const queue = event.workflowTaskScheduledEventAttributes?.taskQueue;
      scheduledOn = queue?.kind === TaskQueueKind.TASK_QUEUE_KIND_STICKY ? (queue.name ?? undefined) : undefined;
      if (scheduledOn && completedByIt) found = scheduledOn;
    } else if (
      event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED &&
      scheduledOn &&
      event.workflowTaskStartedEventAttributes?.identity === identity
    ) {
      found = scheduledOn;
    }
  }
  return found;
}

/**
 * One worker's side of lost-worker takeover: its liveness lock, the
 * registration of its activity attempts (an activity interceptor), and the
 * watch over its peers.
 */
export class LostWorkerWatch {
  private target?: LostWorkerWatchTarget;
  private workerKey = randomUUID();
  private lockKey = randomInt(1, 2 ** 31 - 1);
  private session?: PgClient;
  /** When the session last reconnected after a loss (0: never lost). */
  private reconnectedAt = 0;
  private everConnected = false;
  private timer?: NodeJS.Timeout;
  private running: Promise<void> = Promise.resolve();
  /** Peers seen with a free lock: worker key → first seen free at. */
  private readonly freeSince = new Map<string, number>();
  private stickyQueue?: string;
  private stickyProbes = 0;
  private probing = false;
  private stopped = false;
  private readonly checkEveryMs: number;
  private readonly confirmMs: number;
  private readonly graceMs: number;

  constructor(
    private readonly pool: Pool,
    private readonly tables: AgentTables,
    /** Whether an activity type is one of the conversation's (only those are recorded and failed over). */
    private readonly isConversationActivity: (activityType: string) => boolean,
    options: LostWorkerOptions = {},
  ) {
    this.checkEveryMs = options.checkEveryMs ?? 100;
    this.confirmMs = options.confirmMs ?? 300;
    this.graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
  }

  /**
   * The activity interceptor recording each attempt of a conversation
   * activity (an ordinary one: a local activity lives in its workflow task)
   * that runs longer than {@link RECORD_AFTER_MS}, until it ends. The writes
   * are not awaited: a worker that dies before its row lands is caught by the
   * heartbeat timeout as before.
   */
  interceptor(): ActivityInterceptorsFactory {
    return (ctx: Context) => ({
      inbound: {
        execute: async (input, next) => {
          const ended = this.record(ctx);
          try {
            return await next(input);
          } finally {
            ended?.();
          }
        },
      },
    });
  }

  /** Registers this worker and starts watching its peers. */
  async start(target: LostWorkerWatchTarget): Promise<void> {
    this.target = target;
    await this.connect().catch((err: Error) =>
      logger.warn({ err: err.message }, 'lost-worker takeover: could not open the liveness session; trying again'),
    );
    let busy = false;
    this.timer = setInterval(() => {
      if (busy) return; // a check (or a takeover) still runs: no backlog of checks behind it
      busy = true;
      this.running = this.tick()
        .catch((err: Error) => logger.debug({ err: err.message }, 'lost-worker takeover: a check failed'))
        .finally(() => (busy = false));
    }, this.checkEveryMs);
    this.timer.unref();
  }

  /** Stops watching, deletes this worker's rows and releases its lock (a worker shutting down is not lost). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
    const session = this.session;
    this.session = undefined;
    if (!session) return;
    try {
      await this.deleteWorker(session, this.workerKey);
    } catch (err) {
      logger.debug({ err: (err as Error).message }, 'lost-worker takeover: could not delete the rows of this worker');
    } finally {
      await session.end().catch(() => undefined);
    }
  }

  /** Records an attempt once it has run {@link RECORD_AFTER_MS}; returns what to call when it ends. */
  private record(ctx: Context): (() => void) | undefined {
    const { info } = ctx;
    const execution = info.workflowExecution;
    if (!this.target || this.stopped || info.isLocal || !execution || !this.isConversationActivity(info.activityType))
      return undefined;
    const token = Buffer.from(info.taskToken);
    const failed = (what: string) => (err: Error) => {
      logger.debug(
        { err: err.message, workflowId: execution.workflowId },
        `lost-worker takeover: could not ${what} an activity attempt`,
      );
      return false;
    };
    let inserted: Promise<boolean> | undefined;
    const timer = setTimeout(() => {
      inserted = this.pool
        .query(
          prepared(
            `INSERT INTO ${this.tables.workerActivities} (task_token, worker_key, workflow_id, run_id, activity_type, attempt) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (task_token) DO NOTHING`,
            [token, this.workerKey, execution.workflowId, execution.runId, info.activityType, info.attempt],
          ),
        )
        .then(() => true, failed('record'));
    }, RECORD_AFTER_MS);
    return () => {
      clearTimeout(timer);
      // Deleted after its insert (the two may take different connections of the pool).
      void inserted?.then(
        (landed) =>
          landed &&
          this.pool
            .query(prepared(`DELETE FROM ${this.tables.workerActivities} WHERE task_token = $1`, [token]))
            .then(() => true, failed('delete')),
      );
      this.probeStickyQueue(execution);
    };
  }

  /** Opens the liveness session, locks this worker's key (a new key when a peer holds it) and registers. */
  private async connect(): Promise<void> {
    const target = this.target!;
    // A query that gets no answer in 5 s ends the session (a silent network cut must not stall the checks).
    const session = new PgClient({
      ...this.pool.options,
      application_name: LIVENESS_APPLICATION_NAME,
      query_timeout: 5_000,
    });
    session.on('error', (err) => {
      logger.debug({ err: err.message }, 'lost-worker takeover: the liveness session failed');
      this.drop(session);
    });
    await session.connect();
    try {
      if (!(await tryLock(session, this.lockKey))) {
        // A peer claimed this key while the session was down (and is failing its attempts over), or another worker drew
        // it:
        // this worker goes on under a new key.
        this.workerKey = randomUUID();
        this.lockKey = randomInt(1, 2 ** 31 - 1);
        if (!(await tryLock(session, this.lockKey))) throw new Error('the new liveness lock key is taken too');
      }
      await session.query(
        `INSERT INTO ${this.tables.workers} (worker_key, lock_key, identity, namespace, task_queue, sticky_queue) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (worker_key) DO UPDATE SET lock_key = EXCLUDED.lock_key, sticky_queue = COALESCE(${this.tables.workers}.sticky_queue, EXCLUDED.sticky_queue)`,
        [this.workerKey, this.lockKey, target.identity, target.namespace, target.taskQueue, this.stickyQueue ?? null],
      );
    } catch (err) {
      await session.end().catch(() => undefined);
      throw err;
    }
    this.session = session;
    if (this.everConnected) this.reconnectedAt = Date.now();
    this.everConnected = true;
    this.freeSince.clear();
  }

  /** Deletes a worker's row and its attempts' rows. */
  private async deleteWorker(session: PgClient, workerKey: string): Promise<void> {
    await session.query(`DELETE FROM ${this.tables.workerActivities} WHERE worker_key = $1`, [workerKey]);
    await session.query(`DELETE FROM ${this.tables.workers} WHERE worker_key = $1`, [workerKey]);
  }

  /** Ends a failed session; the next check opens a new one. */
  private drop(session: PgClient): void {
    if (this.session === session) this.session = undefined;
    void session.end().catch(() => undefined);
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const session = this.session;
    if (!session) {
      await this.connect();
      return;
    }
    if (Date.now() - this.reconnectedAt < this.graceMs) return;
    try {
      await this.checkPeers(session);
    } catch (err) {
      this.drop(session);
      throw err;
    }
  }

  /** Takes over the peers whose lock has been free for `confirmMs`. */
  private async checkPeers(session: PgClient): Promise<void> {
    const { rows } = await session.query<WorkerRow>(
      `SELECT w.worker_key, w.lock_key, w.identity, w.sticky_queue FROM ${this.tables.workers} w
        WHERE w.namespace = $1 AND w.worker_key <> $2
          AND now() - pg_postmaster_start_time() > make_interval(secs => $4::double precision / 1000)
          AND NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted
                           AND l.classid = $3::bigint::oid AND l.objid = w.lock_key::bigint::oid AND l.objsubid = 2)`,
      [this.target!.namespace, this.workerKey, LOCK_CLASS, this.graceMs],
    );
    const now = Date.now();
    const free = new Set(rows.map((r) => r.worker_key));
    for (const key of this.freeSince.keys()) if (!free.has(key)) this.freeSince.delete(key);
    for (const row of rows) {
      const since = this.freeSince.get(row.worker_key) ?? now;
      this.freeSince.set(row.worker_key, since);
      if (now - since < this.confirmMs) continue;
      if (!(await tryLock(session, row.lock_key))) continue; // it came back, or another peer is taking it over
      try {
        await this.takeOver(session, row);
        this.freeSince.delete(row.worker_key);
      } finally {
        await session.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_CLASS, row.lock_key]);
      }
    }
  }

  /** Fails a lost worker's attempts so Temporal retries them now, releases its sticky queue, deletes its rows. */
  private async takeOver(session: PgClient, lost: WorkerRow): Promise<void> {
    const { client, identity, namespace } = this.target!;
    const { rows } = await session.query<ActivityRow>(
      `SELECT task_token, workflow_id, run_id FROM ${this.tables.workerActivities} WHERE worker_key = $1`,
      [lost.worker_key],
    );
    // Every attempt at once: each retry starts as soon as its failure lands.
    const outcomes = await Promise.all(
      rows.map((row) =>
        client.activity
          .fail(
            new Uint8Array(row.task_token),
            ApplicationFailure.create({
              type: WORKER_LOST_ERROR_TYPE,
              message: `the worker running this attempt (${lost.identity}) stopped without shutting down: its database session ended; ${identity} failed the attempt so that it is retried now`,
              nextRetryDelay: 1,
            }),
          )
          .then(
            () => true,
            (err: Error) => {
              // Already completed, timed out or retried: nothing to take over.
              logger.debug(
                { err: err.message, workflowId: row.workflow_id },
                'lost-worker takeover: the attempt had already ended',
              );
              return false;
            },
          ),
      ),
    );
    const failed = outcomes.filter(Boolean).length;
    // A worker killed before it learned its sticky queue: read it from the histories of the conversations it was
    // working on.
    for (const row of rows.slice(0, 5)) {
      if (lost.sticky_queue) break;
      const history = await client.workflow
        .getHandle(row.workflow_id, row.run_id ?? undefined)
        .fetchHistory()
        .catch(() => undefined);
      lost.sticky_queue = (history && stickyQueueIn(history.events ?? [], lost.identity)) ?? null;
    }
    await Promise.all([
      // Temporal stops holding tasks for the sticky queue: every conversation the lost worker cached moves on without
      // the sticky timeout.
      lost.sticky_queue
        ? client.workflowService
            .shutdownWorker({
              namespace,
              stickyTaskQueue: lost.sticky_queue,
              identity,
              reason: `lost worker ${lost.identity} (taken over by ${identity})`,
            })
            .catch((err: Error) =>
              logger.debug({ err: err.message }, 'lost-worker takeover: could not release the sticky queue'),
            )
        : undefined,
      // The failed-over conversations' next workflow tasks go to any worker (also when the sticky queue is unknown).
      ...rows.map((row) =>
        client.workflowService
          .resetStickyTaskQueue({
            namespace,
            execution: { workflowId: row.workflow_id, runId: row.run_id ?? undefined },
          })
          .catch(() => undefined),
      ),
    ]);
    await this.deleteWorker(session, lost.worker_key);
    logger.info(
      {
        lostWorker: lost.identity,
        attempts: rows.length,
        failedOver: failed,
        stickyQueueReleased: Boolean(lost.sticky_queue),
      },
      'a worker stopped without shutting down; its activity attempts are retried now',
    );
  }

  /**
   * Learns this worker's sticky queue (the SDK does not tell it) from the
   * history of a conversation it ran ({@link stickyQueueIn}). A few tries at most.
   */
  private probeStickyQueue(execution: { workflowId: string; runId?: string }): void {
    if (this.stickyQueue || this.probing || this.stickyProbes >= 50 || !this.target || this.stopped) return;
    this.probing = true;
    this.stickyProbes++;
    const { client, identity } = this.target;
    const probe = async (): Promise<void> => {
      // The next workflow task is scheduled when this attempt's completion reaches Temporal.
      await sleep(300, undefined, { ref: false });
      const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
      this.stickyQueue = stickyQueueIn(history.events ?? [], identity);
      if (this.stickyQueue && this.session) {
        await this.session.query(`UPDATE ${this.tables.workers} SET sticky_queue = $2 WHERE worker_key = $1`, [
          this.workerKey,
          this.stickyQueue,
        ]);
      }
    };
    void probe()
      .catch((err: Error) =>
        logger.debug({ err: err.message }, 'lost-worker takeover: could not learn the sticky queue'),
      )
      .finally(() => (this.probing = false));
  }
}

/** Takes the liveness lock `key` on `session` if nobody holds it. */
async function tryLock(session: PgClient, key: number): Promise<boolean> {
  return (await session.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [LOCK_CLASS, key])).rows[0]
    .ok;
}
