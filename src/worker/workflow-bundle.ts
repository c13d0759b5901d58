/**
 * The standalone worker's workflow bundle, made in a child process. Bundling
 * loads webpack, and the worker process would keep about 100 MB of it for
 * its whole life (measured: 364 MB resident after bundling in-process, 266 MB
 * with the same bundle made apart); a worker waiting on thousands of
 * conversations should hold nothing it does not use. A bundle whose sources
 * did not change since an earlier start is reused.
 */
import { fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, type Logger, type LogLevel } from '@temporalio/worker';
import { sdkLogger } from '../common/logger';
import { WORKFLOW_INTERCEPTOR_MODULES, WORKFLOWS_PATH } from './plugin';

/** What goes into the bundle besides the conversation workflow and its own interceptor module. */
export interface WorkflowBundleExtras {
  /** The data converter's failure converter module (encrypted payloads encode failure messages too). */
  failureConverterPath?: string;
  /** More workflow interceptor modules, e.g. the `OpenTelemetryPlugin`'s for traces; absolute paths. */
  workflowInterceptorModules?: string[];
}

/** A workflow bundle for `Worker.create`, and whether it was made by an earlier start. */
export interface WorkflowBundle {
  codePath: string;
  /** True when the bundle of an earlier start was reused: its fingerprint matched. */
  reused: boolean;
}

/** The files a data folder holds the workflow bundle in: its code, and the fingerprint of what it was made from. */
export const WORKFLOW_BUNDLE_FILES = {
  code: 'workflow-bundle.js',
  fingerprint: 'workflow-bundle.fingerprint',
} as const;

/**
 * Bundles the conversation workflow in a child process into
 * `<dir>/workflow-bundle.js`; returns the bundle option for `Worker.create`.
 *
 * A bundle an earlier start made is reused when its fingerprint
 * ({@link workflowBundleFingerprint}: the project's sources, the lockfile and
 * the extras) is the same: bundling takes seconds, the fingerprint
 * milliseconds. When `signal` aborts (the worker stopped while it starts),
 * the child process is ended and the promise rejects.
 */
export async function bundleWorkflowsApart(
  dir: string,
  extras: WorkflowBundleExtras = {},
  signal?: AbortSignal,
): Promise<WorkflowBundle> {
  fs.mkdirSync(dir, { recursive: true });
  const codePath = path.join(dir, WORKFLOW_BUNDLE_FILES.code);
  const fingerprintPath = path.join(dir, WORKFLOW_BUNDLE_FILES.fingerprint);
  const fingerprint = workflowBundleFingerprint(extras);
  if (readIfExists(fingerprintPath) === fingerprint && fs.existsSync(codePath)) return { codePath, reused: true };
  await new Promise<void>((resolve, reject) => {
    const args = [BUNDLE_TO, codePath, JSON.stringify(extras)];
    // Run from the sources (`.ts`), the child needs tsx's loader, which a process started otherwise (a test runner)
    // lacks.
    const fromSources = __filename.endsWith('.ts') && !process.execArgv.some((a) => a.includes('tsx'));
    const child = fork(__filename, args, {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      ...(fromSources ? { execArgv: [...process.execArgv, '--import', 'tsx'] } : {}),
      signal,
    });
    // An abort kills the child, then reports an AbortError here; its exit rejects too.
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      code === 0
        ? resolve()
        : reject(new Error(`Bundling the workflow code failed (exit ${code ?? signal}); its errors are above.`)),
    );
  });
  // Written after the bundle: a start that stops between the two bundles again.
  writeWhole(fingerprintPath, fingerprint);
  return { codePath, reused: false };
}

/** The project's root: `src` (or the built `dist`) is beside the lockfile. */
const SOURCE_ROOT = path.join(__dirname, '..');
const PROJECT_ROOT = path.join(SOURCE_ROOT, '..');

/**
 * What a workflow bundle is made of, as a SHA-256: every source file of the
 * project (the workflow imports a part of them; hashing all is simpler than
 * following imports and still takes milliseconds), the lockfile (the SDK and
 * every package the workflow imports, by version), the extras and the
 * contents of the modules they name, and this Node's version.
 */
export function workflowBundleFingerprint(extras: WorkflowBundleExtras = {}): string {
  const hash = createHash('sha256');
  hash.update(`bundle v1\0${process.version}\0${JSON.stringify(extras)}\0`);
  for (const file of [
    ...sourceFiles(SOURCE_ROOT),
    path.join(PROJECT_ROOT, 'package-lock.json'),
    path.join(PROJECT_ROOT, 'package.json'),
    ...(extras.failureConverterPath ? [extras.failureConverterPath] : []),
    ...(extras.workflowInterceptorModules ?? []),
  ]) {
    hash.update(`${path.relative(PROJECT_ROOT, file)}\0`);
    hash.update(readIfExists(file) ?? '(none)');
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** Every file under `dir`, sorted, skipping nothing but `node_modules`. */
function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  const visit = (at: string): void => {
    for (const entry of fs.readdirSync(at, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.name === 'node_modules') continue;
      const full = path.join(at, entry.name);
      if (entry.isDirectory()) visit(full);
      else if (entry.isFile()) files.push(full);
    }
  };
  visit(dir);
  return files;
}

function readIfExists(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** Written whole, then renamed: another worker starting on the same data folder never reads half a file. */
function writeWhole(file: string, content: string): void {
  const partial = `${file}.${process.pid}.partial`;
  fs.writeFileSync(partial, content);
  fs.renameSync(partial, file);
}

/** The child's argument: where to write the bundle. */
const BUNDLE_TO = '--bundle-workflows-to';

async function bundleInThisProcess(codePath: string, extras: WorkflowBundleExtras): Promise<void> {
  const bundle = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    workflowInterceptorModules: [...WORKFLOW_INTERCEPTOR_MODULES, ...(extras.workflowInterceptorModules ?? [])],
    ...(extras.failureConverterPath ? { failureConverterPath: extras.failureConverterPath } : {}),
    logger: bundlerLogger(process.env.LOG_LEVEL),
  });
  writeWhole(codePath, bundle.code);
}

/**
 * What the bundler says reaches stderr by `LOG_LEVEL`: its warnings and errors
 * always, its progress (webpack's summary, about twenty lines) only at
 * `debug` or `trace`, so the start-up banner is what a newcomer sees.
 */
export function bundlerLogger(level: string | undefined): Logger {
  const shown: LogLevel[] = ['WARN', 'ERROR'];
  if (level?.trim() === 'debug') shown.push('INFO', 'DEBUG');
  if (level?.trim() === 'trace') shown.push('INFO', 'DEBUG', 'TRACE');
  return sdkLogger((at, message, meta) => {
    if (!shown.includes(at)) return;
    const extra = meta && Object.keys(meta).length > 0 ? ` ${JSON.stringify(meta)}` : '';
    process.stderr.write(`${message}${extra}\n`);
  });
}

if (process.argv[2] === BUNDLE_TO && process.argv[3]) {
  bundleInThisProcess(process.argv[3], JSON.parse(process.argv[4] ?? '{}') as WorkflowBundleExtras).catch((err) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  });
}
