/**
 * The dispatcher: delivers the outbox's notifications (`src/db/outbox.ts`)
 * to webhook endpoints, in the worker process beside its worker (the plugin
 * starts one when it has `notifications`).
 *
 * - Woken by PostgreSQL (LISTEN on the channel `enqueue_notification`
 *   notifies when its transaction commits), and looking every `pollEveryMs`
 *   besides, for retries and for a wake-up lost while its session was down.
 * - Per endpoint, it claims due events (`FOR UPDATE SKIP LOCKED`, each the
 *   oldest undelivered event of its call), posts each signed
 *   (`src/common/webhook-signature.ts`) and records the outcome: a 2xx answer
 *   delivers it; anything else (another status, no answer within
 *   `timeoutMs`, no connection) schedules the next attempt, 1 s doubling up
 *   to `maxBackoffMs` with jitter, forever; after `failingAfterAttempts` the
 *   event counts as failing (listed, counted, logged).
 * - Several workers may run one each: claims skip what another holds, and a
 *   call's next event waits until the one before it is delivered.
 * - A database restart or a cut connection stops nothing for good: each
 *   round's failure is logged once, and the next round tries again.
 */
import { Client as PgClient, type Pool } from 'pg';
import type { MetricMeter } from '@temporalio/common';
import { AGENT_METRICS } from '../contract/metrics';
import { logger } from '../common/logger';
import { signWebhook } from '../common/webhook-signature';
import {
  claimDeliveries,
  countUndelivered,
  NOTIFICATION_CHANNEL,
  pruneNotifications,
  recordDelivery,
  registerEndpoints,
  releaseClaim,
  type ClaimedDelivery,
  type DeliveryOutcome,
} from '../db/outbox';
import type { AgentTables } from '../db/schema';
import {
  resolveNotificationOptions,
  type NotificationOptions,
  type ResolvedNotificationOptions,
  type WebhookEndpoint,
} from './options';

/** application_name of the LISTEN session (visible in pg_stat_activity). */
const LISTEN_APPLICATION_NAME = 'durable-agent-worker notifications';
/** How often endpoints are registered again (their `last_seen_at`), ms. */
const REGISTER_EVERY_MS = 60_000;
/** How often the gauges are counted, ms. */
const COUNT_EVERY_MS = 15_000;
/** How often delivered events past their keep are deleted, ms. */
const PRUNE_EVERY_MS = 3_600_000;
/** Attempts wait 1 s, then twice as long each time (up to the maximum), times a jitter of 0.5 to 1. */
const FIRST_BACKOFF_MS = 1_000;
/** The most of a failed answer's body kept in `last_error`, characters. */
const ERROR_BODY_CHARS = 300;

/** Posts the outbox's notifications to the worker's webhook endpoints; see the module's comment. */
export class NotificationDispatcher {
  private readonly options: ResolvedNotificationOptions;
  private readonly stopping = new AbortController();
  private readonly loops: Promise<void>[] = [];
  private readonly wakers = new Map<string, Waker>();
  private listener?: PgClient;
  private connecting = false;
  private housekeeping?: NodeJS.Timeout;
  private housekeepingRun: Promise<void> = Promise.resolve();
  private registeredAt = 0;
  private countedAt = 0;
  private prunedAt = 0;
  /** Whether the last round of an endpoint failed on the database (logged once until one succeeds). */
  private readonly databaseFailing = new Set<string>();
  /** Where the agent's metrics go (the worker's runtime's meter); none: not recorded. */
  private meter?: MetricMeter;

  constructor(
    private readonly pool: Pool,
    private readonly tables: AgentTables,
    options: NotificationOptions,
  ) {
    this.options = resolveNotificationOptions(options);
  }

  /**
   * Registers the endpoints: events written from now on get a delivery for each. Call it before the worker polls (the
   * plugin does, while `Worker.create` runs), so the first events of a new endpoint are not missed; a database that
   * does not answer now is logged, and registration is tried again once the dispatcher runs.
   */
  async register(): Promise<void> {
    if (this.options.endpoints.length === 0) return;
    await this.registerNow().catch((err: Error) =>
      logger.warn(
        { err: err.message },
        'notifications: could not register the webhook endpoints in PostgreSQL; trying again. Events written before they are registered are not delivered to them',
      ),
    );
  }

  /**
   * Starts one delivery loop per endpoint, and opens the LISTEN session in the background (until it is open, the
   * loops poll). `meter` records the delivery metrics (the worker's runtime's); none: not recorded.
   */
  start(meter?: MetricMeter): void {
    if (this.options.endpoints.length === 0 || this.loops.length > 0) return;
    this.meter = meter;
    void this.connect();
    for (const endpoint of this.options.endpoints) {
      const waker = new Waker();
      this.wakers.set(endpoint.name, waker);
      this.loops.push(this.run(endpoint, waker));
    }
    this.housekeeping = setInterval(() => {
      this.housekeepingRun = this.housekeepingRun.then(() => this.keepHouse());
    }, this.options.pollEveryMs);
    this.housekeeping.unref();
  }

  /** Stops: attempts under way are abandoned (their events are due again at once, for the next worker). */
  async stop(): Promise<void> {
    this.stopping.abort();
    clearInterval(this.housekeeping);
    for (const waker of this.wakers.values()) waker.wake();
    await Promise.all(this.loops);
    await this.housekeepingRun;
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => undefined);
  }

  /** One endpoint's loop: claim what is due, deliver it, record; sleep when nothing was due, until woken or the poll. */
  private async run(endpoint: WebhookEndpoint, waker: Waker): Promise<void> {
    while (!this.stopping.signal.aborted) {
      let claimed = 0;
      try {
        claimed = await this.round(endpoint);
        if (this.databaseFailing.delete(endpoint.name))
          logger.info({ endpoint: endpoint.name }, 'notifications: PostgreSQL answers again; delivering');
      } catch (err) {
        if (!this.databaseFailing.has(endpoint.name))
          logger.warn(
            { endpoint: endpoint.name, err: (err as Error).message },
            'notifications: could not read or record deliveries in PostgreSQL; trying again (nothing is lost: the events stay in the outbox)',
          );
        this.databaseFailing.add(endpoint.name);
      }
      if (claimed === 0) await waker.sleep(this.options.pollEveryMs);
    }
  }

  /** Claims this endpoint's due events, delivers them at once, records each outcome. Returns how many it claimed. */
  private async round(endpoint: WebhookEndpoint): Promise<number> {
    const { concurrency, timeoutMs } = this.options;
    // The lease outlasts an attempt: one that ends by its timeout is recorded before another worker may claim it.
    const claims = await claimDeliveries(this.pool, this.tables, endpoint.name, concurrency, timeoutMs + 5_000);
    // Every attempt ends (and is recorded, or fails to be) before the next round: a stop waits for them all.
    const ended = await Promise.allSettled(claims.map((claim) => this.deliverAndRecord(endpoint, claim)));
    const failed = ended.find((e) => e.status === 'rejected');
    if (failed) throw failed.reason;
    return claims.length;
  }

  private async deliverAndRecord(endpoint: WebhookEndpoint, claim: ClaimedDelivery): Promise<void> {
    const outcome = await this.post(endpoint, claim);
    if (outcome === 'stopped') {
      await releaseClaim(this.pool, this.tables, endpoint.name, claim).catch(() => undefined);
      return;
    }
    this.meter
      ?.createCounter(
        AGENT_METRICS.webhookDeliveries.name,
        AGENT_METRICS.webhookDeliveries.unit,
        AGENT_METRICS.webhookDeliveries.description,
      )
      .add(1, { endpoint: endpoint.name, outcome: outcome.delivered ? 'delivered' : 'failed' });
    const fields = {
      endpoint: endpoint.name,
      eventId: claim.eventId,
      type: claim.payload.type,
      attempts: claim.attempts,
    };
    if (outcome.delivered) {
      if (claim.attempts >= this.options.failingAfterAttempts)
        logger.info(fields, 'notifications: delivered an event that was failing');
    } else if (claim.attempts === this.options.failingAfterAttempts) {
      logger.warn(
        { ...fields, error: outcome.error },
        `notifications: an event is failing (${claim.attempts} attempts); it is still tried, at most every ${this.options.maxBackoffMs} ms`,
      );
    } else {
      logger.debug({ ...fields, error: outcome.error }, 'notifications: an attempt failed; trying again');
    }
    await recordDelivery(this.pool, this.tables, endpoint.name, claim, outcome);
    // Delivered: the call's next event may be due already.
    if (outcome.delivered) this.wakers.get(endpoint.name)?.wake();
  }

  /** One attempt: POST the event, signed now. 'stopped' when the dispatcher stops while it runs. */
  private async post(endpoint: WebhookEndpoint, claim: ClaimedDelivery): Promise<DeliveryOutcome | 'stopped'> {
    const { timeoutMs } = this.options;
    const body = JSON.stringify(claim.payload);
    const failed = (error: string, status?: number): DeliveryOutcome => ({
      delivered: false,
      error,
      ...(status !== undefined ? { status } : {}),
      retryInMs: this.backoff(claim.attempts),
      failing: claim.attempts >= this.options.failingAfterAttempts,
    });
    try {
      const response = await fetch(endpoint.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'durable-agent-worker',
          ...signWebhook(endpoint, claim.eventId, body),
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), this.stopping.signal]),
      });
      const text = await firstCharacters(response, ERROR_BODY_CHARS);
      if (response.status >= 200 && response.status < 300) return { delivered: true, status: response.status };
      const where =
        response.status >= 300 && response.status < 400 ? ` (a redirect${locationOf(response)}, not followed)` : '';
      return failed(`answered ${response.status}${where}${text ? `: ${text}` : ''}`, response.status);
    } catch (err) {
      if (this.stopping.signal.aborted) return 'stopped';
      const e = err as Error & { cause?: { code?: string; message?: string } };
      if (e.name === 'TimeoutError') return failed(`no answer within ${timeoutMs} ms`);
      return failed(`could not post: ${e.cause?.code ?? e.cause?.message ?? e.message}`);
    }
  }

  /** How long to wait before the attempt after `attempts` failed ones. */
  private backoff(attempts: number): number {
    const full = Math.min(this.options.maxBackoffMs, FIRST_BACKOFF_MS * 2 ** Math.min(attempts - 1, 30));
    return full * (0.5 + Math.random() / 2);
  }

  /** Registers the endpoints, saying a worker serves them now. */
  private async registerNow(): Promise<void> {
    await registerEndpoints(
      this.pool,
      this.tables,
      this.options.endpoints.map((e) => ({ name: e.name, ...(e.events ? { events: e.events } : {}) })),
    );
    this.registeredAt = Date.now();
  }

  /** The LISTEN session; a failure to open it is logged, and the next housekeeping tries again. */
  private async connect(): Promise<void> {
    if (this.listener || this.connecting || this.stopping.signal.aborted) return;
    this.connecting = true;
    const session = new PgClient({ ...this.pool.options, application_name: LISTEN_APPLICATION_NAME });
    const lost = (): void => {
      if (this.listener === session) this.listener = undefined;
    };
    session.on('error', lost);
    session.on('end', lost);
    session.on('notification', (message) => {
      if (message.channel === NOTIFICATION_CHANNEL && message.payload === this.tables.schema) this.wakeAll();
    });
    try {
      await session.connect();
      await session.query(`LISTEN ${NOTIFICATION_CHANNEL}`);
      if (this.stopping.signal.aborted) {
        await session.end().catch(() => undefined);
        return;
      }
      this.listener = session;
      this.wakeAll(); // what was notified while no session listened is due now
    } catch (err) {
      logger.debug(
        { err: (err as Error).message },
        'notifications: could not open the LISTEN session; polling meanwhile',
      );
      await session.end().catch(() => undefined);
    } finally {
      this.connecting = false;
    }
  }

  private wakeAll(): void {
    for (const waker of this.wakers.values()) waker.wake();
  }

  /** Reopens a lost LISTEN session, registers the endpoints again, counts the gauges, prunes old events. */
  private async keepHouse(): Promise<void> {
    if (this.stopping.signal.aborted) return;
    const now = Date.now();
    try {
      await this.connect();
      if (now - this.registeredAt >= REGISTER_EVERY_MS) await this.registerNow();
      if (this.meter && now - this.countedAt >= COUNT_EVERY_MS) await this.count(now);
      if (now - this.prunedAt >= PRUNE_EVERY_MS) {
        this.prunedAt = now;
        const pruned = await pruneNotifications(this.pool, this.tables, this.options.keepDeliveredDays * 86_400_000);
        if (pruned > 0) logger.debug({ pruned }, 'notifications: deleted delivered events past their keep');
      }
    } catch (err) {
      logger.debug({ err: (err as Error).message }, 'notifications: housekeeping failed; trying again');
    }
  }

  /** Sets the gauges of the worker's endpoints. */
  private async count(now: number): Promise<void> {
    const counts = await countUndelivered(this.pool, this.tables);
    this.countedAt = now;
    const undelivered = AGENT_METRICS.webhookUndelivered;
    const oldest = AGENT_METRICS.webhookOldestUndelivered;
    const undeliveredGauge = this.meter!.createGauge(
      undelivered.name,
      'int',
      undelivered.unit,
      undelivered.description,
    );
    const oldestGauge = this.meter!.createGauge(oldest.name, 'int', oldest.unit, oldest.description);
    for (const { name } of this.options.endpoints) {
      const found = counts.find((c) => c.endpoint === name);
      undeliveredGauge.set((found?.pending ?? 0) - (found?.failing ?? 0), { endpoint: name, state: 'pending' });
      undeliveredGauge.set(found?.failing ?? 0, { endpoint: name, state: 'failing' });
      oldestGauge.set(found?.oldestAt ? Math.max(0, now - found.oldestAt.getTime()) : 0, { endpoint: name });
    }
  }
}

/** A sleep that a wake ends early; a wake while awake makes the next sleep return at once. */
class Waker {
  private woken = false;
  private resolve?: () => void;

  sleep(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.resolve = undefined;
        this.woken = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.resolve = done;
    });
  }

  wake(): void {
    if (this.resolve) this.resolve();
    else this.woken = true;
  }
}

/** Up to `chars` characters of a response's body (the rest is not read), on one line. */
async function firstCharacters(response: Response, chars: number): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (text.length < chars) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return text.replace(/\s+/g, ' ').trim().slice(0, chars);
}

/** ` to <Location>` of a redirect, when it says where. */
function locationOf(response: Response): string {
  const location = response.headers.get('location');
  return location ? ` to ${location.slice(0, 200)}` : '';
}
