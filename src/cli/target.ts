/**
 * Where the CLI connects: what the environment configures, else the running
 * `npm start` found through its runtime file. Pure, so it is tested alone.
 */
import type { WorkerConfig } from '../app/config';
import type { RuntimeInfo } from '../app/runtime-file';
import type { SearchAttributeOptions } from '../contract';

/** The servers, namespace, task queue and schema the CLI uses. */
export interface CliTarget {
  temporalAddress: string;
  databaseUrl: string;
  namespace: string;
  taskQueue: string;
  schema: string;
  /** The search attribute groups and prefix the workers use (docs/search-attributes.md). */
  searchAttributes: SearchAttributeOptions;
  /** True when the target is a running `npm start`'s embedded dev server (plain connection). */
  embedded: boolean;
}

/**
 * Resolves the CLI's target. A setting the environment gives wins; one it
 * leaves unset comes from the running `npm start` (so a worker started with
 * `TEMPORAL_TASK_QUEUE=billing` is found without repeating it), and only then
 * from the defaults. Throws when neither says where Temporal and PostgreSQL are.
 */
export function resolveCliTarget(
  config: WorkerConfig,
  env: NodeJS.ProcessEnv,
  runtime: RuntimeInfo | undefined,
): CliTarget {
  const given = (name: string) => (env[name]?.trim() ?? '') !== '';
  const temporalAddress = config.temporal.address ?? runtime?.temporalAddress;
  const databaseUrl = config.databaseUrl ?? runtime?.databaseUrl;
  if (!temporalAddress || !databaseUrl) {
    throw new Error(
      `No running worker found (no ${config.dataDir}/runtime.json) and TEMPORAL_ADDRESS/DATABASE_URL are not both set. Start one with "npm start" in another terminal.`,
    );
  }
  // The running `npm start`'s task queue when the CLI talks to its server.
  const fromRuntime = runtime !== undefined && !config.temporal.address;
  return {
    temporalAddress,
    databaseUrl,
    // The schema goes with the database: a running `npm start`'s when the CLI found its database there.
    schema: config.databaseUrl ? config.databaseSchema : (runtime?.databaseSchema ?? config.databaseSchema),
    // The namespace goes with the server: the running `npm start`'s when the CLI found its server there.
    namespace: config.temporal.address ? config.temporal.namespace : (runtime?.namespace ?? config.temporal.namespace),
    taskQueue: given('TEMPORAL_TASK_QUEUE') || !fromRuntime ? config.temporal.taskQueue : runtime!.taskQueue,
    // The running `npm start`'s prefix and groups go with its server, unless the environment names them.
    searchAttributes:
      given('AGENT_SEARCH_ATTRIBUTE_PREFIX') || given('AGENT_SEARCH_ATTRIBUTES') || !fromRuntime
        ? config.searchAttributes
        : (runtime!.searchAttributes ?? config.searchAttributes),
    embedded: !config.temporal.address,
  };
}

/** The database the CLI reads directly, and the schema of the project's tables in it. */
export interface CliDatabase {
  databaseUrl: string;
  schema: string;
}

/**
 * The database of {@link resolveCliTarget}, for commands that read PostgreSQL alone (`audit export`): `DATABASE_URL`
 * when set, else the running `npm start`'s. No Temporal address is needed. Throws when neither names one.
 */
export function resolveCliDatabase(config: WorkerConfig, runtime: RuntimeInfo | undefined): CliDatabase {
  const databaseUrl = config.databaseUrl ?? runtime?.databaseUrl;
  if (!databaseUrl)
    throw new Error(
      `DATABASE_URL is not set and no running worker was found (no ${config.dataDir}/runtime.json with a database): set DATABASE_URL to the workers' PostgreSQL, or start one with "npm start" in another terminal.`,
    );
  return {
    databaseUrl,
    schema: config.databaseUrl ? config.databaseSchema : (runtime?.databaseSchema ?? config.databaseSchema),
  };
}
