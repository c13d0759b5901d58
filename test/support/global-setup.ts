/**
 * Starts what every test file shares, once per run: a real Temporal dev
 * server, a real (embedded) PostgreSQL server, and the workflow bundle.
 * Each test file then makes its own database, model server and worker.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres';
import { startDevServer } from '../../src/app/temporal-server';
import { WORKFLOW_INTERCEPTOR_MODULES, WORKFLOWS_PATH } from '../../src/worker/plugin';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    postgresAdminUrl: string;
    workflowBundlePath: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-test-'));
  const [temporal, postgres, bundle] = await Promise.all([
    startDevServer(),
    startEmbeddedPostgres({ dataDir: path.join(scratch, 'postgres'), database: 'postgres', ephemeral: true }),
    bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES, logger: quietLogger }),
  ]);
  const workflowBundlePath = path.join(scratch, 'workflow-bundle.js');
  fs.writeFileSync(workflowBundlePath, bundle.code);
  project.provide('temporalAddress', temporal.address);
  project.provide('postgresAdminUrl', postgres.databaseUrl);
  project.provide('workflowBundlePath', workflowBundlePath);
  return async () => {
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
