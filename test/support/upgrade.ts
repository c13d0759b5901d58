/**
 * Live upgrades in tests: the workflow code of an earlier commit, bundled from
 * its sources as its workers bundled it, and workers that run a given bundle
 * (a conversation begun by the earlier code, finished by the current one).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  bundleWorkflowCode,
  NativeConnection,
  type WorkflowBundle,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import { createOpenAIClient } from '../../src/activities/openai-client';
import { createAgentWorker } from '../../src/worker/worker';
import { backofficeTools } from '../../src/demo/tools';
import type { Harness } from './harness';

const ROOT = path.join(__dirname, '..', '..');

/**
 * The sources of `commit` (`src/` and `package.json`, with this checkout's
 * `node_modules`) in a temporary folder, to run or bundle as that commit's
 * workers did; `remove()` deletes it. Needs the git history (a full clone).
 */
export function previousSources(commit: string): { dir: string; remove(): void } {
  try {
    execFileSync('git', ['-C', ROOT, 'cat-file', '-e', `${commit}^{commit}`], { stdio: 'ignore' });
  } catch {
    throw new Error(
      `This test runs the code of commit ${commit} from git history; this checkout lacks it (a shallow clone?). Run "git fetch --unshallow".`,
    );
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `agent-code-${commit.slice(0, 12)}-`));
  const archive = execFileSync('git', ['-C', ROOT, 'archive', '--format=tar', commit, 'src', 'package.json']);
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Bundles the workflow code of `commit`'s `src/` (see {@link previousSources}). */
export async function bundlePreviousWorkflowCode(commit: string): Promise<WorkflowBundle> {
  const { dir, remove } = previousSources(commit);
  try {
    return await bundleWorkflowCode({
      workflowsPath: path.join(dir, 'src', 'workflows', 'index.ts'),
      workflowInterceptorModules: [path.join(dir, 'src', 'workflows', 'interceptors.ts')],
      logger: {
        log: () => undefined,
        trace: () => undefined,
        debug: () => undefined,
        info: () => undefined,
        warn: () => undefined,
        error: console.error,
      },
    });
  } finally {
    remove();
  }
}

/** Runs a worker (the standalone one) for the harness's task queue on `workflowBundle` until `stop()`. */
export async function runWorkerOn(
  h: Harness,
  workflowBundle: WorkflowBundleOption,
): Promise<{ stop(): Promise<void> }> {
  const connection = await NativeConnection.connect({ address: h.temporalAddress });
  const worker = await createAgentWorker({
    connection,
    namespace: 'default',
    taskQueue: h.taskQueue,
    workflowBundle,
    database: { pool: h.pool },
    model: { name: 'scripted-model', client: createOpenAIClient({ apiKey: 'test-key', baseUrl: h.model.url }) },
    tools: backofficeTools(),
  });
  const running = worker.run();
  return {
    stop: async () => {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}
