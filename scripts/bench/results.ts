/** What one run of the bench measured: the record written to `bench-results.json`, read by its report. */
import type { ColdStart } from './cold-start';
import type { StartUp } from './startup';
import type { FloorFigures } from './floor';
import type { InterruptFigures } from './interrupts';
import type { LangGraphFigures } from './langgraph';
import type { MachineInfo } from './machine';
import type { PlainFigures } from './plain';
import type { SystemFigures } from './phases';
import type { WaitingFigures } from './waiting';

/** Everything one run measured, as written to `bench-results.json`. */
export interface BenchResults {
  startedAt: string;
  durationMs: number;
  options: {
    quick: boolean;
    steps: number;
    latenciesMs: number[];
    parts: string[];
    singleTurns: number;
    mediumConcurrency: number;
    mediumRounds: number;
    highConcurrency: number;
    waiting: number;
    /** Dynamic config values given to the dev server (none: as `npm start` runs it). */
    dynamicConfig: string[];
    /** SQLite pragmas given to the dev server (none: as `npm start` runs it). */
    sqlitePragmas: string[];
    /** The Temporal server the run used. */
    temporal: 'dev server' | 'cluster';
    /** How the project's worker processes ran: compiled (`--compiled`) or through tsx, as `npm start` runs them. */
    projectWorker: 'compiled (build/main.js)' | 'npm start (scripts/start-worker.mjs)';
    /** The git revision of `--baseline`, when given. */
    baseline?: string;
  };
  /** What each figure means. */
  definitions: Record<string, string>;
  machine: MachineInfo;
  project?: SystemFigures[];
  /** The project with `localActivities: { modelCalls: true, idempotentTools: true }`. */
  projectLocal?: SystemFigures[];
  /**
   * The project with `localActivities: { idempotentTools: true }`: model calls ordinary activities, tool calls local
   * ones.
   */
  projectLocalTools?: SystemFigures[];
  /** The project with its model answers unstreamed (`model.stream: false`). */
  projectUnstreamed?: SystemFigures[];
  /** The worker of `--baseline <rev>`, measured as the project is. */
  projectBaseline?: SystemFigures[];
  /** Temporal's own AI integration, `@temporalio/ai-sdk`: `generateText` with the tool run as an activity. */
  aiSdk?: SystemFigures[];
  /** LangGraph JS + PostgresSaver, durability "async" (its default) and "sync". */
  langgraph?: LangGraphFigures[];
  floor?: FloorFigures[];
  plain?: PlainFigures[];
  waiting?: WaitingFigures;
  coldStart?: ColdStart[];
  /** `npm start`'s process with nothing configured: a fresh data folder, then warm starts on it. */
  startUp?: StartUp[];
  /** A cancel during a long model call, by mode and workflow task timeout, under load. */
  interrupts?: InterruptFigures[];
  /** Warnings about the run (e.g. other processes busy on the machine). */
  warnings: string[];
  /** Parts that threw (their figures are missing; the others were still measured). */
  failedParts: { part: string; error: string }[];
}
