/**
 * The traces `npm start` and `npm run api` export, configured by
 * OpenTelemetry's standard variables (README, "Traces"): one group of the
 * configuration table (`config.ts`).
 */
import { z } from 'zod';
import { group, setting, text } from './settings';

/** The service name traces carry when OTEL_SERVICE_NAME is unset. */
export const DEFAULT_TRACE_SERVICE_NAME = 'durable-agent-worker';

/** Trace export over OTLP/HTTP, from OpenTelemetry's standard variables. */
export interface TraceExportConfig {
  /**
   * The URL spans are posted to: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else OTEL_EXPORTER_OTLP_ENDPOINT followed
   * by `v1/traces`.
   */
  url: string;
  /** The variable the URL came from, for messages. */
  endpointVariable: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' | 'OTEL_EXPORTER_OTLP_ENDPOINT';
  /** `service.name` of the spans: OTEL_SERVICE_NAME, default {@link DEFAULT_TRACE_SERVICE_NAME}. */
  serviceName: string;
}

/** An OTLP/HTTP endpoint. */
const otlpEndpoint = text.pipe(
  z
    .url({
      protocol: /^https?$/,
      error: "must be an http(s) URL such as http://127.0.0.1:4318 (a collector's OTLP/HTTP port)",
    })
    .optional(),
);

/** Where traces are exported, from the OpenTelemetry variables: the `traces` field of the configuration. */
export const traceSettings = group({
  members: {
    endpoint: setting({
      variable: 'OTEL_EXPORTER_OTLP_ENDPOINT',
      parse: otlpEndpoint,
      deployment: false,
      doc: "a collector's OTLP/HTTP address",
    }),
    tracesEndpoint: setting({
      variable: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
      parse: otlpEndpoint,
      deployment: false,
      doc: 'the whole URL spans are posted to',
    }),
    protocol: setting({
      variable: 'OTEL_EXPORTER_OTLP_PROTOCOL',
      parse: text,
      deployment: false,
      doc: 'http/json or http/protobuf (spans go as JSON)',
    }),
    tracesProtocol: setting({
      variable: 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
      parse: text,
      deployment: false,
      doc: "the traces' own protocol",
    }),
    exporter: setting({
      variable: 'OTEL_TRACES_EXPORTER',
      parse: text,
      deployment: false,
      doc: 'otlp, or none for no traces',
    }),
    serviceName: setting({
      variable: 'OTEL_SERVICE_NAME',
      parse: text,
      default: DEFAULT_TRACE_SERVICE_NAME,
      deployment: false,
      doc: '`service.name` of the exported spans',
    }),
  },
  // Read by OpenTelemetry's exporter itself.
  passedThrough: [
    'OTEL_EXPORTER_OTLP_HEADERS',
    'OTEL_EXPORTER_OTLP_TIMEOUT',
    'OTEL_EXPORTER_OTLP_COMPRESSION',
    'OTEL_RESOURCE_ATTRIBUTES',
    'OTEL_BSP_*',
  ],
  doc: "where traces are exported over OTLP/HTTP (README, 'Traces'); unset: no traces, and no tracing package is loaded",
  refine: checkTraceExport,
  build: traceExport,
});

/** The OpenTelemetry variables as the trace group reads them. */
interface TraceVariables {
  endpoint?: string;
  tracesEndpoint?: string;
  protocol?: string;
  tracesProtocol?: string;
  exporter?: string;
  serviceName?: string;
}

/**
 * With an OTLP endpoint set, the other OpenTelemetry variables must ask for
 * what the standalone processes do: OTLP over HTTP (sent as JSON).
 */
function checkTraceExport(e: TraceVariables, refuse: (variable: keyof TraceVariables, message: string) => void): void {
  if (!(e.tracesEndpoint ?? e.endpoint)) return;
  const exporter = e.exporter?.toLowerCase();
  if (exporter === 'none') return;
  if (exporter !== undefined && exporter !== 'otlp') {
    refuse(
      'exporter',
      `is "${e.exporter}", but npm start and npm run api export traces over OTLP only: set otlp (or leave it unset) to export to the OTLP endpoint, or none for no traces`,
    );
  }
  const variable = e.tracesProtocol ? 'tracesProtocol' : 'protocol';
  const protocol = e[variable]?.toLowerCase();
  if (protocol !== undefined && protocol !== 'http/json' && protocol !== 'http/protobuf') {
    refuse(
      variable,
      `is "${e[variable]}", but npm start and npm run api send traces over OTLP/HTTP (as JSON, which every OTLP/HTTP receiver accepts): ` +
        "set http/json (or leave it unset) and point the endpoint at the collector's OTLP/HTTP port (usually 4318), not its gRPC port",
    );
  }
}

/** Trace export as the OpenTelemetry variables configure it: an endpoint set and OTEL_TRACES_EXPORTER not `none`. */
function traceExport(e: TraceVariables & { serviceName: string }): TraceExportConfig | undefined {
  if (e.exporter?.toLowerCase() === 'none') return undefined;
  const serviceName = e.serviceName;
  // As OpenTelemetry's exporters read them: the signal's own endpoint is the whole URL, the shared one a base.
  if (e.tracesEndpoint) {
    return { url: e.tracesEndpoint, endpointVariable: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', serviceName };
  }
  if (e.endpoint) {
    const base = e.endpoint.endsWith('/') ? e.endpoint : `${e.endpoint}/`;
    return { url: `${base}v1/traces`, endpointVariable: 'OTEL_EXPORTER_OTLP_ENDPOINT', serviceName };
  }
  return undefined;
}
