/**
 * Starts what every test file shares, once per run: a real Temporal server,
 * a real (embedded) PostgreSQL server, and the workflow bundle. Each test
 * file then makes its own database, model server and worker.
 *
 * The Temporal server is the dev server for the `integration` project, and
 * for the `cluster` project the server's own binaries on PostgreSQL with 4
 * history shards and mutual TLS (test/support/temporal-cluster.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres';
import { startDevServer } from '../../src/app/temporal-server';
import { WORKFLOW_INTERCEPTOR_MODULES, WORKFLOWS_PATH } from '../../src/worker/plugin';
import { startTemporalCluster } from './temporal-cluster';
import { WORKER_BUNDLE_CACHE_VARIABLE } from './worker-process';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    /**
     * The standard variables that reach the run's Temporal server (TEMPORAL_ADDRESS, and TEMPORAL_TLS_* for the
     * cluster).
     */
    temporalEnv: Record<string, string>;
    postgresAdminUrl: string;
    workflowBundlePath: string;
  }
}

/** The project whose tests run against the cluster. */
export const CLUSTER_PROJECT = 'cluster';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-test-'));
  const cluster = project.name === CLUSTER_PROJECT;
  // The dev server starts beside PostgreSQL; the cluster needs PostgreSQL first.
  const devServer = cluster ? undefined : startDevServer();
  const [postgres, bundle] = await Promise.all([
    startEmbeddedPostgres({ dataDir: path.join(scratch, 'postgres'), database: 'postgres', ephemeral: true }),
    bundleWorkflowCode({
      workflowsPath: WORKFLOWS_PATH,
      workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
      logger: quietLogger,
    }),
  ]);
  const temporal = cluster
    ? await startTemporalCluster({ postgresAdminUrl: postgres.databaseUrl, dir: scratch })
    : await devServer!.then((s) => ({
        address: s.address,
        clientEnv: { TEMPORAL_ADDRESS: s.address },
        stop: () => s.stop(),
      }));
  const workflowBundlePath = path.join(scratch, 'workflow-bundle.js');
  fs.writeFileSync(workflowBundlePath, bundle.code);
  project.provide('temporalAddress', temporal.address);
  project.provide('temporalEnv', temporal.clientEnv);
  project.provide('postgresAdminUrl', postgres.databaseUrl);
  project.provide('workflowBundlePath', workflowBundlePath);
  // Read by startWorkerProcess in the test files' processes, which inherit this environment.
  process.env[WORKER_BUNDLE_CACHE_VARIABLE] = path.join(scratch, 'worker-bundles');
  return async () => {
    delete process.env[WORKER_BUNDLE_CACHE_VARIABLE];
    await temporal.stop();
    await postgres.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  };
}

const quietLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};
