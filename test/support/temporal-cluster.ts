/**
 * A Temporal cluster from the server's own binaries, not the dev server: the
 * `temporal-server` scripts/ensure-temporal-server.sh builds from source, with
 * PostgreSQL persistence and SQL visibility (two databases on a PostgreSQL
 * server the caller runs), 4 history shards, and mutual TLS on the frontend
 * (a CA made for the run). It is configured by deploy/temporal/config.yaml,
 * the file the compose stack mounts, its schema is made by
 * deploy/temporal/setup-schema.sh and its namespace by
 * deploy/temporal/setup-namespace.sh, as the stack does.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { findTemporalCli } from '../../src/app/temporal-server';
import {
  connectionOptions,
  loadTemporalConnection,
  type TemporalConnectionSettings,
} from '../../src/app/temporal-connection';
import { isPortFree } from '../../src/common/free-port';
import { makeCertificates, type TestCertificates } from './tls';

const run = promisify(execFile);
const ROOT = path.join(__dirname, '..', '..');
const DEPLOY = path.join(ROOT, 'deploy', 'temporal');

/** What {@link startTemporalCluster} needs. */
export interface TemporalClusterOptions {
  /** An admin connection string of the PostgreSQL server to keep Temporal's two databases on. */
  postgresAdminUrl: string;
  /**
   * Prefix of the databases' names (`<prefix>` and `<prefix>_visibility`); unique per cluster on one server. Default
   * `temporal`.
   */
  databasePrefix?: string;
  /** History shards (fixed once the databases exist). Default 4. */
  shards?: number;
  /** Where the certificates and the server's log go; a fresh temporary folder when unset. */
  dir?: string;
  /** The namespace made as the compose stack makes it. Default `default`. */
  namespace?: string;
}

/** A running cluster. */
export interface TemporalCluster {
  /** host:port of the frontend (TLS). */
  address: string;
  namespace: string;
  /**
   * The standard environment variables a client or worker process needs to reach it (address, CA, client certificate).
   */
  clientEnv: Record<string, string>;
  /** The same as the SDK's connection options (`tls`). */
  connection: TemporalConnectionSettings;
  certificates: TestCertificates;
  /** The server's version (package.json, `config.temporalServerVersion`). */
  serverVersion: string;
  /** The server's process id. */
  pid(): number | undefined;
  /**
   * Stops the server process (SIGKILL with `kill`, else SIGTERM) and starts it again on the same ports and databases;
   * resolves once it answers.
   */
  restart(options?: { kill?: boolean; downMs?: number }): Promise<void>;
  stop(): Promise<void>;
}

/** Where the built server lives (built on first use: a few minutes cold, a second when built before). */
export async function ensureTemporalServer(): Promise<string> {
  const { stdout } = await run('bash', [path.join(ROOT, 'scripts', 'ensure-temporal-server.sh')], {
    maxBuffer: 16 * 1024 * 1024,
    timeout: 30 * 60_000,
  });
  return stdout.trim().split('\n').pop()!;
}

/** Starts the cluster; resolves once its namespace takes workflows. */
export async function startTemporalCluster(options: TemporalClusterOptions): Promise<TemporalCluster> {
  const serverDir = await ensureTemporalServer();
  const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'agent-cluster-'));
  const certificates = makeCertificates();
  const namespace = options.namespace ?? 'default';
  const prefix = options.databasePrefix ?? 'temporal';
  const pg = new URL(options.postgresAdminUrl);
  const ports = Object.fromEntries(
    await Promise.all(
      [
        'FRONTEND_GRPC_PORT',
        'FRONTEND_HTTP_PORT',
        'FRONTEND_MEMBERSHIP_PORT',
        'MATCHING_GRPC_PORT',
        'MATCHING_MEMBERSHIP_PORT',
        'HISTORY_GRPC_PORT',
        'HISTORY_MEMBERSHIP_PORT',
        'WORKER_GRPC_PORT',
        'WORKER_MEMBERSHIP_PORT',
      ].map(async (name) => [name, String(await serverPort())] as const),
    ),
  );
  const database = {
    POSTGRES_SEEDS: pg.hostname,
    DB_PORT: pg.port || '5432',
    POSTGRES_USER: decodeURIComponent(pg.username),
    DBNAME: prefix,
    VISIBILITY_DBNAME: `${prefix}_visibility`,
  };
  const password = decodeURIComponent(pg.password);
  await run('sh', [path.join(DEPLOY, 'setup-schema.sh')], {
    env: {
      ...process.env,
      ...database,
      SQL_PASSWORD: password,
      TEMPORAL_SQL_TOOL: path.join(serverDir, 'bin', 'temporal-sql-tool'),
      TEMPORAL_SCHEMA_DIR: path.join(serverDir, 'schema', 'postgresql', 'v12'),
    },
    maxBuffer: 16 * 1024 * 1024,
  });

  const serverEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    ...database,
    POSTGRES_PWD: password,
    NUM_HISTORY_SHARDS: String(options.shards ?? 4),
    BIND_ON_IP: '127.0.0.1',
    ...ports,
    TEMPORAL_TLS_FRONTEND_CERT: certificates.serverCert,
    TEMPORAL_TLS_FRONTEND_KEY: certificates.serverKey,
    TEMPORAL_TLS_CLIENT_CA_CERT: certificates.ca,
    TEMPORAL_TLS_SERVER_CA_CERT: certificates.ca,
    TEMPORAL_TLS_SYSTEM_WORKER_CERT: certificates.clientCert,
    TEMPORAL_TLS_SYSTEM_WORKER_KEY: certificates.clientKey,
    TEMPORAL_TLS_FRONTEND_SERVER_NAME: 'localhost',
    DYNAMIC_CONFIG_FILE_PATH: path.join(DEPLOY, 'dynamicconfig', 'development-sql.yaml'),
    LOG_LEVEL: 'warn',
  };
  const address = `127.0.0.1:${ports.FRONTEND_GRPC_PORT}`;
  const clientEnv: Record<string, string> = {
    TEMPORAL_ADDRESS: address,
    TEMPORAL_NAMESPACE: namespace,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: certificates.ca,
    TEMPORAL_TLS_CLIENT_CERT_PATH: certificates.clientCert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: certificates.clientKey,
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
  };
  const connection = loadTemporalConnection(clientEnv);
  const logPath = path.join(dir, 'temporal-server.log');

  let child: ChildProcess | undefined;
  const launch = () => {
    const log = fs.openSync(logPath, 'a');
    child = spawn(
      path.join(serverDir, 'bin', 'temporal-server'),
      ['--config-file', path.join(DEPLOY, 'config.yaml'), '--allow-no-auth', 'start'],
      {
        env: serverEnv,
        stdio: ['ignore', log, log],
      },
    );
    fs.closeSync(log);
    const started = child;
    started.on('exit', () => {
      if (child === started) child = undefined;
    });
  };
  const exited = (proc: ChildProcess) =>
    new Promise<void>((resolve) =>
      proc.exitCode !== null || proc.signalCode !== null ? resolve() : proc.once('exit', () => resolve()),
    );
  const untilAnswering = async (deadlineMs: number) => {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      if (!child) throw new Error(`the Temporal server exited while starting; its log, ${logPath}:\n${tail(logPath)}`);
      try {
        const conn = await Connection.connect({ address, ...connectionOptions(connection), connectTimeout: 2_000 });
        try {
          await conn.workflowService.getSystemInfo({});
          return;
        } finally {
          await conn.close();
        }
      } catch (err) {
        if (Date.now() > deadline)
          throw new Error(
            `the Temporal server at ${address} did not answer in ${deadlineMs} ms: ${(err as Error).message}; its log, ${logPath}:\n${tail(logPath)}`,
            { cause: err },
          );
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  };

  launch();
  await untilAnswering(120_000);
  const temporalCli = findTemporalCli();
  if (!temporalCli) throw new Error('the temporal CLI is missing: run scripts/ensure-temporal-cli.sh');
  await run('sh', [path.join(DEPLOY, 'setup-namespace.sh')], {
    env: {
      ...process.env,
      ...clientEnv,
      PATH: `${path.dirname(temporalCli)}:${process.env.PATH ?? ''}`,
      TEMPORAL_NAMESPACE_RETENTION: '1d',
    },
    maxBuffer: 16 * 1024 * 1024,
    timeout: 240_000,
  });
  await untilNamespaceTakesWork(address, connection, namespace);

  return {
    address,
    namespace,
    clientEnv,
    connection,
    certificates,
    serverVersion: path.basename(serverDir),
    pid: () => child?.pid,
    async restart({ kill = false, downMs = 0 } = {}) {
      const proc = child;
      if (proc) {
        proc.kill(kill ? 'SIGKILL' : 'SIGTERM');
        await exited(proc);
      }
      if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
      launch();
      await untilAnswering(120_000);
    },
    async stop() {
      const proc = child;
      child = undefined;
      if (proc) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
        await exited(proc);
        clearTimeout(timer);
      }
      fs.rmSync(certificates.dir, { recursive: true, force: true });
      if (!options.dir) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A namespace made a moment ago is known to the frontend only once its
 * namespace cache has refreshed (seconds on a real server, at once on the
 * dev server): waits until listing its workflows succeeds.
 */
async function untilNamespaceTakesWork(
  address: string,
  settings: TemporalConnectionSettings,
  namespace: string,
): Promise<void> {
  const conn = await Connection.connect({ address, ...connectionOptions(settings) });
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await conn.workflowService.listWorkflowExecutions({ namespace, pageSize: 1 });
        return;
      } catch (err) {
        if (Date.now() > deadline)
          throw new Error(`namespace ${namespace} was not usable after 60 s: ${(err as Error).message}`, {
            cause: err,
          });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  } finally {
    await conn.close();
  }
}

/**
 * A free port for the server below 32768: Temporal's PostgreSQL schema keeps
 * a member's ports as `smallint` (cluster_membership.rpc_port), so a server
 * on an ephemeral port above it cannot join its own cluster
 * ("value … is out of range for type smallint").
 */
async function serverPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await isPortFree(port)) return port;
  }
}

/** The last lines of a log file. */
function tail(file: string, lines = 40): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
