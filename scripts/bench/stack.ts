/**
 * The servers one bench run works against, all on loopback and all its own:
 * the Temporal dev server (the project's `startDevServer`, history in a SQLite
 * file in a temp folder, as `npm start` runs it, without the web UI), or with
 * `--cluster` Temporal's own server binaries on the run's PostgreSQL (4
 * shards, mutual TLS; test/support/temporal-cluster.ts), embedded PostgreSQL
 * (migrated) and the scripted model server.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrate } from '../../src/db/migrations';
import { createPool } from '../../src/db/pool';
import { findTemporalCli } from '../../src/app/temporal-server';
import { connectionOptions } from '../../src/app/temporal-connection';
import type { TLSConfig } from '@temporalio/client';
import { startLocalCluster, startLocalServers, stopPostgres } from '../../test/support/local-servers';
import { startModelServer, type ModelServer } from '../../src/testing';
import type { Cleanup } from './cleanup';
import { commandLine, findProcesses, postmasterPid } from './proc';
import { benchResponder } from './responder';
import type { Pool } from 'pg';

/** The running servers and what is known about them. */
export interface Stack {
  /** Scratch folder of the run (SQLite file, worker data and logs); removed at the end. */
  scratch: string;
  temporal: {
    kind: 'dev server' | 'cluster';
    address: string;
    /** The standard variables that reach it (TEMPORAL_ADDRESS, and TEMPORAL_TLS_* on the cluster). */
    clientEnv: Record<string, string>;
    /** TLS for the SDK's connections (the cluster's CA and client certificate). */
    tls?: TLSConfig;
  };
  /** Pid of the `temporal server start-dev` (or `temporal-server`) process. */
  temporalPid: number;
  temporalInfo: { cliPath: string; version: string; args: string[] };
  databaseUrl: string;
  postgresDataDir: string;
  postmasterPid: number;
  /** A pool of the bench's own (the plain loop, turn detection). */
  pool: Pool;
  model: ModelServer;
}

/**
 * Starts the servers; each is registered with `cleanup` as soon as it runs.
 * `dynamicConfig` (`KEY=VALUE`) tunes the dev server with
 * `--dynamic-config-value` flags; without it the dev server is started as
 * `npm start` starts it; `sqlitePragmas` (`PRAGMA=VALUE`) likewise with
 * `--sqlite-pragma`.
 */
export async function startStack(
  cleanup: Cleanup,
  log: (line: string) => void,
  dynamicConfig: string[] = [],
  sqlitePragmas: string[] = [],
  cluster = false,
): Promise<Stack> {
  if (cluster) return startClusterStack(cleanup, log);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-bench-'));
  cleanup.add('scratch folder', () => fs.rmSync(scratch, { recursive: true, force: true }));
  const cliPath = findTemporalCli(process.env.TEMPORAL_CLI_PATH || undefined);
  if (!cliPath)
    throw new Error('No temporal CLI found: run `bash scripts/ensure-temporal-cli.sh` (npm run bench does).');
  const version = execFileSync(cliPath, ['--version'], { encoding: 'utf8' }).trim();

  const runId = path.basename(scratch).replace(/^agent-bench-/, '');
  const { temporal, postgres } = await startLocalServers({
    temporal: {
      cliPath,
      dbFilename: path.join(scratch, 'temporal.sqlite'),
      extraArgs: [
        ...dynamicConfig.flatMap((kv) => ['--dynamic-config-value', kv]),
        ...sqlitePragmas.flatMap((kv) => ['--sqlite-pragma', kv]),
      ],
    },
    label: 'agent-bench',
    runId,
    database: 'bench',
  });
  cleanup.add('Temporal dev server', () => temporal.stop());
  cleanup.add('PostgreSQL', () => stopPostgres(postgres));

  const port = temporal.address.split(':').pop()!;
  const [temporalPid] = findProcesses(
    (args) => args.includes('start-dev') && args.includes(port) && args.some((a) => a.endsWith('temporal')),
  );
  if (!temporalPid) throw new Error(`Cannot find the pid of the Temporal dev server on port ${port} in /proc.`);
  const { pgPid, pool, model } = await startBenchParts(cleanup, postgres);
  log(
    `Temporal ${temporal.address} (pid ${temporalPid}, ${version.split('\n')[0]}), PostgreSQL port ${postgres.port} (pid ${pgPid}), model ${model.url}`,
  );
  return {
    scratch,
    temporal: { kind: 'dev server', address: temporal.address, clientEnv: { TEMPORAL_ADDRESS: temporal.address } },
    temporalPid,
    temporalInfo: { cliPath, version, args: commandLine(temporalPid) ?? [] },
    databaseUrl: postgres.databaseUrl,
    postgresDataDir: postgres.dataDir,
    postmasterPid: pgPid,
    pool,
    model,
  };
}

/** The stack on Temporal's own server binaries (PostgreSQL persistence on the run's server, 4 shards, mutual TLS). */
async function startClusterStack(cleanup: Cleanup, log: (line: string) => void): Promise<Stack> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-bench-'));
  cleanup.add('scratch folder', () => fs.rmSync(scratch, { recursive: true, force: true }));
  const runId = path.basename(scratch).replace(/^agent-bench-/, '');
  const { temporal, postgres } = await startLocalCluster({
    label: 'agent-bench',
    runId,
    database: 'bench',
    dir: scratch,
  });
  cleanup.add('Temporal cluster', () => temporal.stop());
  cleanup.add('PostgreSQL', () => stopPostgres(postgres));
  const temporalPid = temporal.pid();
  if (!temporalPid) throw new Error('The Temporal server process is not running.');
  const { pgPid, pool, model } = await startBenchParts(cleanup, postgres);
  const args = commandLine(temporalPid) ?? [];
  const version = `temporal-server ${temporal.serverVersion} (4 history shards, PostgreSQL persistence and visibility, mutual TLS)`;
  log(
    `Temporal cluster ${temporal.address} (pid ${temporalPid}, ${version}), PostgreSQL port ${postgres.port} (pid ${pgPid}), model ${model.url}`,
  );
  const { tls } = connectionOptions(temporal.connection);
  return {
    scratch,
    temporal: {
      kind: 'cluster',
      address: temporal.address,
      clientEnv: temporal.clientEnv,
      tls: typeof tls === 'object' && tls ? tls : undefined,
    },
    temporalPid,
    temporalInfo: { cliPath: args[0] ?? '', version, args },
    databaseUrl: postgres.databaseUrl,
    postgresDataDir: postgres.dataDir,
    postmasterPid: pgPid,
    pool,
    model,
  };
}

/**
 * What both stacks add to their PostgreSQL: its postmaster's pid, the bench's own migrated pool, and the scripted model
 * server.
 */
async function startBenchParts(
  cleanup: Cleanup,
  postgres: { dataDir: string; databaseUrl: string },
): Promise<{ pgPid: number; pool: Pool; model: ModelServer }> {
  const pgPid = postmasterPid(postgres.dataDir);
  if (!pgPid) throw new Error(`Cannot read the PostgreSQL postmaster pid in ${postgres.dataDir}.`);
  const pool = createPool(postgres.databaseUrl, 10);
  cleanup.add('bench PostgreSQL pool', () => pool.end());
  await migrate(pool);
  const model = await startModelServer({ responder: benchResponder });
  cleanup.add('model server', () => model.close());
  return { pgPid, pool, model };
}
