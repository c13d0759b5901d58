/**
 * Temporal's own AI integration, `@temporalio/ai-sdk`: the workflow of
 * `ai-sdk-workflows.ts` (one `generateText`, model calls through the
 * plugin's activity, the no-op tool as an activity) on its own worker process
 * (`ai-sdk-worker.ts`), driven like the floor: the same dev server, scripted
 * model server, turn shapes and concurrencies as the project.
 */
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { AiSdkTurnInput, AiSdkTurnResult } from './ai-sdk-workflows';
import { NOOP_TOOL } from './bench-tools';
import { checkModelRequests, type BenchContext } from './context';
import { historyFigures } from './history';
import { mapLimit, type RunTurn } from './measure';
import { measureAtEachLatency, type LostWork, type SystemFigures } from './phases';
import { turnMessage } from './responder';
import { AI_SDK_WORKER, spawnWorker } from './worker-process';

/** The plugin's activity type for a language model call (`generateText`'s steps). */
const MODEL_ACTIVITY = 'invokeModel';

/** Measures `@temporalio/ai-sdk` at every latency of the options. */
export async function benchAiSdk(ctx: BenchContext): Promise<SystemFigures[]> {
  const { stack, options, log } = ctx;
  const taskQueue = `bench-ai-sdk-${ctx.runTag}`;
  const worker = spawnWorker({
    worker: AI_SDK_WORKER,
    env: { ...stack.temporal.clientEnv, TEMPORAL_TASK_QUEUE: taskQueue, OPENAI_BASE_URL: stack.model.url },
    dir: stack.scratch,
    name: 'ai-sdk-worker',
  });
  const stopWorker = ctx.cleanup.add('ai-sdk worker', () => worker.stop());
  const connection = await Connection.connect({ address: stack.temporal.address, tls: stack.temporal.tls });
  const closeConnection = ctx.cleanup.add('ai-sdk client', () => connection.close());
  const client = new Client({ connection, namespace: 'default' });
  try {
    await worker.ready;
    log(`ai-sdk worker ready (pid ${worker.pid}) after ${Date.now() - worker.spawnedAt} ms`);
    const sent: { id: string; steps: number }[] = [];
    const runTurn: RunTurn = async (id, steps, latencyMs) => {
      const started = Date.now();
      const input: AiSdkTurnInput = {
        prompt: turnMessage({ steps, latencyMs, tool: NOOP_TOOL }),
        tool: NOOP_TOOL,
        steps,
      };
      const ran: AiSdkTurnResult = await client.workflow.execute('aiSdkTurn', {
        taskQueue,
        workflowId: id,
        args: [input],
      });
      const wall = Date.now() - started;
      if (ran.modelCalls !== steps + 1 || ran.toolCalls !== steps) {
        throw new Error(
          `ai-sdk turn ${id} made ${ran.modelCalls} model calls and ${ran.toolCalls} tool calls, expected ${steps + 1} and ${steps} (answer: ${ran.text}).`,
        );
      }
      sent.push({ id, steps });
      return wall;
    };
    /**
     * Checks the model server saw every turn's steps + 1 requests since the last check; counts the workflow tasks that
     * timed out and the model calls made again.
     */
    const check = async (phase: string): Promise<LostWork> => {
      const turns = sent.splice(0);
      let workflowTaskTimeouts = 0;
      await mapLimit(turns, 10, async ({ id }) => {
        const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
        workflowTaskTimeouts += events.filter(
          (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
        ).length;
      });
      const expected = turns.reduce((n, t) => n + t.steps + 1, 0);
      const modelCalls = checkModelRequests(ctx, phase);
      if (modelCalls < expected) {
        throw new Error(
          `${phase}: the model server saw ${modelCalls} requests, expected ${expected} (steps + 1 per turn).`,
        );
      }
      return { workflowTaskTimeouts, repeatedModelCalls: modelCalls - expected };
    };
    const meter = { worker: worker.pid, temporal: stack.temporalPid, postmaster: stack.postmasterPid };
    return await measureAtEachLatency({
      options,
      runTurn,
      meter,
      idPrefix: `bench-${ctx.runTag}-aisdk-`,
      label: '@temporalio/ai-sdk',
      log,
      check,
      history: (id) => historyFigures(client, id, options.steps, (type) => type === MODEL_ACTIVITY),
    });
  } finally {
    await closeConnection();
    await stopWorker();
  }
}
