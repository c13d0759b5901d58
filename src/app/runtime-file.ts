/**
 * The runtime file, `<dataDir>/runtime.json`: where a running `npm start`
 * put its services, for the CLI on the same machine. Kept apart from
 * `services.ts`, which starts those services (the demo model among them), so
 * that the CLI reads this file without loading what only the worker runs.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { SearchAttributeOptions } from '../contract';

/** Where the services are, as written to `<dataDir>/runtime.json` for the CLI. */
export interface RuntimeInfo {
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  /**
   * The embedded database's URL. Absent when `DATABASE_URL` is configured: a
   * configured secret stays where it was configured (the CLI reads the same
   * variable).
   */
  databaseUrl?: string;
  /** PostgreSQL schema of the project's tables. */
  databaseSchema: string;
  /** The search attribute groups and prefix the worker was configured with (absent in files of earlier releases). */
  searchAttributes?: SearchAttributeOptions;
  temporalUiUrl?: string;
  /** Base URL of the HTTP API, once it listens. */
  apiUrl?: string;
  /**
   * The development tokens' file (mode 0600) when the API's tokens are the
   * ones `npm start` made (no `AGENT_API_TOKENS_FILE`): the CLI on this
   * machine decides through the API with its approver's token. Absent when
   * the tokens are configured, so a stale file of an earlier start is not used.
   */
  developmentTokensFile?: string;
  pid: number;
}

/** Path of the runtime file that tells the CLI where a running worker's services are. */
export function runtimeFilePath(dataDir: string): string {
  return path.join(dataDir, 'runtime.json');
}

/** Writes the runtime file, owner only: the embedded database's URL in it carries its password. */
export function writeRuntimeInfo(dataDir: string, info: RuntimeInfo): void {
  const file = runtimeFilePath(dataDir);
  fs.writeFileSync(file, `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
  // The mode above applies only to a new file; one left by an earlier start keeps its own.
  fs.chmodSync(file, 0o600);
}

/**
 * Adds where the HTTP API listens (and its development tokens' file, when it made them) to the runtime file, once the
 * API listens.
 */
export function recordApi(dataDir: string, api: Pick<RuntimeInfo, 'apiUrl' | 'developmentTokensFile'>): void {
  const file = runtimeFilePath(dataDir);
  const info = JSON.parse(fs.readFileSync(file, 'utf8')) as RuntimeInfo;
  // Still owner only (the file keeps the mode it was made with): it holds the database's URL.
  fs.writeFileSync(file, `${JSON.stringify({ ...info, ...api }, null, 2)}\n`, { mode: 0o600 });
}

/** Reads the runtime file of a running `npm start`; undefined when there is none or its process is gone. */
export function readRuntimeInfo(dataDir: string): RuntimeInfo | undefined {
  let info: RuntimeInfo;
  try {
    info = JSON.parse(fs.readFileSync(runtimeFilePath(dataDir), 'utf8')) as RuntimeInfo;
  } catch {
    return undefined;
  }
  try {
    process.kill(info.pid, 0);
    return info;
  } catch {
    return undefined;
  }
}
