/**
 * The HTTP API of the `npm start` running on this machine, as the CLI looks
 * for it to decide through: found through the runtime file of the CLI's data
 * folder, whether that `npm start` embeds Temporal or works on a team's
 * cluster, and used only when it serves the CLI's own target (Temporal
 * address, namespace and task queue). A CLI pointed at another cluster, or
 * another task queue, never sends its decisions (nor the local approver's
 * token) to that API. Pure, so it is tested alone.
 */
import type { WorkerConfig } from '../app/config';
import type { RuntimeInfo } from '../app/runtime-file';
import { resolveCliTarget, type CliTarget } from './target';

/** What a running `npm start` must serve for the CLI to use its API. */
export type ApiTarget = Pick<CliTarget, 'temporalAddress' | 'namespace' | 'taskQueue'>;

/** What the CLI found of an API beside it. */
export type RunningApi =
  /** No `npm start` runs with the CLI's data folder. */
  | { found: 'nothing'; dataDir: string }
  /** One runs, for another Temporal address, namespace or task queue than the CLI's: its API is not used. */
  | { found: 'other-target'; runtime: RuntimeInfo; target: ApiTarget }
  /** One runs for the CLI's target, with no API listening (`AGENT_API_PORT=off`, or still starting). */
  | { found: 'no-api'; runtime: RuntimeInfo }
  /** Its API, and its development tokens' file when it made them (the CLI then decides as their approver). */
  | { found: 'api'; url: string; developmentTokensFile?: string; runtime: RuntimeInfo };

/**
 * Finds the API of the running `npm start` (`runtime`, from its runtime
 * file) for the target the CLI resolves from `config` and `env` (see
 * {@link resolveCliTarget}): with the same environment as that `npm start`,
 * the CLI finds its API; a target that differs in address, namespace or task
 * queue does not.
 */
export function findRunningApi(
  config: WorkerConfig,
  env: NodeJS.ProcessEnv,
  runtime: RuntimeInfo | undefined,
): RunningApi {
  if (!runtime) return { found: 'nothing', dataDir: config.dataDir };
  const { temporalAddress, namespace, taskQueue } = resolveCliTarget(config, env, runtime);
  const target = { temporalAddress, namespace, taskQueue };
  if (
    runtime.temporalAddress !== temporalAddress ||
    runtime.namespace !== namespace ||
    runtime.taskQueue !== taskQueue
  ) {
    return { found: 'other-target', runtime, target };
  }
  if (!runtime.apiUrl) return { found: 'no-api', runtime };
  return { found: 'api', url: runtime.apiUrl, developmentTokensFile: runtime.developmentTokensFile, runtime };
}

const describeTarget = (t: ApiTarget): string =>
  `task queue "${t.taskQueue}" of namespace "${t.namespace}" at ${t.temporalAddress}`;

/**
 * What to set so the CLI decides through an API, when it found none it can
 * use: `AGENT_API_URL` (with the API's URL when it is known) and
 * `AGENT_API_TOKEN`, and why the running `npm start`'s API was not used.
 */
export function howToDecideThroughApi(running: RunningApi): string {
  const set = (url?: string): string =>
    `To decide from this CLI, set ${url ? `AGENT_API_URL=${url}` : "AGENT_API_URL to the URL of the HTTP API beside these workers (npm start's or npm run api's)"}` +
    " and AGENT_API_TOKEN to an approver's token";
  switch (running.found) {
    case 'nothing':
      return `${set()}: no npm start runs with this CLI's data folder (${running.dataDir}, AGENT_DATA_DIR) to find its API.`;
    case 'other-target': {
      const { runtime, target } = running;
      return (
        `${set()}: the npm start running here (pid ${runtime.pid}) serves ${describeTarget(runtime)}, not this CLI's ${describeTarget(target)}, ` +
        `so its API${runtime.apiUrl ? ` at ${runtime.apiUrl}` : ''} is not used. ` +
        "To decide through it, run the CLI with that npm start's TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and TEMPORAL_TASK_QUEUE."
      );
    }
    case 'no-api':
      return `${set()}: the npm start running here (pid ${running.runtime.pid}) has no HTTP API listening (AGENT_API_PORT=off, or it is still starting).`;
    case 'api':
      return `${set(running.url)} (from AGENT_API_TOKENS_FILE or your identity provider): the npm start running here serves its API there, with tokens this CLI does not hold.`;
  }
}
