/**
 * The standalone worker's workflow bundle, made in a child process. Bundling
 * loads webpack, and the worker process would keep about 100 MB of it for
 * its whole life (measured: 364 MB resident after bundling in-process, 266 MB
 * with the same bundle made apart); a worker waiting on thousands of
 * conversations should hold nothing it does not use.
 */
import { fork } from 'node:child_process';
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

/** Bundles the conversation workflow in a child process into `<dir>/workflow-bundle.js`; returns the bundle option for `Worker.create`. */
export async function bundleWorkflowsApart(dir: string, extras: WorkflowBundleExtras = {}): Promise<{ codePath: string }> {
  fs.mkdirSync(dir, { recursive: true });
  const codePath = path.join(dir, 'workflow-bundle.js');
  await new Promise<void>((resolve, reject) => {
    const args = [BUNDLE_TO, codePath, JSON.stringify(extras)];
    const child = fork(__filename, args, { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`Bundling the workflow code failed (exit ${code ?? signal}); its errors are above.`)),
    );
  });
  return { codePath };
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
  // Written whole, then renamed: another worker starting on the same data folder never reads half a bundle.
  const partial = `${codePath}.${process.pid}.partial`;
  fs.writeFileSync(partial, bundle.code);
  fs.renameSync(partial, codePath);
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
