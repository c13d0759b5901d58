/**
 * Trace export of the standalone processes (`npm start`, `npm run api`) when
 * OpenTelemetry's standard variables set an OTLP endpoint: a tracer provider
 * with a batch span processor and an OTLP/HTTP exporter, registered globally
 * (the agent's own "model call" and "tool run" spans use it), and Temporal's
 * `OpenTelemetryPlugin` for the worker, its workflow bundle and the client.
 *
 * The tracing packages are development dependencies of this repository, not
 * of the published package: they are loaded here, on demand, only when an
 * endpoint is configured, and a missing one is named with the command that
 * installs it. Without an endpoint nothing here loads anything.
 */
import fs from 'node:fs';
import path from 'node:path';
import { diag, DiagLogLevel, type DiagLogger } from '@opentelemetry/api';
import type { ClientPlugin } from '@temporalio/client';
import type { WorkerPlugin } from '@temporalio/worker';
import { ConfigError } from '../common/errors';
import type { TraceExportConfig } from './config';
import { logger } from '../common/logger';

/** The packages trace export loads, in the order it loads them. */
export const TRACING_PACKAGES = [
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/sdk-trace-node',
  '@opentelemetry/exporter-trace-otlp-http',
  '@temporalio/interceptors-opentelemetry',
] as const;

/**
 * Temporal's workflow interceptor module of the `OpenTelemetryPlugin`, which a prebuilt workflow bundle must include.
 */
export const TRACING_WORKFLOW_INTERCEPTOR_MODULE = '@temporalio/interceptors-opentelemetry/lib/workflow-interceptors';

/** Trace export, running. */
export interface TraceExport {
  /** Temporal's `OpenTelemetryPlugin`: give it to the worker and to the client that starts conversations. */
  plugin: WorkerPlugin & ClientPlugin;
  /** Workflow interceptor modules to bundle with the workflows (a prebuilt bundle gets none from the plugin). */
  workflowInterceptorModules: string[];
  /** Where spans are posted. */
  url: string;
  /** `service.name` of the spans. */
  serviceName: string;
  /** Exports the spans still buffered, then stops exporting. Never throws; a failure is logged. */
  shutdown(): Promise<void>;
}

/** How {@link startTraceExport} finds a package: `require.resolve` unless a test says otherwise. */
export type ResolvePackage = (name: string) => string;

/**
 * Starts exporting traces to `settings.url`. Throws a `ConfigError` naming
 * the packages to install when one of {@link TRACING_PACKAGES} is missing.
 */
export function startTraceExport(settings: TraceExportConfig, resolve: ResolvePackage = require.resolve): TraceExport {
  const missing = TRACING_PACKAGES.filter((name) => !isInstalled(name, resolve));
  if (missing.length > 0) throw new ConfigError(describeMissingPackages(missing, settings));

  // Loaded here, not imported: without an endpoint none of these is loaded at all.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { Resource, envDetectorSync } =
    require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { BatchSpanProcessor } =
    require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { NodeTracerProvider } =
    require('@opentelemetry/sdk-trace-node') as typeof import('@opentelemetry/sdk-trace-node');
  const { OTLPTraceExporter } =
    require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { OpenTelemetryPlugin } =
    require('@temporalio/interceptors-opentelemetry') as typeof import('@temporalio/interceptors-opentelemetry');
  /* eslint-enable @typescript-eslint/no-require-imports */

  // An export that fails (a collector down) is said in the worker's log, not lost in silence.
  diag.setLogger(diagLogger(), DiagLogLevel.WARN);
  // OTEL_RESOURCE_ATTRIBUTES adds to the service name; the workflow spans (exported through the plugin) carry the same
  // resource.
  const resource = Resource.default()
    .merge(new Resource({ 'service.name': settings.serviceName }))
    .merge(envDetectorSync.detect());
  // Headers, timeout and compression come from the OTEL_EXPORTER_OTLP_* variables as the exporter reads them.
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter({ url: settings.url }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  const plugin = new OpenTelemetryPlugin({ resource, spanProcessor });
  return {
    plugin,
    workflowInterceptorModules: [resolve(TRACING_WORKFLOW_INTERCEPTOR_MODULE)],
    url: settings.url,
    serviceName: settings.serviceName,
    shutdown: async () => {
      try {
        await provider.shutdown();
      } catch (err) {
        logger.warn({ err, url: settings.url }, 'could not export the last spans');
      }
    },
  };
}

/** The banner's line about traces: where they go, or off and how to turn them on. */
export function describeTraceExport(running: Pick<TraceExport, 'url' | 'serviceName'> | undefined): string {
  if (!running) return 'off (set OTEL_EXPORTER_OTLP_ENDPOINT to export them over OTLP/HTTP)';
  return `${running.url}  (OTLP/HTTP, service ${running.serviceName})`;
}

function isInstalled(name: string, resolve: ResolvePackage): boolean {
  try {
    resolve(name);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') return false;
    throw err;
  }
}

/**
 * What to do about missing tracing packages: install them (at the versions this repository uses), or turn traces off.
 */
export function describeMissingPackages(missing: readonly string[], settings: TraceExportConfig): string {
  const versions = declaredVersions();
  const install = missing.map((name) => (versions[name] ? `${name}@${versions[name]}` : name)).join(' ');
  return (
    `${settings.endpointVariable} asks for traces, but ${missing.length === 1 ? 'this package is' : 'these packages are'} not installed: ` +
    `${missing.join(', ')}. Install ${missing.length === 1 ? 'it' : 'them'} (npm install ${install}), ` +
    `or unset ${settings.endpointVariable} (or set OTEL_TRACES_EXPORTER=none) to run without traces.`
  );
}

/** The versions of the tracing packages this repository's package.json names. */
function declaredVersions(): Record<string, string> {
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as Record<
      string,
      Record<string, string> | undefined
    >;
    return { ...manifest.devDependencies, ...manifest.peerDependencies, ...manifest.dependencies };
  } catch {
    return {};
  }
}

/** OpenTelemetry's own warnings and errors, in the worker's log. */
function diagLogger(): DiagLogger {
  const ignore = (): void => undefined;
  return {
    error: (message, ...args) => logger.warn({ otel: args.map(String) }, `OpenTelemetry: ${message}`),
    warn: (message, ...args) => logger.warn({ otel: args.map(String) }, `OpenTelemetry: ${message}`),
    info: ignore,
    debug: ignore,
    verbose: ignore,
  };
}
