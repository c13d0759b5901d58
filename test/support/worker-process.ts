/** Runs the real worker entry point (`src/main.ts`) as a child process, as `npm start` would. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { workerNodeFlags, workerProcessEnv } from '../../src/app/worker-node-options';
import { WORKFLOW_BUNDLE_FILES, workflowBundleFingerprint } from '../../src/worker/workflow-bundle';

const ROOT = path.join(__dirname, '..', '..');

/**
 * The variable naming a folder where worker processes of one test run leave
 * their workflow bundle for the next (set by test/support/global-setup.ts to
 * a folder the run removes at its end).
 */
export const WORKER_BUNDLE_CACHE_VARIABLE = 'TEST_WORKER_BUNDLE_CACHE';

/**
 * The environment of a start with nothing configured: embedded Temporal and PostgreSQL, the demo model, development
 * tokens and key.
 */
export const NOTHING_CONFIGURED = {
  TEMPORAL_ADDRESS: '',
  DATABASE_URL: '',
  OPENAI_API_KEY: '',
  OPENAI_BASE_URL: '',
  TEMPORAL_NAMESPACE: '',
  TEMPORAL_TASK_QUEUE: '',
  AGENT_API_TOKENS_FILE: '',
  AGENT_DECISION_KEYS: '',
  AGENT_DEFAULT_AGENT: '',
};

/** A worker process started by a test. */
export interface WorkerProcess {
  child: ChildProcess;
  /** Everything the process printed so far. */
  output(): string;
  /** Sends `signal` and waits for the process to exit; returns its exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `src/main.ts` with the given environment and waits until it reports
 * it is running. `root`: the sources to run, this checkout's by default (an
 * earlier commit's: `previousSources` in `upgrade.ts`).
 */
export async function startWorkerProcess(
  env: Record<string, string>,
  readyTimeoutMs = 60_000,
  root = ROOT,
): Promise<WorkerProcess> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-worker-'));
  // A worker of this checkout in a data folder of ours reuses the bundle an earlier one made, as a restarted
  // `npm start` does; only the first bundles (seconds of CPU). Workers with their own folder or bundle extras bundle as
  // before.
  const bundleCache = root === ROOT && !env.AGENT_DATA_DIR ? process.env[WORKER_BUNDLE_CACHE_VARIABLE] : undefined;
  const fingerprint = bundleCache ? workflowBundleFingerprint() : undefined;
  if (bundleCache && fingerprint) seedBundle(bundleCache, fingerprint, dataDir);
  // One process (no tsx wrapper), so a SIGKILL kills the worker itself.
  const child = spawn(process.execPath, [...workerNodeFlags(), '--import', 'tsx', path.join(root, 'src', 'main.ts')], {
    cwd: root,
    // The API on a free port: tests run many workers at once, and none may take another's. Decisions
    // in these tests come from the test's client, unsigned (signed ones: test/integration/http-api.test.ts).
    env: {
      ...process.env,
      ...workerProcessEnv(),
      AGENT_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      AGENT_API_PORT: '0',
      AGENT_METRICS_ADDRESS: 'off',
      AGENT_REQUIRE_SIGNED_DECISIONS: 'false',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += String(chunk)));
  child.stderr?.on('data', (chunk) => (output += String(chunk)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const started = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`worker did not start within ${readyTimeoutMs} ms:\n${output}`)),
      readyTimeoutMs,
    );
    const check = (): void => {
      if (output.includes('Durable agent worker is running.')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited with ${code} before it was ready:\n${output}`));
    });
  });
  await started.catch(async (err: unknown) => {
    // A worker that never became ready leaves nothing behind: no process, no data folder.
    if (child.exitCode === null) child.kill('SIGKILL');
    await exited;
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  if (bundleCache && fingerprint) keepBundle(dataDir, fingerprint, bundleCache);
  return {
    child,
    output: () => output,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null) child.kill(signal);
      const code = await exited;
      fs.rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
  };
}

/** The files a worker reads its bundle from in its data folder (`bundleWorkflowsApart`). */
const { code: BUNDLE_FILE, fingerprint: FINGERPRINT_FILE } = WORKFLOW_BUNDLE_FILES;

/** Copies the cached bundle of these sources into a new data folder: the worker finds its fingerprint and reuses it. */
function seedBundle(cache: string, fingerprint: string, dataDir: string): void {
  const cached = path.join(cache, `${fingerprint}.js`);
  if (!fs.existsSync(cached)) return;
  fs.copyFileSync(cached, path.join(dataDir, BUNDLE_FILE));
  fs.writeFileSync(path.join(dataDir, FINGERPRINT_FILE), fingerprint);
}

/** Keeps the bundle a worker made for these sources without extras, for the workers started after it. */
function keepBundle(dataDir: string, fingerprint: string, cache: string): void {
  const cached = path.join(cache, `${fingerprint}.js`);
  const made = path.join(dataDir, BUNDLE_FILE);
  if (fs.existsSync(cached) || !fs.existsSync(made)) return;
  let madeFor: string;
  try {
    madeFor = fs.readFileSync(path.join(dataDir, FINGERPRINT_FILE), 'utf8');
  } catch {
    return;
  }
  if (madeFor !== fingerprint) return; // bundled with extras (a failure converter, tracing) or from sources changed since
  fs.mkdirSync(cache, { recursive: true });
  // Copied whole, then renamed: a worker starting in another test file at the same time never reads half a bundle.
  const partial = `${cached}.${process.pid}.partial`;
  fs.copyFileSync(made, partial);
  fs.renameSync(partial, cached);
}
