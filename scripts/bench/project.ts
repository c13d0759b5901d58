/**
 * The project: the real worker process (`src/main.ts`, with the bench's no-op
 * tool through `AGENT_TOOLS_MODULE`), driven through the project's
 * `AgentClient` like any caller: `sendMessage` starts each conversation's turn;
 * the answer is seen in PostgreSQL ({@link AnswerWatcher}); afterwards
 * `waitForTurn` checks every turn's record (answered, steps + 1 model calls).
 */
import { temporal } from '@temporalio/proto';
import { conversationActivityType } from '../../src/contract/activities';
import { NOOP_TOOL } from './bench-tools';
import { checkModelRequests, type BenchContext } from './context';
import { historyFigures } from './history';
import { mapLimit, type RunTurn } from './measure';
import { measureAtEachLatency, type LostWork, type SystemFigures } from './phases';
import { turnMessage } from './responder';
import { startProjectRig } from './project-rig';

/**
 * How the project's conversations run their calls: `'activity'`, every call
 * an ordinary activity (the default); `'local'`, model calls and the
 * (idempotent, no-op) tool calls as local activities; `'local-tools'`, model
 * calls as ordinary activities and tool calls as local ones; `'unstreamed'`,
 * the default with the model's answers unstreamed (`model.stream: false`), as
 * `@temporalio/ai-sdk`'s `generateText` asks for them.
 */
export type ProjectMode = 'activity' | 'local' | 'local-tools' | 'unstreamed' | 'baseline';

const MODES: Record<
  ProjectMode,
  {
    label: string;
    rig: string;
    idTag: string;
    localActivities?: { modelCalls?: boolean; idempotentTools: boolean };
    stream?: false;
  }
> = {
  activity: { label: 'project', rig: 'project', idTag: '' },
  local: {
    label: 'project (local activities)',
    rig: 'project-local',
    idTag: 'local-',
    localActivities: { modelCalls: true, idempotentTools: true },
  },
  'local-tools': {
    label: 'project (local tool calls)',
    rig: 'project-local-tools',
    idTag: 'ltools-',
    localActivities: { idempotentTools: true },
  },
  unstreamed: { label: 'project (unstreamed)', rig: 'project-unstreamed', idTag: 'nostream-', stream: false },
  baseline: { label: 'project (--baseline)', rig: 'project-baseline', idTag: 'base-' },
};

/**
 * Measures the project at every latency of the options, its calls run as `mode` says; one worker process serves them
 * all.
 */
export async function benchProject(ctx: BenchContext, mode: ProjectMode = 'activity'): Promise<SystemFigures[]> {
  const { stack, options } = ctx;
  const { label, rig, idTag, localActivities, stream } = MODES[mode];
  const log = (line: string): void => ctx.log(`${label}${line}`);
  const { worker, client, watcher, stop } = await startProjectRig(ctx, rig, mode === 'baseline');
  try {
    await worker.ready;
    log(` worker ready (pid ${worker.pid}) after ${Date.now() - worker.spawnedAt} ms`);
    const sent: { id: string; messageId: string; steps: number }[] = [];
    const runTurn: RunTurn = async (id, steps, latencyMs) => {
      const started = Date.now();
      const messageId = await client.sendMessage(id, turnMessage({ steps, latencyMs, tool: NOOP_TOOL }), {
        input: {
          systemPrompt: 'You are a benchmark. Call the tool when told.',
          maxSteps: steps + 1,
          ...(localActivities ? { localActivities } : {}),
          ...(stream === false ? { model: { stream } } : {}),
        },
      });
      const answeredAt = await watcher.answered(id);
      sent.push({ id, messageId, steps });
      return answeredAt - started;
    };
    /**
     * Checks every turn sent since the last check; counts the workflow tasks that timed out and the model calls beyond
     * a turn's steps + 1.
     */
    const check = async (phase: string): Promise<LostWork> => {
      const turns = sent.splice(0);
      let workflowTaskTimeouts = 0;
      let scheduleToStartTimeouts = 0;
      await mapLimit(turns, 10, async ({ id, messageId, steps }) => {
        const turn = await client.waitForTurn(id, messageId, 60_000);
        if (turn.outcome !== 'answered' || turn.steps !== steps + 1) {
          throw new Error(
            `${phase}: conversation ${id} ended ${turn.outcome} after ${turn.steps} model calls (expected answered after ${steps + 1}).`,
          );
        }
        const events = (await client.temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
        const timedOut = events.filter(
          (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
        );
        workflowTaskTimeouts += timedOut.length;
        scheduleToStartTimeouts += timedOut.filter(
          (e) =>
            e.workflowTaskTimedOutEventAttributes?.timeoutType ===
            temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START,
        ).length;
      });
      const modelCalls = checkModelRequests(ctx, phase);
      return {
        workflowTaskTimeouts,
        scheduleToStartTimeouts,
        repeatedModelCalls: modelCalls - turns.reduce((n, t) => n + t.steps + 1, 0),
      };
    };
    const meter = { worker: worker.pid, temporal: stack.temporalPid, postmaster: stack.postmasterPid };
    return await measureAtEachLatency({
      options,
      runTurn,
      meter,
      idPrefix: `bench-${ctx.runTag}-${idTag}`,
      label,
      log: ctx.log,
      check,
      history: (id) =>
        historyFigures(
          client.temporal,
          id,
          options.steps,
          // With local model calls a step has no activity, only its markers: no tool step is told apart.
          (type) => mode !== 'local' && type === conversationActivityType('callModel'),
        ),
    });
  } finally {
    await stop();
  }
}
