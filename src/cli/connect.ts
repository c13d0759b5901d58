/**
 * The CLI's client: Temporal and PostgreSQL found from the environment, or
 * from the runtime file a running `npm start` writes (docs/cli.md), with
 * timeouts that keep every command from hanging.
 */
import { loadConfig } from '../app/config';
import { readRuntimeInfo } from '../app/runtime-file';
import { connectionOptions, EMBEDDED_DEV_SERVER, explainConnectionFailure } from '../app/temporal-connection';
import { AgentClient } from '../client/client';
import { encryptingDataConverter } from '../codec';
import type { Pool } from 'pg';
import { agentTables, type AgentTables } from '../db/schema';
import { resolveCliDatabase, resolveCliTarget } from './target';

/** How long the CLI waits for a worker to answer a query. */
const CLI_QUERY_TIMEOUT_MS = 5_000;

async function connect(): Promise<AgentClient> {
  const config = loadConfig();
  const target = resolveCliTarget(config, process.env, readRuntimeInfo(config.dataDir));
  // A configured server gets the TLS, API key and metadata of Temporal's environment configuration;
  // the embedded dev server of a running `npm start` (found through its runtime file) takes plain connections.
  const settings = target.embedded ? EMBEDDED_DEV_SERVER : config.temporal.connection;
  return explainConnectionFailure(settings, target.temporalAddress, () =>
    AgentClient.connect({
      ...connectionOptions(settings),
      temporalAddress: target.temporalAddress,
      databaseUrl: target.databaseUrl,
      schema: target.schema,
      searchAttributes: target.searchAttributes,
      namespace: target.namespace,
      taskQueue: target.taskQueue,
      // A command never hangs on a conversation no worker answers for: it says so within seconds.
      queryTimeoutMs: CLI_QUERY_TIMEOUT_MS,
      // Nor on a server that does not answer.
      connectTimeoutMs: CLI_QUERY_TIMEOUT_MS,
      // The workers' payload keys: the CLI reads what they encrypted.
      dataConverter: encryptingDataConverter(config.payloadKeys),
    }),
  );
}

/** Runs `action` with a client connected for the CLI's target, closing it afterwards. */
export async function withClient<T>(action: (client: AgentClient) => Promise<T>): Promise<T> {
  const client = await connect();
  try {
    return await action(client);
  } finally {
    await client.close();
  }
}

/**
 * Runs `action` with a pool on the CLI's database (`DATABASE_URL`, else the running `npm start`'s) and its tables,
 * closing it afterwards: for reads of PostgreSQL alone, without Temporal. `pg` is loaded only here.
 */
export async function withDatabase<T>(action: (pool: Pool, tables: AgentTables) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const { databaseUrl, schema } = resolveCliDatabase(config, readRuntimeInfo(config.dataDir));
  const tables = agentTables(schema);
  const { createPool } = await import('../db/pool.js');
  const pool = createPool(databaseUrl, 2);
  try {
    return await action(pool, tables);
  } finally {
    await pool.end();
  }
}
