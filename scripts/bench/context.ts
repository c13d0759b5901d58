/** What every part of the bench works with. */
import type { Cleanup } from './cleanup';
import type { BenchOptions } from './options';
import type { Stack } from './stack';
import { benchToolsModule } from './worker-process';

/** The run's servers, options, cleanups and log. */
export interface BenchContext {
  stack: Stack;
  options: BenchOptions;
  cleanup: Cleanup;
  /** Progress line (to stderr). */
  log: (line: string) => void;
  /** Short random tag of the run, in every id and task queue. */
  runTag: string;
}

/**
 * Environment of a project worker process (`src/main.ts`) on `taskQueue`, against the run's servers and the bench
 * tools.
 */
export function projectWorkerEnv(ctx: BenchContext, taskQueue: string): Record<string, string> {
  return {
    ...ctx.stack.temporal.clientEnv,
    TEMPORAL_TASK_QUEUE: taskQueue,
    DATABASE_URL: ctx.stack.databaseUrl,
    OPENAI_API_KEY: 'bench-key',
    OPENAI_BASE_URL: ctx.stack.model.url,
    OPENAI_MODEL: 'scripted-model',
    AGENT_TOOLS_MODULE: benchToolsModule(),
  };
}

/**
 * Fails when the scripted model server answered any request with an error (the request was invalid), then forgets the
 * requests.
 */
export function checkModelRequests(ctx: BenchContext, phase: string): number {
  const model = ctx.stack.model;
  const invalid = model.invalidRequests();
  const count = model.requests.length;
  if (invalid.length > 0) {
    throw new Error(
      `${phase}: the model server refused ${invalid.length} request(s), e.g. ${JSON.stringify(invalid[0].error?.body).slice(0, 300)}`,
    );
  }
  model.requests.length = 0; // the recorded bodies would only grow
  return count;
}
