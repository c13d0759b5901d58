/** The bench's outputs: the printed table and `bench-results.json`. */
import fs from 'node:fs';
import path from 'node:path';
import { formatAgainstAiSdk } from './ai-sdk-report';
import { formatColdStarts } from './cold-start';
import type { StartUp } from './startup';
import { MODE_LABELS } from './interrupts';
import type { SystemFigures } from './phases';
import type { BenchResults } from './results';

/** What each figure means, written into the JSON and printed under the table. */
export const DEFINITIONS: Record<string, string> = {
  step: 'one model call that asks for one tool call, and that tool call; a turn is S steps plus the final answer (S + 1 model calls)',
  msPerStep:
    'median wall time of a turn ÷ S; a turn runs from the client call that sends the message (or starts the workflow) to the answer being seen: stored in PostgreSQL for the project (polled every 10 ms; every 50 ms while more than 10 turns run), the workflow result for the floor, the return of the loop for the plain loop',
  overheadMsPerStep: '(median turn wall time − (S + 1) × model latency) ÷ S: what the system adds to the model',
  stepsPerSecond:
    'steps of all turns ÷ wall time from the first turn started to the last one answered, all turns started at once',
  cpuPerStep:
    'CPU time (user + system, /proc/<pid>/stat) of each process during the phase ÷ steps; "bench" is the driver process: scripted model server, client, answer polling, and for the plain loop the loop itself',
  langgraph:
    'LangGraph JS with PostgresSaver in a process of its own (its own database in the same PostgreSQL): an agent node calling ChatOpenAI (not streamed, its default; the same scripted model server), the prebuilt ToolNode with the same no-op tool; durability "async" (its default: a step\'s checkpoint written while the next step runs) and "sync" (written before the next step starts, like a workflow\'s history); its "worker" CPU is that process',
  aiSdk:
    "Temporal's own AI integration, @temporalio/ai-sdk, as its documentation writes a workflow: one generateText (ai 7) with the model through the plugin's temporalProvider (each model call its invokeModel activity, @ai-sdk/openai-compatible over HTTP to the same scripted model server, not streamed) and the no-op tool whose execute runs an activity, stopWhen stepCountIs(S + 1); a plain worker with AiSdkPlugin and the floor worker's settings, in a process of its own",
  floor:
    "a minimal workflow that runs the same steps with no-op activities (the model one sleeps the model latency), on a plain worker with the project worker's settings: 4 per step is the shape issue 14 describes (callModel, appendMessages, runTool, appendMessages, plus the user message and answer writes), 2 per step is model + tool",
  plain:
    'the same turn in the bench process: openai SDK over HTTP to the same scripted model server (streamed, as the project), the tool function; "+ PostgreSQL" adds one INSERT, committed on its own, per message',
  history:
    "events and encoded bytes of one turn's workflow history ÷ S (whole history: the user message, steps, final answer)",
};

type Figure = {
  title: (o: BenchResults['options']) => string;
  value: (f: SystemFigures) => number | undefined;
  /** False where the floor's value is near nothing and a ratio would mean nothing. */
  ratio?: boolean;
};

const FIGURES: Figure[] = [
  { title: () => 'ms/step, 1 conversation', value: (f) => f.single.msPerStep },
  { title: () => 'overhead ms/step (wall − model time), 1 conversation', value: (f) => f.single.overheadMsPerStep },
  { title: (o) => `ms/step, ${o.mediumConcurrency} concurrent conversations`, value: (f) => f.medium.msPerStep },
  { title: (o) => `steps/s, ${o.highConcurrency} concurrent conversations`, value: (f) => f.high.stepsPerSecond },
  {
    title: (o) => `ms/step (median turn), ${o.highConcurrency} concurrent conversations`,
    value: (f) => f.high.msPerStep,
  },
  { title: (o) => `worker CPU ms/step, ${o.highConcurrency} concurrent`, value: (f) => f.high.cpuPerStep?.worker },
  {
    title: (o) => `CPU ms/step of worker, Temporal server and PostgreSQL together, ${o.highConcurrency} concurrent`,
    value: (f) =>
      f.high.cpuPerStep
        ? (f.high.cpuPerStep.worker ?? 0) + f.high.cpuPerStep.temporal + f.high.cpuPerStep.postgres
        : undefined,
  },
  {
    title: (o) => `Temporal server CPU ms/step, ${o.highConcurrency} concurrent`,
    value: (f) => f.high.cpuPerStep?.temporal,
    ratio: false,
  },
  {
    title: (o) => `PostgreSQL CPU ms/step, ${o.highConcurrency} concurrent`,
    value: (f) => f.high.cpuPerStep?.postgres,
  },
  {
    title: (o) => `bench process CPU ms/step, ${o.highConcurrency} concurrent`,
    value: (f) => f.high.cpuPerStep?.driver,
    ratio: false,
  },
  {
    title: (o) => `workflow tasks timed out, ${o.highConcurrency} concurrent (their work is done again)`,
    value: (f) => f.lost?.high.workflowTaskTimeouts,
    ratio: false,
  },
  {
    title: (o) => `model calls made again, ${o.highConcurrency} concurrent`,
    value: (f) => f.lost?.high.repeatedModelCalls,
    ratio: false,
  },
  { title: () => 'worker CPU ms/step, 1 conversation', value: (f) => f.single.cpuPerStep?.worker },
  { title: () => 'history events/step', value: (f) => f.history?.eventsPerStep },
  { title: () => 'history bytes/step', value: (f) => f.history?.bytesPerStep },
];

/** Formats a number with a precision fitting its size. */
export function num(v: number | undefined): string {
  if (v === undefined || !Number.isFinite(v)) return '–';
  const a = Math.abs(v);
  return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : a >= 1 ? v.toFixed(2) : v.toFixed(3);
}

function systems(r: BenchResults): { name: string; figures: SystemFigures[] }[] {
  const list: { name: string; figures: SystemFigures[] }[] = [];
  if (r.project) list.push({ name: 'project', figures: r.project });
  if (r.projectLocal) list.push({ name: 'project, local activities', figures: r.projectLocal });
  if (r.projectLocalTools) list.push({ name: 'project, local tool calls', figures: r.projectLocalTools });
  if (r.projectUnstreamed) list.push({ name: 'project, unstreamed', figures: r.projectUnstreamed });
  if (r.projectBaseline)
    list.push({ name: `project at --baseline ${r.options.baseline ?? ''}`, figures: r.projectBaseline });
  if (r.aiSdk) list.push({ name: '@temporalio/ai-sdk (generateText)', figures: r.aiSdk });
  for (const l of r.langgraph ?? [])
    list.push({ name: `LangGraph + PostgresSaver, durability ${l.durability}`, figures: l.perLatency });
  for (const f of [...(r.floor ?? [])].sort((a, b) => b.activitiesPerStep - a.activitiesPerStep)) {
    list.push({ name: `Temporal floor, ${f.activitiesPerStep} activities/step`, figures: f.perLatency });
  }
  for (const p of r.plain ?? [])
    list.push({ name: p.postgres ? 'plain loop + PostgreSQL commit/message' : 'plain loop', figures: p.perLatency });
  return list;
}

/** The table printed at the end of a run. */
export function formatTable(r: BenchResults): string {
  const o = r.options;
  const m = r.machine;
  const lines: string[] = [];
  lines.push(
    `Bench: ${o.steps} tool steps per turn (+ the final answer)${o.quick ? ', --quick' : ''}; ` +
      `${m.cpuCount} × ${m.cpuModel}, ${m.totalMemoryGiB} GiB, Node ${m.node}, ${m.temporalCli.version.split('\n')[0]}, SDK ${m.temporalSdk}`,
  );
  if (o.projectWorker?.startsWith('compiled'))
    lines.push(`the project's worker ran compiled (--compiled, build/main.js), not through tsx as npm start runs it`);
  if (o.dynamicConfig.length > 0 || o.sqlitePragmas.length > 0) {
    const tuned = [...o.dynamicConfig, ...o.sqlitePragmas.map((p) => `sqlite ${p}`)];
    lines.push(`dev server tuned: ${tuned.join(' ')} (not as npm start runs it)`);
  }
  const langgraph = r.langgraph?.find((l) => l.durability === 'sync')?.perLatency;
  const baseline = langgraph ?? r.floor?.find((f) => f.activitiesPerStep === 2)?.perLatency;
  lines.push(
    langgraph
      ? 'ratio = value ÷ LangGraph + PostgresSaver (durability sync), same model latency'
      : baseline
        ? 'ratio = value ÷ the Temporal floor with 2 activities/step, same model latency (LangGraph not measured)'
        : 'neither LangGraph nor the floor measured: no ratios',
  );
  const list = systems(r);
  const nameWidth = Math.max(42, ...list.map((s) => s.name.length + 2));
  const col = 18;
  const header = ['', ...o.latenciesMs.map((l) => `model ${l} ms`.padStart(col))].join('');
  if (list.length > 0) {
    lines.push('', ''.padEnd(nameWidth) + header.trimStart().padStart(header.length));
    for (const figure of FIGURES) {
      const rows = list
        .map((s) => {
          const cells = o.latenciesMs.map((latency) => {
            const f = s.figures.find((x) => x.latencyMs === latency);
            const v = f ? figure.value(f) : undefined;
            const b = baseline?.find((x) => x.latencyMs === latency);
            const bv = b ? figure.value(b) : undefined;
            const ratio =
              figure.ratio !== false && v !== undefined && bv !== undefined && bv !== 0 && Number.isFinite(v)
                ? ` ${num(v / bv)}×`
                : '';
            return `${num(v)}${ratio}`.padStart(col);
          });
          return { name: s.name, cells, empty: cells.every((c) => c.trim() === '–') };
        })
        .filter((row) => !row.empty);
      if (rows.length === 0) continue;
      lines.push(figure.title(o));
      for (const row of rows) lines.push(`  ${row.name}`.padEnd(nameWidth) + row.cells.join(''));
    }
  }
  lines.push(...formatAgainstAiSdk(r));
  for (const [name, f] of [
    ...(r.project ?? []).map((f) => ['project', f] as const),
    ...(r.projectLocal ?? []).map((f) => ['project with local activities', f] as const),
    ...(r.projectLocalTools ?? []).map((f) => ['project with local tool calls', f] as const),
    ...(r.projectUnstreamed ?? []).map((f) => ['project, unstreamed', f] as const),
    ...(r.projectBaseline ?? []).map((f) => ['project at --baseline', f] as const),
    ...(r.aiSdk ?? []).map((f) => ['@temporalio/ai-sdk', f] as const),
  ]) {
    const a = f.history?.anatomy;
    if (!a) continue;
    const acts = Object.entries(a.activities)
      .map(
        ([type, v]) =>
          `${type.replace(/^durableAgent\./, '')} ×${v.startToClose.count} wait ${num(v.scheduleToStart.p50)} / run ${num(v.startToClose.p50)}`,
      )
      .join('; ');
    lines.push(
      '',
      `Where a ${name} step's time goes, model ${f.latencyMs} ms (one turn's history, p50 ms): ` +
        `${num(f.history!.activitiesPerStep)} activities, ${num(f.history!.localActivitiesPerStep)} local activities and ${num(f.history!.workflowTasksPerStep)} workflow tasks/step, each task waiting ${num(a.workflowTaskScheduleToStart.p50)} (p90 ${num(a.workflowTaskScheduleToStart.p90)}) ` +
        `and running ${num(a.workflowTaskStartToClose.p50)}; activity done → next workflow task started ${num(a.activityCompletedToNextTaskStart.p50)} ` +
        `(p90 ${num(a.activityCompletedToNextTaskStart.p90)}); ${acts}`,
    );
  }
  if (r.waiting) {
    const w = r.waiting;
    lines.push(
      '',
      `Waiting conversations: ${w.conversations} waiting for approval: worker RSS ${num(w.idleRssMiB)} MiB idle → ${num(w.waitingRssMiB)} MiB ` +
        `(${num(w.kibPerWaitingConversation)} KiB each; peak ${num(w.peakRssMiB)} MiB; ${num(w.settledRssMiB)} MiB a minute later, idle; ` +
        `worker cache ${w.workerCache.size} conversations); ` +
        `started ${w.startConcurrency} at a time in ${num(w.allWaitingMs / 1000)} s (sent in ${num(w.sendMs / 1000)} s; ` +
        `${num(w.cpuPerConversation.worker)} ms worker CPU each); approval → answer p50 ${num(w.approvals.p50Ms)} ms, max ${num(w.approvals.maxMs)} ms (${w.approvals.count} approved)`,
    );
  }
  if (r.coldStart && r.coldStart.length > 0) lines.push('', formatColdStarts(r.coldStart));
  if (r.startUp && r.startUp.length > 0) {
    const say = (s: StartUp): string => `${s.kind} ready ${num(s.readyMs)} ms, first answer ${num(s.firstAnswerMs)} ms`;
    lines.push(
      '',
      `npm start with nothing configured (its own dev server, PostgreSQL, demo model): ${r.startUp.map(say).join('; ')}`,
    );
  }
  if (r.interrupts && r.interrupts.length > 0) {
    lines.push(
      '',
      'A cancel while a model call runs 30 s (sent 0–4 s after the call began; to the turn seen cancelled), beside a load of 5-step turns, 200 ms model:',
    );
    for (const f of r.interrupts) {
      const cpu = f.load.cpuPerStep;
      lines.push(
        `  ${MODE_LABELS[f.mode]}, task timeout ${f.taskTimeoutMs} ms: p50 ${num(f.p50Ms)} ms, p90 ${num(f.p90Ms)}, max ${num(f.maxMs)} ` +
          `(${f.latencyMs.length} cancels that took effect); a running local call renews its task ${num(f.renewalsPerSecond)}×/s; ` +
          `load of ${f.load.conversations} conversations ${num(f.load.stepsPerSecond)} steps/s, CPU ms/step worker ${num(cpu.worker)}, server ${num(cpu.temporal)}, PostgreSQL ${num(cpu.postgres)}; ` +
          `${f.workflowTaskTimeouts} workflow tasks timed out, ${f.repeatedModelCalls} model calls repeated; ` +
          `cancels not in effect after a minute: ${f.stuck.firstTurn} of ${Math.ceil(f.samples / 2)} in a first turn, ${f.stuck.laterTurn} of ${Math.floor(f.samples / 2)} in a later one; load turns not answered in a minute: ${f.stuck.loadTurns}` +
          (f.queryFailures > 0 ? `; ${f.queryFailures} state queries failed (${f.lastQueryFailure})` : ''),
      );
    }
  }
  for (const w of r.warnings) lines.push('', `WARNING: ${w}`);
  for (const f of r.failedParts) lines.push('', `FAILED: part ${f.part} (no figures): ${f.error}`);
  return lines.join('\n');
}

/** Writes `bench-results.json` into `dir`; returns its path. */
export function writeResults(dir: string, r: BenchResults): string {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'bench-results.json');
  fs.writeFileSync(file, `${JSON.stringify(r, null, 2)}\n`);
  return file;
}

/**
 * Warnings from the CPU figures: other processes busy on the machine during a
 * phase skew every figure of it. One line per system whose phases saw other
 * processes use more than 10% of the CPU time the measured processes used.
 */
export function contentionWarnings(r: BenchResults): string[] {
  const warnings: string[] = [];
  const check = (name: string, figures: SystemFigures[] | undefined): void => {
    const hit: string[] = [];
    for (const f of figures ?? []) {
      for (const [phase, res] of [
        ['1', f.single],
        [String(r.options.mediumConcurrency), f.medium],
        [String(r.options.highConcurrency), f.high],
      ] as const) {
        const cpu = res.cpuPerStep;
        if (!cpu) continue;
        const ours = (cpu.worker ?? 0) + cpu.temporal + cpu.postgres + cpu.driver;
        const steps = res.turns * res.stepsPerTurn;
        const busyOthers = cpu.other > 0.1 * ours && cpu.other * steps > 1_000;
        const stolen = cpu.steal > 0.1 * ours && cpu.steal * steps > 1_000;
        if (busyOthers || stolen) {
          const who = (cpu.topOthers ?? []).map((p) => `${p.name} ${p.pid}`).join(', ');
          hit.push(
            `${f.latencyMs} ms/${phase} conv.: others ${num(cpu.other)}${who ? ` (${who})` : ''}, hypervisor steal ${num(cpu.steal)}, vs ours ${num(ours)}`,
          );
        }
      }
    }
    if (hit.length > 0) {
      warnings.push(
        `${name}: the machine was not the bench's alone (CPU ms/step, per model latency/concurrency): ${hit.join('; ')}`,
      );
    }
  };
  check('project', r.project);
  check('project, local activities', r.projectLocal);
  check('project, local tool calls', r.projectLocalTools);
  check('project, unstreamed', r.projectUnstreamed);
  check('project at --baseline', r.projectBaseline);
  check('@temporalio/ai-sdk', r.aiSdk);
  for (const l of r.langgraph ?? []) check(`LangGraph (${l.durability})`, l.perLatency);
  for (const f of r.floor ?? []) check(`floor ${f.activitiesPerStep}`, f.perLatency);
  for (const p of r.plain ?? []) check(p.postgres ? 'plain + PostgreSQL' : 'plain', p.perLatency);
  if (
    r.waiting &&
    r.waiting.cpuPerConversation.other >
      0.1 * ((r.waiting.cpuPerConversation.worker ?? 0) + r.waiting.cpuPerConversation.temporal)
  ) {
    warnings.push(
      `waiting: other processes were busy while the conversations started (${num(r.waiting.cpuPerConversation.other)} ms CPU per conversation)`,
    );
  }
  return warnings;
}
