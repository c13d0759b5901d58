/**
 * A Temporal dev server and an embedded PostgreSQL server started side by
 * side, for the scripts that run apart from the test suite (the chaos run,
 * the bench). If one fails to start, the other is stopped before the error
 * is thrown; once both run, stopping them is the caller's.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { EmbeddedPostgresServer } from '../../src/db/embedded-postgres';
import { startDevServer, type DevServer, type DevServerOptions } from '../../src/app/temporal-server';
import { startTemporalCluster, type TemporalCluster } from './temporal-cluster';

/**
 * Starts both; PostgreSQL keeps its cluster in `<tmp>/<label>-pg-<runId>`
 * with database `database`. With `restartablePostgres` the cluster outlives a
 * stop (so {@link restartPostgres} can start it again; {@link stopPostgres}
 * still removes it).
 */
export async function startLocalServers(options: {
  temporal: DevServerOptions;
  label: string;
  runId: string;
  database: string;
  restartablePostgres?: boolean;
}): Promise<{ temporal: DevServer; postgres: EmbeddedPostgresServer }> {
  // Imported only when used: embedded-postgres installs process exit hooks as soon as it is loaded.
  const { startEmbeddedPostgres } = await import('../../src/db/embedded-postgres');
  const [temporal, postgres] = await Promise.allSettled([
    startDevServer(options.temporal),
    startEmbeddedPostgres({
      dataDir: path.join(os.tmpdir(), `${options.label}-pg-${options.runId}`),
      database: options.database,
      ephemeral: !options.restartablePostgres,
    }),
  ]);
  if (temporal.status === 'fulfilled' && postgres.status === 'fulfilled')
    return { temporal: temporal.value, postgres: postgres.value };
  if (temporal.status === 'fulfilled') await temporal.value.stop().catch(() => undefined);
  if (postgres.status === 'fulfilled') await stopPostgres(postgres.value).catch(() => undefined);
  throw temporal.status === 'rejected' ? temporal.reason : (postgres as PromiseRejectedResult).reason;
}

/**
 * PostgreSQL as {@link startLocalServers} starts it, then a Temporal cluster
 * of the server's own binaries on it (test/support/temporal-cluster.ts):
 * PostgreSQL persistence and visibility, 4 history shards, mutual TLS. A
 * restart of that PostgreSQL stops the cluster's persistence too.
 */
export async function startLocalCluster(options: {
  label: string;
  runId: string;
  database: string;
  restartablePostgres?: boolean;
  dir: string;
}): Promise<{ temporal: TemporalCluster; postgres: EmbeddedPostgresServer }> {
  const { startEmbeddedPostgres } = await import('../../src/db/embedded-postgres');
  const postgres = await startEmbeddedPostgres({
    dataDir: path.join(os.tmpdir(), `${options.label}-pg-${options.runId}`),
    database: options.database,
    ephemeral: !options.restartablePostgres,
  });
  try {
    const temporal = await startTemporalCluster({ postgresAdminUrl: postgres.databaseUrl, dir: options.dir });
    return { temporal, postgres };
  } catch (err) {
    await stopPostgres(postgres).catch(() => undefined);
    throw err;
  }
}

/** Stops an embedded server started by {@link startLocalServers} and removes its cluster. */
export async function stopPostgres(pg: EmbeddedPostgresServer): Promise<void> {
  await pg.stop();
  fs.rmSync(pg.dataDir, { recursive: true, force: true });
}

/** Starts again, on the same port and cluster, a server started with `restartablePostgres` and stopped. */
export async function restartPostgres(
  stopped: EmbeddedPostgresServer,
  database: string,
): Promise<EmbeddedPostgresServer> {
  const { startEmbeddedPostgres } = await import('../../src/db/embedded-postgres');
  return startEmbeddedPostgres({ dataDir: stopped.dataDir, port: stopped.port, database, ephemeral: false });
}
