/**
 * A bounded chaos run against real parts, all on loopback: its own Temporal
 * server (the dev server with a SQLite file, so a restart keeps its state,
 * or with `cluster` the server's own binaries on PostgreSQL with 4 shards
 * and mutual TLS, test/support/temporal-cluster.ts), its own embedded
 * PostgreSQL, the scripted model server, and two real worker processes.
 * Conversations are driven through the project's client while worker
 * processes are SIGKILLed, the Temporal server is restarted, the model
 * answers 500s and slow replies, a tool fails, and the driver cancels,
 * interrupts, rejects, decides twice and lets approvals time out. The run
 * ends by checking every conversation and returns one summary.
 */
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AgentClient } from '../../src/client/client';
import { freePort } from '../../src/common/free-port';
import { migrate } from '../../src/db/migrations';
import { createPool } from '../../src/db/pool';
import { setupBackofficeDemo } from '../../src/demo/data';
import { startModelServer, type ModelServer } from '../../src/testing';
import { findTemporalCli, startDevServer, type DevServer } from '../../src/app/temporal-server';
import { startApiServer } from '../../src/api/server';
import type { ApiTokenConfig } from '../../src/api/tokens';
import { restartPostgres, startLocalCluster, startLocalServers, stopPostgres } from '../support/local-servers';
import { connectionOptions, type TemporalConnectionSettings } from '../../src/app/temporal-connection';
import type { EmbeddedPostgresServer } from '../../src/db/embedded-postgres';
import type { ConversationInput } from '../../src/contract';
import type { ModelApi } from '../../src/contract/model-api';
import { runFinalChecks } from './checks';
import { playConversation, type DriverContext } from './driver';
import { ChaosModel, CHAOS_ORDERS } from './model-script';
import { apiOf, checkResponsesRequests } from './model-request';
import { DEFAULT_RESPONSES_SHARE, planConversations } from './plan';
import { Rng } from './random';
import { explainRecoveries, HELD_UP_BY_FAULT, quantile, RecoveryTracker, type RecoveryMeasurement } from './recovery';
import type { ChaosOptions } from './options';
import { RunLog } from './run-log';
import { formatSummary, type ChaosSummary, type ModelApiUse, type Percentiles, type RecoveryStats } from './summary';
import { WorkerPool } from './worker-pool';
import { scanWorkerLogs } from './worker-logs';

/** How long a control waits for an earlier fault's conversations to move, and for its own. */
const CONTROL_WAIT_MS = 30_000;

export const RECOVERY_DEFINITION =
  'fault → every conversation that had a turn in flight at that moment stored a new message or finished its turn (sampled every 250 ms; conversations that never did are listed apart)';

/** Runs the chaos run and returns its summary; everything it started is stopped, also on failure. */
export async function runChaos(options: ChaosOptions = {}): Promise<ChaosSummary> {
  const o = {
    conversations: options.conversations ?? 50,
    kills: options.kills ?? 20,
    serverRestarts: options.serverRestarts ?? 1,
    databaseRestarts: options.databaseRestarts ?? 1,
    concurrency: options.concurrency ?? 8,
    maxMinutes: options.maxMinutes ?? 10,
    workers: options.workers ?? 2,
    lostWorkerTakeover: options.lostWorkerTakeover ?? true,
    controls: options.controls ?? true,
    cluster: options.cluster ?? false,
    responsesShare: options.responsesShare ?? DEFAULT_RESPONSES_SHARE,
  };
  const seed = options.seed ?? String(randomBytes(4).readUInt32BE());
  const runId = randomBytes(3).toString('hex');
  const approvalTimeoutMs = options.approvalTimeoutMs ?? 3_000;
  const heartbeatMs = options.heartbeatMs ?? 3_000;
  const [gapMin, gapMax] = options.faultGapMs ?? [1_000, 3_000];
  const [downMin, downMax] = options.databaseDownMs ?? [5_000, 20_000];
  const startedAt = Date.now();
  const hardStopAt = startedAt + o.maxMinutes * 60_000;
  const progress = options.log ?? (() => undefined);
  const log = (line: string): void => progress(`[chaos +${((Date.now() - startedAt) / 1000).toFixed(1)}s] ${line}`);

  const hardStop = new AbortController();
  setMaxListeners(1_000, hardStop.signal); // every sleeping conversation listens to it
  const hardTimer = setTimeout(() => {
    log(`hard stop: ${o.maxMinutes} minute(s) reached`);
    hardStop.abort();
  }, hardStopAt - startedAt);
  // The final checks get a little longer than the driver, so a hard stop still ends with a summary.
  const checksStop = new AbortController();
  setMaxListeners(1_000, checksStop.signal);
  const checksTimer = setTimeout(() => checksStop.abort(), hardStopAt - startedAt + 30_000);

  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-chaos-'));
  const cleanups: { name: string; run: () => Promise<void> | void }[] = [];
  const servers: { temporal?: RunTemporal; postgres?: EmbeddedPostgresServer } = {};
  try {
    log(`seed ${seed}, run ${runId}, scratch ${scratch}`);

    // Servers: Temporal (restartable in place: the dev server on a fixed port and SQLite file, or the
    // cluster on its ports and PostgreSQL databases) and PostgreSQL.
    const { temporal, postgres } = o.cluster
      ? await startClusterServers(runId, scratch)
      : await startDevServers(runId, scratch, log);
    servers.temporal = temporal;
    servers.postgres = postgres;
    // Both are restarted in place during the run: stop whichever one runs at the end (a stopped one's cluster is still
    // removed).
    cleanups.push({ name: `Temporal ${temporal.kind}`, run: () => servers.temporal?.stop() });
    cleanups.push({ name: 'PostgreSQL', run: () => stopPostgres(servers.postgres ?? postgres) });
    log(`Temporal ${temporal.kind} ${temporal.address}, PostgreSQL port ${postgres.port}`);

    const pool = createPool(postgres.databaseUrl, 4);
    cleanups.push({ name: 'PostgreSQL pool', run: () => pool.end() });
    await migrate(pool);
    // The chaos tools include the demo's refunds, on the demo's own tables (never created by migrate).
    await setupBackofficeDemo(pool);
    await pool.query(`
      CREATE TABLE chaos_faults (kind text NOT NULL, idempotency_key text NOT NULL, attempt integer NOT NULL, detail text, at timestamptz NOT NULL DEFAULT now());
      CREATE TABLE chaos_effects (idempotency_key text NOT NULL, sku text NOT NULL, at timestamptz NOT NULL DEFAULT now());
      INSERT INTO customers (id, name, email) VALUES ('cus_chaos', 'Chaos Monkey', 'chaos@example.com');
      INSERT INTO orders (id, customer_id, description, total_cents) VALUES
        ${CHAOS_ORDERS.map((id) => `('${id}', 'cus_chaos', 'Chaos run order', 2000000000)`).join(',\n        ')};
    `);

    const plans = planConversations(runId, seed, o.conversations, o.responsesShare);
    const runLog = new RunLog(plans);
    const chaosModel = new ChaosModel(seed, plans);
    const model: ModelServer = await startModelServer({ responder: chaosModel.responder });
    cleanups.push({ name: 'model server', run: () => model.close() });

    const taskQueue = `chaos-${runId}`;
    // Decisions are signed by the HTTP API; the workers hold its key and refuse unsigned ones.
    const decisionKey = { id: 'chaos', secret: randomBytes(32).toString('hex') };
    const workers = new WorkerPool({
      env: {
        ...temporal.clientEnv,
        TEMPORAL_TASK_QUEUE: taskQueue,
        DATABASE_URL: postgres.databaseUrl,
        OPENAI_API_KEY: 'chaos-key',
        OPENAI_BASE_URL: model.url,
        OPENAI_MODEL: 'scripted-model',
        AGENT_TOOLS_MODULE: path.join(__dirname, 'chaos-tools.ts'),
        // Conversations that name no agent are one unnamed agent; the others start with the module's `desk`.
        AGENT_DEFAULT_AGENT: 'none',
        AGENT_DECISION_KEYS: `${decisionKey.id}:${decisionKey.secret}`,
        AGENT_REQUIRE_SIGNED_DECISIONS: 'true',
        CHAOS_SEED: seed,
        AGENT_LOST_WORKER_TAKEOVER: String(o.lostWorkerTakeover),
      },
      size: o.workers,
      dir: scratch,
      log,
    });
    cleanups.push({ name: 'worker processes', run: () => workers.stop() });
    await workers.start();

    const client = await AgentClient.connect({
      temporalAddress: temporal.address,
      ...connectionOptions(temporal.connection),
      databaseUrl: postgres.databaseUrl,
      taskQueue,
    });
    cleanups.push({ name: 'client', run: () => client.close() });
    const token = (subject: string): ApiTokenConfig => ({
      subject,
      roles: ['approver'],
      token: randomBytes(24).toString('hex'),
    });
    const approvers = [token('alice@chaos.example'), token('bob@chaos.example'), token('carol@chaos.example')];
    const api = await startApiServer({
      client,
      tokens: approvers,
      decisions: { signingKey: decisionKey },
      inbox: false,
    });
    cleanups.push({ name: 'HTTP API', run: () => api.stop() });
    const temporalCli = findTemporalCli();
    if (!temporalCli) throw new Error('The chaos run needs the Temporal CLI: run bash scripts/ensure-temporal-cli.sh.');

    const conversationPrefix = `chaos-${runId}-`;
    const tracker = new RecoveryTracker(pool, runLog, conversationPrefix);
    tracker.start();
    cleanups.push({ name: 'recovery sampler', run: () => tracker.stop() });

    // Faults on a schedule: kills with the server and database restarts spread between them.
    const events: ('kill' | 'restart' | 'db_restart')[] = Array.from(
      { length: o.kills + o.serverRestarts + o.databaseRestarts },
      () => 'kill' as const,
    );
    const spread = (kind: 'restart' | 'db_restart', n: number, offset: number) => {
      for (let r = 0; r < n; r++) {
        let at = Math.floor(((r + offset) * events.length) / (n + 1));
        while (events[at] !== 'kill') at = (at + 1) % events.length;
        events[at] = kind;
      }
    };
    spread('restart', o.serverRestarts, 1);
    spread('db_restart', o.databaseRestarts, 0.5);
    // A fault waits (a little) for a turn in flight to hit, unless only the last conversation is left, waiting for it.
    const turnToHit = (): Promise<void> =>
      until(() => runLog.inFlight().length > 0 || played >= o.conversations - 1, 10_000, stopFaults);
    const driverDone = new AbortController();
    const stopFaults = AbortSignal.any([driverDone.signal, hardStop.signal]);
    setMaxListeners(1_000, stopFaults);
    const faultRng = new Rng(seed, 'faults');
    let eventsDone = 0;
    let faultsOver = false;
    let played = 0;
    // A control: with every worker up and every earlier fault's conversations moved again, how long the turns in flight
    // take to move by their own work. Skipped when the faults are behind the conversations (a control takes seconds,
    // and
    // every requested fault must still fit in the run), and when an earlier fault still holds a conversation up after
    // CONTROL_WAIT_MS.
    const control = async (): Promise<void> => {
      if (eventsDone / events.length < played / o.conversations) return;
      if (!(await tracker.settled(CONTROL_WAIT_MS, stopFaults))) return;
      await turnToHit();
      if (stopFaults.aborted || runLog.inFlight().length === 0) return;
      const measurement = await tracker.begin('control', Date.now());
      if (!(await tracker.settled(CONTROL_WAIT_MS, stopFaults))) tracker.cutShort(measurement);
    };
    const faultLoop = (async () => {
      try {
        for (const event of events) {
          if (event === 'kill') {
            // Mostly with every worker up (a replacement gets some work before the next kill), at times with one still
            // starting.
            await workers.waitFor(() => workers.ready().length >= o.workers, 8_000, stopFaults);
            if (o.controls) await control();
            await sleep(faultRng.int(gapMin, gapMax), undefined, { signal: stopFaults });
            await workers.waitFor(() => workers.ready().length > 0, 90_000, stopFaults);
            await turnToHit();
            const ready = workers.ready();
            if (stopFaults.aborted || ready.length === 0) break;
            const at = workers.kill(faultRng.pick(ready));
            runLog.faults.worker_kill++;
            await tracker.begin('worker_kill', at);
          } else if (event === 'restart') {
            await sleep(faultRng.int(gapMin, gapMax), undefined, { signal: stopFaults });
            await turnToHit();
            const at = Date.now();
            await tracker.begin('server_restart', at);
            runLog.faults.server_restart++;
            log(`Temporal ${temporal.kind}: stopping it`);
            try {
              await servers.temporal!.restart(faultRng.int(500, 2_000));
            } catch (err) {
              log(`the Temporal ${temporal.kind} did not start again: ${(err as Error).message}; stopping the run`);
              hardStop.abort();
              throw err;
            }
            log(`Temporal ${temporal.kind} running again after ${Date.now() - at} ms`);
          } else {
            await sleep(faultRng.int(gapMin, gapMax), undefined, { signal: stopFaults });
            await turnToHit();
            const at = Date.now();
            await tracker.begin('database_restart', at);
            const stopped = servers.postgres!;
            await stopped.stop();
            servers.postgres = undefined;
            runLog.faults.database_restart++;
            const downMs = faultRng.int(downMin, downMax);
            log(`PostgreSQL stopped for ${downMs} ms`);
            await sleep(downMs);
            try {
              servers.postgres = await restartPostgres(stopped, 'chaos');
            } catch (err) {
              servers.postgres = stopped; // so its cluster is still removed
              log(`PostgreSQL did not start again: ${(err as Error).message}; stopping the run`);
              hardStop.abort();
              throw err;
            }
            log(`PostgreSQL running again after ${Date.now() - at} ms`);
          }
          eventsDone++;
        }
      } catch (err) {
        if (!stopFaults.aborted) log(`fault loop ended: ${(err as Error).message}`);
      } finally {
        faultsOver = true;
      }
    })();

    // Conversation j starts once its share of the faults happened, so the faults spread over the whole run.
    // Faults need turns to hit, so while fewer than a quarter of the concurrency has a turn in flight, the
    // next conversation starts anyway, except the last one: it waits for every fault, so all happen.
    const minInFlight = Math.max(1, Math.ceil(o.concurrency / 4));
    const gate = async (index: number): Promise<void> => {
      const due = Math.floor(((index + 1) * events.length) / o.conversations);
      const last = index === o.conversations - 1;
      const deadline = Date.now() + 180_000;
      while (!faultsOver && !hardStop.signal.aborted && Date.now() < deadline) {
        if (eventsDone >= due || (!last && runLog.inFlight().length < minInFlight)) return;
        await sleep(200);
      }
    };
    const input: ConversationInput = {
      approvalTimeoutMs,
      timeouts: { heartbeatMs },
      ...(options.continueAsNewAfterEvents ? { continueAsNewAfterEvents: options.continueAsNewAfterEvents } : {}),
    };
    const driver: DriverContext = {
      client,
      runLog,
      seed,
      input,
      decisions: {
        apiUrl: api.url,
        approverTokens: approvers.slice(0, 2).map((a) => a.token),
        cliToken: approvers[2].token,
        key: decisionKey,
        temporalEnv: temporal.clientEnv,
        temporalCli,
      },
      turnTimeoutMs: options.turnTimeoutMs ?? 150_000,
      pollMs: 250,
      signal: hardStop.signal,
      log,
    };
    let nextIndex = 0;
    await Promise.all(
      Array.from({ length: Math.max(1, o.concurrency) }, async () => {
        while (nextIndex < plans.length && !hardStop.signal.aborted) {
          const plan = plans[nextIndex++];
          await gate(plan.index);
          await playConversation(plan, driver);
          played++;
          if (played % 10 === 0 || played === plans.length) log(`${played}/${plans.length} conversations played`);
        }
      }),
    );
    driverDone.abort();
    await faultLoop;
    log(
      `driver done; ${runLog.faults.worker_kill} kill(s), ${runLog.faults.server_restart} server restart(s), ` +
        `${runLog.faults.database_restart} database restart(s); checking`,
    );

    const toolFailures = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM chaos_faults WHERE idempotency_key LIKE $1`,
      [`${conversationPrefix}%`],
    );
    runLog.faults.tool_failure = toolFailures.rows[0].n;
    Object.assign(runLog.faults, chaosModel.faults);

    const checks = await runFinalChecks({
      client,
      pool,
      runLog,
      conversationPrefix,
      approvalTimeoutMs,
      approvalTimeoutsMs: new Map(
        plans.flatMap((p) => (p.coverage?.approvalTimeoutMs ? [[p.id, p.coverage.approvalTimeoutMs] as const] : [])),
      ),
      invalidModelRequests: model.invalidRequests().length,
      hugeAnswers: chaosModel.hugeAnswers,
      settleDeadline: Math.min(Date.now() + (options.settleTimeoutMs ?? 60_000), hardStopAt),
      historyDir: options.keepFiles ? scratch : undefined,
      signal: checksStop.signal,
    });
    // The Responses requests the server accepted, read again: each must keep the rules of its form of the guarantee.
    // Counted after the checks, so the requests of their last question to each conversation count too.
    const responsesRequests = checkResponsesRequests(model.requests, chaosModel.reasoningLed);
    checks.mustBeZero.invalidModelRequests = model.invalidRequests().length + responsesRequests.ruleBreaks.length;
    checks.mustBeZero.reasoningNotSentBack = responsesRequests.reasoningLost.length;
    for (const bad of model.invalidRequests().slice(0, 5)) {
      checks.problems.push(
        `invalid model request #${bad.index} (${bad.path}): ${JSON.stringify(bad.error?.body).slice(0, 300)}`,
      );
    }
    checks.problems.push(...responsesRequests.ruleBreaks.slice(0, 5).map((line) => line.slice(0, 400)));
    checks.problems.push(...responsesRequests.reasoningLost.slice(0, 5).map((line) => `reasoning lost: ${line}`));
    // Forks and agents called as tools inherit their conversation's API: a request on the other is a problem.
    checks.problems.push(...chaosModel.wrongApi.map((line) => `model API not kept: ${line}`));
    const apiUse = (api: ModelApi): ModelApiUse => {
      const sent = model.requests.filter((r) => r.method === 'POST' && apiOf(r) === api);
      return {
        conversations: chaosModel.apis[api].conversations.size,
        requests: sent.length,
        invalid: sent.filter((r) => !r.valid).length + (api === 'responses' ? responsesRequests.ruleBreaks.length : 0),
        reasoningReplies: chaosModel.apis[api].reasoningReplies,
        reasoningItemsSentBack: api === 'responses' ? responsesRequests.reasoningItemsSentBack : 0,
        reasoningLedCallsSent: api === 'responses' ? responsesRequests.reasoningLedCallsSent : 0,
        reasoningLost: api === 'responses' ? responsesRequests.reasoningLost.length : 0,
        storedReasoning: api === 'responses' ? checks.storedReasoning : { answers: 0, items: 0 },
      };
    };
    await tracker.stop();
    await explainRecoveries(client.temporal, tracker.measurements).catch((err: Error) =>
      log(`could not read the causes of recoveries: ${err.message}`),
    );

    const summaryBase = {
      runId,
      seed,
      options: o,
      durationMs: Date.now() - startedAt,
      hardStopped: hardStop.signal.aborted,
      conversations: plans.length,
      messagesSent: [...runLog.conversations.values()].reduce((n, c) => n + c.messageIds.length, 0),
      turns: checks.turns,
      turnOutcomes: checks.turnOutcomes,
      toolOutcomes: checks.toolOutcomes,
      modelRequests: model.requests.length,
      modelApis: { chat: apiUse('chat'), responses: apiUse('responses') },
      faults: runLog.faults,
      decisions: checks.decisions,
      mustBeZero: checks.mustBeZero,
      refundsApplied: checks.refundsApplied,
      effectsOfInterruptedCalls: checks.effectsOfInterruptedCalls,
      effectsOfAbandonedRuns: checks.effectsOfAbandonedRuns,
      goingBack: {
        resets: Object.fromEntries(
          [...new Set(runLog.resets.map((r) => r.kind))].map((k) => [
            k,
            runLog.resets.filter((r) => r.kind === k).length,
          ]),
        ),
        forks: runLog.forks.length,
        forksOfForks: runLog.forks.filter((f) => /-f\d+$/.test(f.sourceId)).length,
        forksWhileWaiting: runLog.forks.filter((f) => f.whileWaiting).length,
      },
      continueAsNewAfterEvents: options.continueAsNewAfterEvents,
      continuedAsNew: checks.continuedAsNew,
      subAgentConversations: checks.subAgentConversations,
      notStarted: checks.notStarted,
      recovery: {
        definition: RECOVERY_DEFINITION,
        workerKills: recoveryStats(tracker.measurements, 'worker_kill', startedAt),
        serverRestarts: recoveryStats(tracker.measurements, 'server_restart', startedAt),
        databaseRestarts: recoveryStats(tracker.measurements, 'database_restart', startedAt),
        controls: recoveryStats(tracker.measurements, 'control', startedAt),
      },
      clientRetries: runLog.clientRetries,
      problems: checks.problems,
    };
    await workers.stop();
    const workerInfo = {
      started: workers.logFiles().length,
      startupP50Ms: quantile(workers.startupMs, 0.5),
      restarts: workers.restartMs.length,
      restartP50Ms: quantile(workers.restartMs, 0.5),
      restartMaxMs: workers.restartMs.length > 0 ? Math.max(...workers.restartMs) : undefined,
      unexpectedExits: workers.unexpectedExits,
      loggedWarnings: scanWorkerLogs(workers.logFiles()),
    };
    const passed = !summaryBase.hardStopped && Object.values(checks.mustBeZero).every((n) => n === 0);
    const summary: ChaosSummary = {
      ...summaryBase,
      workers: workerInfo,
      passed,
      keptFiles: options.keepFiles ? scratch : undefined,
      text: '',
    };
    summary.text = formatSummary(summary);
    return summary;
  } finally {
    clearTimeout(hardTimer);
    clearTimeout(checksTimer);
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup.run();
      } catch (err) {
        log(`cleanup of ${cleanup.name} failed: ${(err as Error).message}`);
      }
    }
    if (!options.keepFiles) fs.rmSync(scratch, { recursive: true, force: true });
  }
}

/** Waits until `predicate` holds, `timeoutMs` passed or `signal` aborted. */
async function until(predicate: () => boolean, timeoutMs: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate() && !signal.aborted && Date.now() < deadline) await sleep(100);
}

/** The run's Temporal server, whichever kind, as the run uses it. */
interface RunTemporal {
  kind: 'dev server' | 'cluster';
  address: string;
  /** The standard variables that reach it (address, and TLS on the cluster). */
  clientEnv: Record<string, string>;
  connection: TemporalConnectionSettings;
  /** Stops its process, waits `downMs`, starts it again in place; resolves once it answers. */
  restart(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

/** The dev server (SQLite file, fixed port) and PostgreSQL. */
async function startDevServers(
  runId: string,
  scratch: string,
  log: (line: string) => void,
): Promise<{ temporal: RunTemporal; postgres: EmbeddedPostgresServer }> {
  const port = await freePort();
  const dbFilename = path.join(scratch, 'temporal.sqlite');
  const started = await startLocalServers({
    temporal: { dbFilename, port },
    label: 'agent-chaos',
    runId,
    database: 'chaos',
    restartablePostgres: true,
  });
  let dev: DevServer | undefined = started.temporal;
  const address = dev.address;
  return {
    postgres: started.postgres,
    temporal: {
      kind: 'dev server',
      address,
      clientEnv: { TEMPORAL_ADDRESS: address },
      connection: { address, profile: 'chaos dev server' },
      async restart(downMs) {
        await dev?.stop();
        dev = undefined;
        await sleep(downMs);
        dev = await startAgain(dbFilename, port, log);
      },
      stop: async () => dev?.stop(),
    },
  };
}

/** Temporal's own server binaries on the run's PostgreSQL (4 shards, mutual TLS). */
async function startClusterServers(
  runId: string,
  scratch: string,
): Promise<{ temporal: RunTemporal; postgres: EmbeddedPostgresServer }> {
  const { temporal: cluster, postgres } = await startLocalCluster({
    label: 'agent-chaos',
    runId,
    database: 'chaos',
    restartablePostgres: true,
    dir: scratch,
  });
  return {
    postgres,
    temporal: {
      kind: 'cluster',
      address: cluster.address,
      clientEnv: cluster.clientEnv,
      connection: cluster.connection,
      restart: (downMs) => cluster.restart({ downMs }),
      stop: () => cluster.stop(),
    },
  };
}

/** Starts the dev server again on its port and SQLite file, retrying while the port is still held. */
async function startAgain(dbFilename: string, port: number, log: (line: string) => void): Promise<DevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDevServer({ dbFilename, port });
    } catch (err) {
      if (attempt >= 5) throw err;
      log(`Temporal dev server did not start again (${(err as Error).message}); retrying`);
      await sleep(1_000 * attempt);
    }
  }
}

/** How many values, and their p50 and p99. */
function percentiles(values: number[]): Percentiles {
  return { count: values.length, p50Ms: quantile(values, 0.5), p99Ms: quantile(values, 0.99) };
}

function recoveryStats(
  measurements: readonly RecoveryMeasurement[],
  kind: RecoveryMeasurement['kind'],
  startedAt: number,
): RecoveryStats {
  const mine = measurements.filter((m) => m.kind === kind && !m.cutShort);
  const withTurns = mine.filter((m) => m.inFlight > 0);
  const times = withTurns.flatMap((m) => (m.recoveredMs === undefined ? [] : [m.recoveredMs]));
  // Every conversation some fault of this kind held up (a timeout or a takeover in its wait).
  const heldUp = withTurns.flatMap((m) =>
    [...m.progressed.values()].filter((p) => p.cause !== undefined && HELD_UP_BY_FAULT.includes(p.cause)),
  );
  return {
    count: mine.length,
    cutShort: measurements.filter((m) => m.kind === kind && m.cutShort).length,
    withTurnsInFlight: withTurns.length,
    neverProgressed: [...new Set(mine.flatMap((m) => m.neverProgressed))],
    p50Ms: quantile(times, 0.5),
    p99Ms: quantile(times, 0.99),
    maxMs: times.length > 0 ? Math.max(...times) : undefined,
    slowest: [...withTurns]
      .sort((a, b) => (b.recoveredMs ?? Infinity) - (a.recoveredMs ?? Infinity))
      .slice(0, 3)
      .map((m) => ({
        atMs: m.at - startedAt,
        inFlight: m.inFlight,
        recoveredMs: m.recoveredMs,
        conversationId: m.slowest,
        cause: m.cause,
      })),
    heldUp: percentiles(withTurns.flatMap((m) => (m.heldUpMs === undefined ? [] : [m.heldUpMs]))),
    heldUpConversations: percentiles(heldUp.map((p) => p.ms)),
    resumed: percentiles(heldUp.flatMap((p) => (p.resumedMs === undefined ? [] : [p.resumedMs]))),
    causes: Object.fromEntries(
      [...new Set(withTurns.flatMap((m) => (m.cause ? [m.cause] : [])))].map((cause) => {
        const times = withTurns
          .filter((m) => m.cause === cause && m.recoveredMs !== undefined)
          .map((m) => m.recoveredMs!);
        return [cause, { count: times.length, p50Ms: quantile(times, 0.5) }];
      }),
    ),
  };
}
