/**
 * How late an interrupt reaches a turn whose model call runs long, by mode
 * and workflow task timeout, on a machine kept busy by other conversations.
 *
 * A local model call keeps its workflow task open; a signal (a cancel, a new
 * message) gets in when the SDK renews that task, at 80% of the task
 * timeout. An ordinary model activity hears of a cancel at its next
 * heartbeat. For each setting: `load` conversations run turns of 5 steps
 * with a 200 ms model, while `samples` other conversations each start a turn
 * whose model call would take 30 s and cancel it at evenly spread moments
 * (0 to 4 s) after the model has the request; every other one first has a
 * short turn answered, so that its long call runs in a later workflow task.
 * Measured: from the cancel sent to the turn seen cancelled in the
 * conversation's state; the load's steps/s and CPU per step; workflow tasks
 * that timed out; model calls made again; cancels (and load turns) not in
 * effect after a minute, whose conversations are then terminated; workflow
 * tasks a running local model call adds per second.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { temporal } from '@temporalio/proto';
import { AgentClient } from '../../src/client/client';
import type { RecordedRequest } from '../../src/testing';
import { NOOP_TOOL } from './bench-tools';
import type { BenchContext } from './context';
import { mapLimit, quantile, startCpuMeter, type CpuPerStep } from './measure';
import { eventTimeMs as ms } from './history';
import { startProjectRig } from './project-rig';
import { turnMessage } from './responder';

const EventType = temporal.api.enums.v1.EventType;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/**
 * One setting: how calls run (`activity`: every call an ordinary activity; `local`: model and tool calls local;
 * `local-tools`: model calls ordinary, tool calls local) and the conversations' workflow task timeout.
 */
export interface InterruptSetting {
  mode: 'activity' | 'local' | 'local-tools';
  taskTimeoutMs: number;
}

/** The settings measured, in order. */
export const INTERRUPT_SETTINGS: readonly InterruptSetting[] = [
  { mode: 'activity', taskTimeoutMs: 5_000 },
  { mode: 'local-tools', taskTimeoutMs: 5_000 },
  { mode: 'local', taskTimeoutMs: 5_000 },
  { mode: 'local', taskTimeoutMs: 2_000 },
  { mode: 'local', taskTimeoutMs: 1_250 },
];

/** How the printed table names each mode. */
export const MODE_LABELS: Record<InterruptSetting['mode'], string> = {
  activity: 'activities',
  local: 'local activities',
  'local-tools': 'local tool calls',
};

/** Figures of one setting. */
export interface InterruptFigures extends InterruptSetting {
  /** Cancels sent: half in a conversation's first turn, half in its second. */
  samples: number;
  /** Cancel sent → turn seen cancelled (state polled every 50 ms), ms, one per sample whose cancel took effect. */
  latencyMs: number[];
  p50Ms: number;
  p90Ms: number;
  maxMs: number;
  /** Workflow tasks completed while a local model call ran, per second of it (before the cancel). */
  renewalsPerSecond: number;
  load: {
    conversations: number;
    /** Turns completed while the samples ran. */
    turns: number;
    stepsPerSecond: number;
    cpuPerStep: CpuPerStep;
  };
  /** WorkflowTaskTimedOut events in the histories of every conversation of the setting. */
  workflowTaskTimeouts: number;
  /** Those timeouts by conversation (load or cancel), timeout type and time since the task started. */
  timeoutKinds: Record<string, number>;
  /**
   * Cancels that had not taken effect a minute after they were sent, by the
   * turn the long call ran in, and load turns not answered within a minute
   * (such conversations are terminated).
   */
  stuck: { firstTurn: number; laterTurn: number; loadTurns: number };
  /** The events of the first of those, when there was one. */
  stuckHistory?: { workflowId: string; events: string[] };
  /** State queries that failed while a sample waited for its cancel, and the last failure's message. */
  queryFailures: number;
  lastQueryFailure?: string;
  /** The events of one conversation with a timed-out task (time since its first event, type), when one timed out. */
  timedOutHistory?: { workflowId: string; events: string[] };
  /** Model requests beyond one per model call the turns needed (a call run again after its task was lost). */
  repeatedModelCalls: number;
}

const LOAD_STEPS = 5;
const LOAD_LATENCY_MS = 200;
const LONG_CALL_MS = 30_000;
/** Cancels are sent from 0 to this long after the model has the request, evenly spread. */
const CANCEL_SPREAD_MS = 4_000;
/** A cancel that has not taken effect this long after it was sent is counted as stuck. */
const STUCK_AFTER_MS = 60_000;
/** Samples in flight at once. */
const SAMPLES_AT_ONCE = 4;

/** The user message of a request, for telling bench turns apart. */
function lastUserText(request: RecordedRequest): string {
  const messages = (request.body as { messages?: { role: string; content?: unknown }[] } | undefined)?.messages ?? [];
  return String([...messages].reverse().find((m) => m.role === 'user')?.content ?? '');
}

/** A history's events, one line each: time since the first event, type. */
function describeEvents(events: HistoryEvent[]): string[] {
  return events.map(
    (e) => `+${Math.round(ms(e) - ms(events[0]))} ms ${EventType[e.eventType ?? 0].replace('EVENT_TYPE_', '')}`,
  );
}

/** The events of a conversation's history, as {@link describeEvents} writes them. */
async function eventLines(client: AgentClient, id: string): Promise<string[]> {
  return describeEvents((await client.temporal.workflow.getHandle(id).fetchHistory()).events ?? []);
}

/** Runs every setting of {@link INTERRUPT_SETTINGS} against one worker process. */
export async function benchInterrupts(ctx: BenchContext): Promise<InterruptFigures[]> {
  const { stack, options } = ctx;
  const samples = options.quick ? 8 : 20;
  const loadConversations = options.quick ? 20 : 60;
  const rig = await startProjectRig(ctx, 'interrupts');
  const clients: AgentClient[] = [];
  try {
    await rig.worker.ready;
    const results: InterruptFigures[] = [];
    for (const setting of INTERRUPT_SETTINGS) {
      const label = `interrupts, ${MODE_LABELS[setting.mode]}, task timeout ${setting.taskTimeoutMs} ms`;
      const client = await AgentClient.connect({
        temporalAddress: stack.temporal.address,
        tls: stack.temporal.tls,
        taskQueue: rig.taskQueue,
        databaseUrl: stack.databaseUrl,
        workflowTaskTimeoutMs: setting.taskTimeoutMs,
      });
      clients.push(client);
      const input = {
        systemPrompt: 'You are a benchmark. Call the tool when told.',
        ...(setting.mode === 'local' ? { localActivities: { modelCalls: true, idempotentTools: true } } : {}),
        ...(setting.mode === 'local-tools' ? { localActivities: { idempotentTools: true } } : {}),
      };
      const prefix = `bench-${ctx.runTag}-int-${setting.mode}-${setting.taskTimeoutMs}`;
      stack.model.requests.length = 0;
      const ids: string[] = [];
      let stuckHistory: InterruptFigures['stuckHistory'];
      const stuckIds = new Set<string>();
      let queryFailures = 0;
      let lastQueryFailure: string | undefined;
      let expectedModelCalls = 0;

      // The load: each slot runs fresh conversations' turns, one after the other, until told to stop.
      let stopLoad = false;
      let loadTurns = 0;
      let stuckLoadTurns = 0;
      const loadWindow = { counting: false, turns: 0 };
      const slots = Array.from({ length: loadConversations }, async (_, slot) => {
        for (let round = 0; !stopLoad; round++) {
          const id = `${prefix}-load-${slot}-${round}`;
          ids.push(id);
          expectedModelCalls += LOAD_STEPS + 1;
          await client.sendMessage(
            id,
            turnMessage({ steps: LOAD_STEPS, latencyMs: LOAD_LATENCY_MS, tool: NOOP_TOOL }),
            {
              input: { ...input, maxSteps: LOAD_STEPS + 1 },
            },
          );
          const answered = await rig.watcher.answered(id, STUCK_AFTER_MS).then(
            () => true,
            () => false,
          );
          if (!answered) {
            // Counted and ended, like a stuck cancel; the slot goes on with a fresh conversation.
            stuckLoadTurns++;
            await client.temporal.workflow.getHandle(id).terminate('bench: its turn did not end within a minute');
            continue;
          }
          loadTurns++;
          if (loadWindow.counting) loadWindow.turns++;
        }
      });
      await sleep(3_000); // the load reaches its pace
      const meter = startCpuMeter({
        worker: rig.worker.pid,
        temporal: stack.temporalPid,
        postmaster: stack.postmasterPid,
      });
      loadWindow.counting = true;
      const windowStarted = Date.now();

      // The samples; the load stops when they end or fail (a failed sample's error is the one reported).
      const sampled = mapLimit(
        Array.from({ length: samples }, (_, i) => i),
        SAMPLES_AT_ONCE,
        async (i) => {
          const id = `${prefix}-cancel-${i}`;
          const tag = `${ctx.runTag}-${setting.mode}-${setting.taskTimeoutMs}-${i}`;
          const text = turnMessage({ steps: 1, latencyMs: LONG_CALL_MS, tool: NOOP_TOOL, tag });
          ids.push(id);
          expectedModelCalls += 1;
          // Every other sample first has a short turn answered, so that its long call runs in a later workflow task of
          // the run.
          const laterTurn = i % 2 === 1;
          if (laterTurn) {
            await client.sendMessage(id, turnMessage({ steps: 1, latencyMs: 0, tool: NOOP_TOOL }), {
              input: { ...input, maxSteps: 2 },
            });
            await rig.watcher.answered(id);
            expectedModelCalls += 2;
          }
          let from = stack.model.requests.length;
          const messageId = await client.sendMessage(id, text, { input: { ...input, maxSteps: 2 } });
          const deadline = Date.now() + 60_000;
          // Requests are recorded as they arrive and their bodies read after: look at each once it has one.
          const arrived = (): boolean => {
            const requests = stack.model.requests;
            for (let k = from; k < requests.length; k++) {
              if (requests[k].body === undefined && !requests[k].aborted) return false;
              if (lastUserText(requests[k]) === text) return true;
              from = k + 1;
            }
            return false;
          };
          while (!arrived()) {
            if (Date.now() > deadline) throw new Error(`${label}: the model never received the long call of ${id}.`);
            await sleep(10);
          }
          await sleep(((i + 0.5) / samples) * CANCEL_SPREAD_MS);
          const sentAt = Date.now();
          await client.cancelTurn(id);
          for (;;) {
            // A query fails while the conversation's workflow tasks fail or time out: asked again until the cancel
            // counts as stuck.
            const state = await client.state(id).catch((err: unknown) => {
              queryFailures++;
              lastQueryFailure = err instanceof Error ? err.message : String(err);
              return undefined;
            });
            const turn = state?.recentTurns.find((t) => t.messageIds.includes(messageId));
            if (turn) {
              if (turn.outcome !== 'cancelled' || turn.steps !== 0) {
                throw new Error(
                  `${label}: conversation ${id} ended ${turn.outcome} after ${turn.steps} model calls (expected cancelled after 0).`,
                );
              }
              return { laterTurn, ms: Date.now() - sentAt };
            }
            if (Date.now() > sentAt + STUCK_AFTER_MS) {
              // Measured, not thrown: the conversation is ended so that it does not load the next settings.
              stuckIds.add(id);
              stuckHistory ??= { workflowId: id, events: await eventLines(client, id) };
              await client.temporal.workflow
                .getHandle(id)
                .terminate('bench: its cancel did not take effect within a minute');
              return { laterTurn, ms: undefined };
            }
            await sleep(50);
          }
        },
      );
      const outcome = await sampled.then(
        (values) => ({ values }),
        (error: unknown) => ({ error }),
      );
      // The load's figures cover the samples' time only.
      const windowMs = Date.now() - windowStarted;
      const windowTurns = loadWindow.turns;
      const cpuPerStep = meter(Math.max(1, windowTurns * LOAD_STEPS));
      stopLoad = true;
      const loadEnded = await Promise.allSettled(slots);
      if ('error' in outcome) throw outcome.error;
      const failedLoad = loadEnded.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failedLoad) throw failedLoad.reason;
      const latencyMs = outcome.values.flatMap((v) => (v.ms === undefined ? [] : [v.ms]));
      const stuck = {
        firstTurn: outcome.values.filter((v) => v.ms === undefined && !v.laterTurn).length,
        laterTurn: outcome.values.filter((v) => v.ms === undefined && v.laterTurn).length,
        loadTurns: stuckLoadTurns,
      };

      // Every conversation's turns, checked; their histories, read.
      let workflowTaskTimeouts = 0;
      const timeoutKinds: Record<string, number> = {};
      let timedOutHistory: InterruptFigures['timedOutHistory'];
      let renewals = 0;
      let runningMs = 0;
      await mapLimit(ids, 10, async (id) => {
        const events = (await client.temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
        for (const e of events) {
          if (e.eventType !== EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT) continue;
          workflowTaskTimeouts++;
          const a = e.workflowTaskTimedOutEventAttributes;
          const started = events.find((x) => Number(x.eventId) === Number(a?.startedEventId));
          const first = events.find((x) => x.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) === started;
          const type = temporal.api.enums.v1.TimeoutType[a?.timeoutType ?? 0]
            .replace('TIMEOUT_TYPE_', '')
            .toLowerCase();
          const kind = `${id.includes('-cancel-') ? 'cancel' : 'load'}, ${first ? 'first' : 'later'} task, ${type}${started ? `, after ${Math.round((ms(e) - ms(started)) / 500) / 2} s` : ''}`;
          timeoutKinds[kind] = (timeoutKinds[kind] ?? 0) + 1;
          timedOutHistory ??= {
            workflowId: id,
            events: describeEvents(events),
          };
        }
        if (id.includes('-cancel-') && setting.mode === 'local' && !stuckIds.has(id)) {
          // By the events' times (a signal is written into the history only when the task open at its arrival ends):
          // the long call's turn starts at the last message's signal, the cancel is the last signal; every task
          // completed between its first task's start and the cancel's arrival renewed the task holding the call.
          const signals = events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);
          const [message, cancel] = signals.slice(-2);
          const firstStart = events.find(
            (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED && ms(e) >= ms(message),
          );
          if (cancel && firstStart && ms(cancel) > ms(firstStart)) {
            renewals += events.filter(
              (e) =>
                e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED &&
                ms(e) > ms(firstStart) &&
                ms(e) < ms(cancel),
            ).length;
            runningMs += ms(cancel) - ms(firstStart);
          }
        }
      });
      const modelRequests = stack.model.requests.length;
      const invalid = stack.model.invalidRequests();
      if (invalid.length > 0)
        throw new Error(
          `${label}: the model server refused ${invalid.length} request(s), e.g. ${JSON.stringify(invalid[0].error?.body).slice(0, 300)}`,
        );
      stack.model.requests.length = 0;
      const figures: InterruptFigures = {
        ...setting,
        samples,
        latencyMs,
        p50Ms: quantile(latencyMs, 0.5),
        p90Ms: quantile(latencyMs, 0.9),
        maxMs: Math.max(...latencyMs),
        renewalsPerSecond: runningMs > 0 ? (renewals * 1000) / runningMs : 0,
        load: {
          conversations: loadConversations,
          turns: loadTurns,
          stepsPerSecond: (windowTurns * LOAD_STEPS * 1000) / windowMs,
          cpuPerStep,
        },
        workflowTaskTimeouts,
        timeoutKinds,
        stuck,
        queryFailures,
        ...(lastQueryFailure ? { lastQueryFailure } : {}),
        ...(stuckHistory ? { stuckHistory } : {}),
        ...(timedOutHistory ? { timedOutHistory } : {}),
        repeatedModelCalls: modelRequests - expectedModelCalls,
      };
      ctx.log(
        `${label}: cancel → turn cancelled p50 ${figures.p50Ms.toFixed(0)} ms, p90 ${figures.p90Ms.toFixed(0)}, max ${figures.maxMs.toFixed(0)}; ` +
          `load ${figures.load.stepsPerSecond.toFixed(1)} steps/s; ${workflowTaskTimeouts} task timeouts (${JSON.stringify(timeoutKinds)}), ${figures.repeatedModelCalls} repeated model calls; stuck cancels ${stuck.firstTurn} (first turn) + ${stuck.laterTurn} (later turn), stuck load turns ${stuck.loadTurns}`,
      );
      results.push(figures);
    }
    return results;
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await rig.stop();
  }
}
