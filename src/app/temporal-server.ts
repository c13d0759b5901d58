/**
 * The embedded Temporal dev server (`temporal server start-dev`), found or
 * started without a human, with the project's search attributes registered.
 */
import fs from 'node:fs';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { SearchAttributeType } from '@temporalio/common';
import type { SearchAttributeKey } from '@temporalio/common/lib/search-attributes';
import { SEARCH_ATTRIBUTES } from '../contract';

/** Where `scripts/ensure-temporal-cli.sh` installs the pinned CLI. */
export const PROJECT_CLI_PATH = path.join(__dirname, '..', '..', '.tools', 'bin', 'temporal');

/**
 * Finds a Temporal CLI binary: `TEMPORAL_CLI_PATH`, then a `temporal` on
 * PATH, then the project's own copy. Undefined means "let the SDK download
 * one" (which needs internet).
 */
export function findTemporalCli(explicitPath?: string): string | undefined {
  if (explicitPath) {
    if (!isExecutable(explicitPath)) {
      throw new Error(
        `TEMPORAL_CLI_PATH=${explicitPath} is not an executable file. Point it at a temporal binary or unset it.`,
      );
    }
    return explicitPath;
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, 'temporal');
    if (dir && isExecutable(candidate)) return candidate;
  }
  return isExecutable(PROJECT_CLI_PATH) ? PROJECT_CLI_PATH : undefined;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * SQLite pragmas the dev server's file gets unless the caller passes its own
 * `--sqlite-pragma`: a write-ahead log, synced at checkpoints. Every commit
 * survives the server process dying; only the last commits before a power
 * loss or OS crash may be lost (the file stays consistent). Measured with
 * `npm run bench`: the server's CPU per step halves, and 100 concurrent
 * conversations run about 1.5× the steps a second (README, Performance).
 */
export const DEV_SERVER_SQLITE_PRAGMAS = ['journal_mode=wal', 'synchronous=normal'] as const;

/** Options for {@link startDevServer}. */
export interface DevServerOptions {
  cliPath?: string;
  /** SQLite file to persist to; in memory when unset. */
  dbFilename?: string;
  /** Serve the web UI on this port. */
  uiPort?: number;
  /** The codec server the web UI decodes payloads with (`--ui-codec-endpoint`), e.g. the API's `/codec`. */
  uiCodecEndpoint?: string;
  /** Frontend port; a free one when unset. */
  port?: number;
  namespace?: string;
  /**
   * Search attributes registered as the server starts: the conversation's
   * seven under their own names unless given (`npm start` gives none and
   * lets its worker register what its configuration asks for).
   */
  searchAttributes?: readonly SearchAttributeKey<SearchAttributeType>[];
  /**
   * More `temporal server start-dev` flags, e.g. `--dynamic-config-value
   * KEY=VALUE`; any `--sqlite-pragma` here replaces {@link DEV_SERVER_SQLITE_PRAGMAS}.
   */
  extraArgs?: string[];
}

/** A running dev server. */
export interface DevServer {
  /** host:port of the frontend. */
  address: string;
  namespace: string;
  uiUrl?: string;
  env: TestWorkflowEnvironment;
  stop(): Promise<void>;
}

/** The default pragmas as flags, for a server with a file whose caller chose none. */
function sqlitePragmaArgs(options: DevServerOptions): string[] {
  if (!options.dbFilename || options.extraArgs?.includes('--sqlite-pragma')) return [];
  return DEV_SERVER_SQLITE_PRAGMAS.flatMap((pragma) => ['--sqlite-pragma', pragma]);
}

/** Starts the dev server, with the project's search attributes registered unless `searchAttributes` says otherwise. */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const cliPath = options.cliPath ?? findTemporalCli();
  const namespace = options.namespace ?? 'default';
  if (options.dbFilename) fs.mkdirSync(path.dirname(options.dbFilename), { recursive: true });
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: cliPath ? { type: 'existing-path', path: cliPath } : { type: 'cached-download' },
      dbFilename: options.dbFilename,
      namespace,
      port: options.port,
      ...(options.uiPort ? { ui: true, uiPort: options.uiPort } : {}),
      searchAttributes: [...(options.searchAttributes ?? SEARCH_ATTRIBUTES)],
      log: { format: 'pretty', level: 'error' },
      extraArgs: [
        ...sqlitePragmaArgs(options),
        // The UI fetches no news from the internet: a development server may have none, and should not call out.
        ...(options.uiPort ? ['--ui-disable-news-fetch'] : []),
        ...(options.uiPort && options.uiCodecEndpoint ? ['--ui-codec-endpoint', options.uiCodecEndpoint] : []),
        ...(options.extraArgs ?? []),
      ],
    },
  });
  return {
    address: env.address,
    namespace,
    // 127.0.0.1, the API's host by default: pages of one host are one site, so the UI may send the inbox's cookie to
    // the codec server.
    uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : undefined,
    env,
    stop: () => env.teardown(),
  };
}
