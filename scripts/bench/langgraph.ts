/**
 * The LangGraph baseline: the same turns on LangGraph JS with PostgresSaver
 * (`langgraph-worker.ts`, a process of its own, with a database of its own in
 * the bench's PostgreSQL), with LangGraph's default `durability: "async"` (a
 * step's checkpoint is written while the next step runs) and with `"sync"`
 * (written before the next step starts: like-for-like with a workflow, whose
 * step is recorded before the next one is scheduled).
 */
import { checkModelRequests, type BenchContext } from './context';
import type { LangGraphTurnReply, LangGraphTurnRequest } from './langgraph-worker';
import { runPhases, type RunTurn } from './measure';
import type { SystemFigures } from './phases';
import { turnMessage } from './responder';
import { NOOP_TOOL } from './bench-tools';
import { LANGGRAPH_WORKER, spawnWorker } from './worker-process';

/** LangGraph's figures, per durability mode. */
export interface LangGraphFigures {
  durability: 'sync' | 'async';
  perLatency: SystemFigures[];
}

const DATABASE = 'bench_langgraph';

/** Measures LangGraph + PostgresSaver in both durability modes at every latency of the options. */
export async function benchLangGraph(ctx: BenchContext): Promise<LangGraphFigures[]> {
  const { stack, options, log } = ctx;
  await stack.pool.query(`DROP DATABASE IF EXISTS ${DATABASE}`);
  await stack.pool.query(`CREATE DATABASE ${DATABASE}`);
  const url = new URL(stack.databaseUrl);
  url.pathname = `/${DATABASE}`;
  const worker = spawnWorker({
    worker: LANGGRAPH_WORKER,
    env: { LANGGRAPH_DATABASE_URL: url.toString(), OPENAI_BASE_URL: stack.model.url },
    dir: stack.scratch,
    name: 'langgraph-worker',
    ipc: true,
  });
  const stopWorker = ctx.cleanup.add('LangGraph process', () => worker.stop());
  const waiting = new Map<string, (reply: LangGraphTurnReply) => void>();
  worker.child.on('message', (reply: LangGraphTurnReply) => {
    waiting.get(reply.id)?.(reply);
    waiting.delete(reply.id);
  });
  try {
    await worker.ready;
    log(`LangGraph process ready (pid ${worker.pid}) after ${Date.now() - worker.spawnedAt} ms`);
    const meter = { worker: worker.pid, temporal: stack.temporalPid, postmaster: stack.postmasterPid };
    const results: LangGraphFigures[] = [];
    for (const durability of ['async', 'sync'] as const) {
      const runTurn: RunTurn = async (id, steps, latencyMs) => {
        const started = Date.now();
        const request: LangGraphTurnRequest = {
          id,
          text: turnMessage({ steps, latencyMs, tool: NOOP_TOOL }),
          durability,
        };
        const reply = await new Promise<LangGraphTurnReply>((resolve) => {
          waiting.set(id, resolve);
          worker.child.send(request);
        });
        if ('error' in reply) throw new Error(`LangGraph turn ${id} failed: ${reply.error}`);
        if (reply.modelCalls !== steps + 1)
          throw new Error(`LangGraph turn ${id} made ${reply.modelCalls} model calls, expected ${steps + 1}.`);
        return Date.now() - started;
      };
      const perLatency: SystemFigures[] = [];
      for (const latencyMs of options.latencies) {
        const prefix = `bench-${ctx.runTag}-langgraph-${durability}-l${latencyMs}`;
        const base = { runTurn, steps: options.steps, latencyMs, meter };
        const { single, medium, high } = await runPhases(base, prefix, options);
        checkModelRequests(ctx, `LangGraph (${durability})`);
        log(
          `LangGraph + PostgresSaver, durability ${durability}, model ${latencyMs} ms: ${single.msPerStep.toFixed(2)} ms/step (1), ` +
            `${medium.msPerStep.toFixed(2)} ms/step (${options.mediumConcurrency}), ${high.stepsPerSecond.toFixed(1)} steps/s (${options.highConcurrency})`,
        );
        perLatency.push({ latencyMs, single, medium, high });
      }
      results.push({ durability, perLatency });
    }
    return results;
  } finally {
    await stopWorker();
  }
}
