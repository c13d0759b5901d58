/**
 * Conversations waiting for a person: a fresh project worker process, its
 * memory idle, then with N conversations each waiting for the approval of a
 * tool call (started at once, 50 at a time), how long starting them took,
 * and how long a sample of them takes from approval to answer.
 */
import v8 from 'node:v8';
import { setTimeout as sleep } from 'node:timers/promises';
import { AgentStatusAttribute } from '../../src/contract';
import { APPROVAL_TOOL } from './bench-tools';
import { checkModelRequests, projectWorkerEnv, type BenchContext } from './context';
import { startProjectRig } from './project-rig';
import { mapLimit, quantile, startCpuMeter, type CpuPerStep } from './measure';
import { processMemoryMiB } from './proc';
import { turnMessage } from './responder';

/** What the waiting part measured. */
export interface WaitingFigures {
  conversations: number;
  /** Conversations started at once. */
  startConcurrency: number;
  /** Worker RSS before any conversation, MiB. */
  idleRssMiB: number;
  /** Worker RSS with every conversation waiting, MiB. */
  waitingRssMiB: number;
  /** (waiting − idle) ÷ conversations, KiB. */
  kibPerWaitingConversation: number;
  /** Peak RSS of the worker (VmHWM) by then, MiB. */
  peakRssMiB: number;
  /**
   * Worker RSS after {@link SETTLE_MS} more with nothing to do, MiB: what the
   * waiting conversations cost once the start's burst is over (V8 returns
   * unused heap pages while idle).
   */
  settledRssMiB: number;
  /** First message sent → every message accepted by Temporal. */
  sendMs: number;
  /** First message sent → every conversation listed as awaiting approval. */
  allWaitingMs: number;
  /** CPU time per conversation started (the worker, Temporal, PostgreSQL, the bench), ms. */
  cpuPerConversation: CpuPerStep;
  /**
   * Conversations the worker keeps cached (Temporal's sticky cache): those beyond it are evicted and rebuilt from
   * history when they wake.
   */
  workerCache: { size: number; source: string };
  approvals: { count: number; p50Ms: number; maxMs: number; allMs: number[] };
}

/** How long the worker is left idle, every conversation waiting, before its memory is read again. */
const SETTLE_MS = 60_000;

/** Runs the waiting part with `options.waiting` conversations. */
export async function benchWaiting(ctx: BenchContext): Promise<WaitingFigures> {
  const { stack, options, log } = ctx;
  const n = options.waiting;
  const { worker, client, watcher, taskQueue, stop } = await startProjectRig(ctx, 'waiting');
  /** The worker's memory now; throws, naming its log, when it is gone (nothing would answer the conversations). */
  const workerMemory = (): { rssMiB: number; peakMiB: number } => {
    const memory = processMemoryMiB(worker.pid);
    if (!memory || worker.child.exitCode !== null || worker.child.signalCode !== null) {
      throw new Error(
        `waiting: the worker (pid ${worker.pid}) exited (${worker.child.signalCode ?? `code ${worker.child.exitCode}`}); its log: ${worker.logFile}`,
      );
    }
    return memory;
  };
  try {
    await worker.ready;
    // Read first: a configuration the bench cannot read fails the part now, not after minutes of figures.
    const workerCache = await workerCacheSize(projectWorkerEnv(ctx, taskQueue));
    await sleep(3_000);
    const idle = workerMemory();
    log(`waiting: worker idle at ${idle.rssMiB.toFixed(0)} MiB; starting ${n} conversations, 50 at a time`);

    const ids = Array.from({ length: n }, (_, i) => `bench-${ctx.runTag}-wait-${i}`);
    const text = turnMessage({ steps: 1, latencyMs: 0, tool: APPROVAL_TOOL });
    const meter = startCpuMeter({ worker: worker.pid, temporal: stack.temporalPid, postmaster: stack.postmasterPid });
    const started = Date.now();
    let sent = 0;
    let lastLog = Date.now();
    const messageIds = await mapLimit(ids, 50, async (id) => {
      const messageId = await client.sendMessage(id, text, { input: { maxSteps: 2 } });
      if (++sent < n && Date.now() - lastLog > 10_000) {
        log(`waiting: ${sent}/${n} messages sent`);
        lastLog = Date.now();
      }
      return messageId;
    });
    const sendMs = Date.now() - started;
    const query = `TaskQueue = '${taskQueue}' AND ${AgentStatusAttribute.name} = 'awaiting_approval'`;
    const giveUpMs = Math.max(10 * 60_000, n * 1_000);
    let waitingCount = 0;
    while (waitingCount < n) {
      workerMemory();
      if (Date.now() - started > giveUpMs)
        throw new Error(
          `waiting: only ${waitingCount} of ${n} conversations awaiting approval after ${giveUpMs / 60_000} minutes.`,
        );
      await sleep(250);
      waitingCount = (await client.temporal.workflow.count(query)).count;
      if (Date.now() - lastLog > 10_000) {
        log(`waiting: ${waitingCount}/${n} awaiting approval`);
        lastLog = Date.now();
      }
    }
    const allWaitingMs = Date.now() - started;
    const cpuPerConversation = meter(n);
    await sleep(3_000);
    const waiting = workerMemory();
    log(
      `waiting: ${n} conversations awaiting approval after ${allWaitingMs} ms; worker at ${waiting.rssMiB.toFixed(0)} MiB`,
    );
    await sleep(SETTLE_MS);
    const settled = workerMemory();
    log(`waiting: worker at ${settled.rssMiB.toFixed(0)} MiB after ${SETTLE_MS / 1000} s more with nothing to do`);

    // Approve a sample spread over the whole range (the first started are the first a full cache evicts).
    const count = Math.min(options.approvals, n);
    const sample = Array.from({ length: count }, (_, k) => Math.floor((k * n) / count));
    const approvalMs: number[] = [];
    for (const index of sample) {
      const id = ids[index];
      const t0 = Date.now();
      const answered = watcher.answered(id, 120_000);
      await client.decide(id, { decision: 'approve', decidedBy: 'bench' });
      approvalMs.push((await answered) - t0);
      const turn = await client.waitForTurn(id, messageIds[index], 60_000);
      if (turn.outcome !== 'answered')
        throw new Error(`waiting: conversation ${id} ended ${turn.outcome} after its approval.`);
    }
    checkModelRequests(ctx, 'waiting');
    return {
      conversations: n,
      startConcurrency: 50,
      idleRssMiB: idle.rssMiB,
      waitingRssMiB: waiting.rssMiB,
      kibPerWaitingConversation: ((waiting.rssMiB - idle.rssMiB) * 1024) / n,
      peakRssMiB: waiting.peakMiB,
      settledRssMiB: settled.rssMiB,
      sendMs,
      allWaitingMs,
      cpuPerConversation,
      workerCache,
      approvals: { count, p50Ms: quantile(approvalMs, 0.5), maxMs: Math.max(...approvalMs), allMs: approvalMs },
    };
  } finally {
    await stop();
  }
}

/**
 * The worker's cache size: its configuration's (`maxCachedConversations`, read
 * with the worker's environment) when the project sets one, else the SDK's
 * default for this heap size (`maxCachedWorkflows`, reused V8 context).
 */
async function workerCacheSize(env: Record<string, string>): Promise<{ size: number; source: string }> {
  const { loadConfig } = await import('../../src/app/config');
  const configured = (loadConfig({ ...process.env, ...env }) as unknown as { maxCachedConversations?: number })
    .maxCachedConversations;
  if (typeof configured === 'number')
    return { size: configured, source: "the worker's configuration (maxCachedConversations)" };
  const heapMiB = v8.getHeapStatistics().heap_size_limit / (1024 * 1024);
  return {
    size: Math.max(Math.floor((Math.max(heapMiB - 200, 0) * 600) / 1024), 10),
    source: "the SDK's default for this heap size",
  };
}
