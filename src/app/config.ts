/**
 * The worker's configuration, read from the environment in one place.
 */
import path from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../common/errors';
import { LOG_LEVELS, type LogLevelName } from '../common/logger';
import { DEFAULT_MAX_PARALLEL_TOOL_CALLS, MAX_PARALLEL_TOOL_CALLS_LIMIT } from '../contract/activities';
import { loadTemporalConnection, type TemporalConnectionSettings } from './temporal-connection';
import { DEFAULT_DATABASE_SCHEMA, describeBadSchemaName } from '../db/schema';
import { describeBadPrices, type ModelPrices } from '../core/pricing';
import { parsePayloadKeys, type PayloadKey } from '../codec/aes-gcm';
import { describeBadMcpServers, type McpServers } from '../mcp/protocol';
import { AGENT_NAME_PATTERN, describeBadSearchAttributePrefix, parseSearchAttributeGroups } from '../contract';
import type { SearchAttributeOptions } from '../contract';

export { ConfigError };

/** The environment variables a deployment sets (see README, "Configuration"). */
export const ENV_VARS = [
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_TASK_QUEUE',
  'DATABASE_URL',
  'AGENT_DATABASE_SCHEMA',
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'OPENAI_MODEL',
  'OPENAI_CONTEXT_WINDOW',
  'AGENT_DATA_DIR',
  'AGENT_TOOLS_MODULE',
  'AGENT_DEFAULT_AGENT',
  'AGENT_MAX_PARALLEL_TOOL_CALLS',
  'AGENT_MAX_CACHED_CONVERSATIONS',
  'AGENT_API_HOST',
  'AGENT_API_PORT',
  'AGENT_API_TOKENS_FILE',
  'AGENT_OIDC_ISSUER',
  'AGENT_OIDC_AUDIENCE',
  'AGENT_OIDC_JWKS_URL',
  'AGENT_OIDC_ROLES_CLAIM',
  'AGENT_OIDC_SUBJECT_CLAIM',
  'AGENT_DECISION_KEYS',
  'AGENT_DECISION_KEYS_FILE',
  'AGENT_REQUIRE_SIGNED_DECISIONS',
  'AGENT_ALLOW_SELF_APPROVAL',
  'AGENT_METRICS_ADDRESS',
  'AGENT_MODEL_PRICES',
  'AGENT_PAYLOAD_KEYS',
  'AGENT_CODEC_CORS_ORIGINS',
  'AGENT_MCP_SERVERS',
  'AGENT_LOST_WORKER_TAKEOVER',
  'AGENT_LOST_WORKER_CONFIRM_MS',
  'AGENT_SEARCH_ATTRIBUTES',
  'AGENT_SEARCH_ATTRIBUTE_PREFIX',
] as const;

const optional = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

/** An optional variable holding a whole number: `notWhole` when it is not one, then `range`'s checks. */
const wholeNumber = (notWhole: string, range: z.ZodNumber) => optional.pipe(z.string().regex(/^\d+$/, notWhole).transform(Number).pipe(range).optional());

/** An optional yes/no variable. */
const yesNo = optional.pipe(
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be true or false' })
    .transform((v) => v === 'true' || v === '1' || v === 'yes')
    .optional(),
);

/** An optional variable holding JSON: `notJson` when it does not parse, else what `describeProblem` finds wrong with it. */
function jsonVariable<T>(notJson: string, describeProblem: (value: unknown) => string | undefined) {
  return optional.pipe(
    z
      .string()
      .transform((text, ctx) => {
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch {
          ctx.addIssue({ code: 'custom', message: notJson });
          return z.NEVER;
        }
        const problem = describeProblem(value);
        if (problem) {
          ctx.addIssue({ code: 'custom', message: problem });
          return z.NEVER;
        }
        return value as T;
      })
      .optional(),
  );
}

/** An optional OTLP/HTTP endpoint. */
const otlpEndpoint = optional.pipe(
  z.url({ protocol: /^https?$/, error: "must be an http(s) URL such as http://127.0.0.1:4318 (a collector's OTLP/HTTP port)" }).optional(),
);

/**
 * With an OTLP endpoint set, the other OpenTelemetry variables must ask for
 * what the standalone processes do: OTLP over HTTP (sent as JSON).
 */
function checkTraceExport(
  e: {
    OTEL_EXPORTER_OTLP_ENDPOINT?: string;
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;
    OTEL_TRACES_EXPORTER?: string;
    OTEL_EXPORTER_OTLP_PROTOCOL?: string;
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?: string;
  },
  ctx: z.RefinementCtx,
): void {
  if (!(e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? e.OTEL_EXPORTER_OTLP_ENDPOINT)) return;
  const exporter = e.OTEL_TRACES_EXPORTER?.toLowerCase();
  if (exporter === 'none') return;
  if (exporter !== undefined && exporter !== 'otlp') {
    ctx.addIssue({
      code: 'custom',
      path: ['OTEL_TRACES_EXPORTER'],
      message: `is "${e.OTEL_TRACES_EXPORTER}", but npm start and npm run api export traces over OTLP only: set otlp (or leave it unset) to export to the OTLP endpoint, or none for no traces`,
    });
  }
  const variable = e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = e[variable]?.toLowerCase();
  if (protocol !== undefined && protocol !== 'http/json' && protocol !== 'http/protobuf') {
    ctx.addIssue({
      code: 'custom',
      path: [variable],
      message:
        `is "${e[variable]}", but npm start and npm run api send traces over OTLP/HTTP (as JSON, which every OTLP/HTTP receiver accepts): ` +
        "set http/json (or leave it unset) and point the endpoint at the collector's OTLP/HTTP port (usually 4318), not its gRPC port",
    });
  }
}

const envSchema = z
  .object({
    TEMPORAL_ADDRESS: optional,
    TEMPORAL_NAMESPACE: optional,
    TEMPORAL_TASK_QUEUE: optional,
    TEMPORAL_CLI_PATH: optional,
    TEMPORAL_UI_PORT: optional.pipe(z.string().regex(/^\d+$/, 'must be a port number').transform(Number).optional()),
    DATABASE_URL: optional.pipe(
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, 'must look like postgres://user:password@host:5432/database')
        .optional(),
    ),
    AGENT_DATABASE_SCHEMA: optional.superRefine((name, ctx) => {
      const problem = name === undefined ? undefined : describeBadSchemaName(name);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
    OPENAI_API_KEY: optional,
    OPENAI_BASE_URL: optional.pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL such as https://api.openai.com/v1' }).optional()),
    OPENAI_MODEL: optional,
    OPENAI_CONTEXT_WINDOW: wholeNumber(
      "must be the model's context window in tokens, a whole number such as 128000",
      z.number().min(1024, 'must be at least 1024 tokens'),
    ),
    AGENT_DATA_DIR: optional,
    AGENT_TOOLS_MODULE: optional,
    AGENT_DEFAULT_AGENT: optional.pipe(
      z
        .string()
        .refine((v) => v === 'none' || AGENT_NAME_PATTERN.test(v), 'must be the name of one of the agents (1-52 letters, digits, "_" or "-"), or "none"')
        .optional(),
    ),
    AGENT_MAX_PARALLEL_TOOL_CALLS: wholeNumber(
      `must be a whole number from 1 to ${MAX_PARALLEL_TOOL_CALLS_LIMIT}`,
      z
        .number()
        .min(1, `must be at least 1 (calls over the limit are answered with an error, never run)`)
        .max(MAX_PARALLEL_TOOL_CALLS_LIMIT, `must be at most ${MAX_PARALLEL_TOOL_CALLS_LIMIT}, the most tools a provider accepts`),
    ),
    AGENT_MAX_CACHED_CONVERSATIONS: wholeNumber(
      'must be a whole number of conversations, at least 2',
      z.number().min(2, 'must be at least 2 (a worker needs room for the conversations it is working on)'),
    ),
    LOG_LEVEL: optional.pipe(z.enum(LOG_LEVELS).optional()),
    AGENT_CORE_LOG_LEVEL: optional.pipe(z.enum(LOG_LEVELS).optional()),
    AGENT_API_HOST: optional,
    AGENT_API_PORT: optional.pipe(
      z
        .string()
        .regex(/^(off|\d+)$/, 'must be a port number (0 for any free port), or "off" for no HTTP API')
        .transform((v) => (v === 'off' ? ('off' as const) : Number(v)))
        .refine((v) => v === 'off' || v <= 65535, 'must be at most 65535')
        .optional(),
    ),
    AGENT_API_TOKENS_FILE: optional,
    AGENT_OIDC_ISSUER: optional,
    AGENT_OIDC_AUDIENCE: optional,
    AGENT_OIDC_JWKS_URL: optional,
    AGENT_OIDC_ROLES_CLAIM: optional,
    AGENT_OIDC_SUBJECT_CLAIM: optional,
    AGENT_DECISION_KEYS: optional,
    AGENT_DECISION_KEYS_FILE: optional,
    AGENT_REQUIRE_SIGNED_DECISIONS: yesNo,
    AGENT_ALLOW_SELF_APPROVAL: yesNo,
    AGENT_MCP_SERVERS: jsonVariable<McpServers>(
      'must be JSON such as {"crm": {"command": "node", "args": ["crm-mcp.js"]}, "tickets": {"url": "https://tickets.example.com/mcp"}}',
      (value) => describeBadMcpServers(value, 'the value').join('; ') || undefined,
    ),
    AGENT_LOST_WORKER_TAKEOVER: yesNo,
    AGENT_LOST_WORKER_CONFIRM_MS: wholeNumber(
      'must be a whole number of milliseconds',
      z.number().min(100, 'must be at least 100 ms (a worker reconnecting after a short cut must have time to lock its key again)'),
    ),
    AGENT_SEARCH_ATTRIBUTES: optional.transform((value, ctx) => {
      try {
        return value === undefined ? undefined : parseSearchAttributeGroups(value);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
    AGENT_SEARCH_ATTRIBUTE_PREFIX: optional.superRefine((prefix, ctx) => {
      const problem = prefix === undefined ? undefined : describeBadSearchAttributePrefix(prefix);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
    AGENT_CODEC_CORS_ORIGINS: optional.pipe(
      z
        .string()
        .transform((list) =>
          list
            .split(',')
            .map((o) => o.trim())
            .filter(Boolean),
        )
        .refine(
          (origins) => origins.every(isOrigin),
          'must be origins separated by commas, each scheme://host[:port] with no path, such as http://127.0.0.1:8233',
        )
        .optional(),
    ),
    AGENT_MODEL_PRICES: jsonVariable<ModelPrices>(
      'must be JSON such as {"gpt-4.1": {"input": 2, "output": 8}} (US dollars per million tokens)',
      describeBadPrices,
    ),
    AGENT_PAYLOAD_KEYS: optional.transform((value, ctx) => {
      if (value === undefined) return undefined;
      try {
        return parsePayloadKeys(value);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message.replace(/^AGENT_PAYLOAD_KEYS: /, '') });
        return z.NEVER;
      }
    }),
    AGENT_METRICS_ADDRESS: optional.pipe(
      z
        .string()
        .regex(/^(off|[^\s:/]+:\d{1,5}|\[[0-9a-fA-F:]+\]:\d{1,5})$/, 'must be host:port such as 127.0.0.1:9464, or "off" for no metrics endpoint')
        .optional(),
    ),
    // OpenTelemetry's standard variables, for the traces `npm start` and `npm run api` export (README, "Traces").
    OTEL_EXPORTER_OTLP_ENDPOINT: otlpEndpoint,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpEndpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: optional,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: optional,
    OTEL_TRACES_EXPORTER: optional,
    OTEL_SERVICE_NAME: optional,
  })
  .superRefine(checkTraceExport);

/** The worker's settings. Unset connection settings mean "start an embedded one". */
export interface WorkerConfig {
  temporal: {
    /** host:port of a Temporal frontend; unset = start the embedded dev server. */
    address?: string;
    /** TLS, API key and metadata from Temporal's environment configuration (see `temporal-connection.ts`). */
    connection: TemporalConnectionSettings;
    namespace: string;
    taskQueue: string;
    /** Path of a `temporal` CLI binary for the embedded dev server. */
    cliPath?: string;
    /** Port of the embedded dev server's web UI. */
    uiPort: number;
  };
  /** PostgreSQL connection string; unset = start embedded PostgreSQL. */
  databaseUrl?: string;
  /** PostgreSQL schema of the project's tables (default `durable_agent`). */
  databaseSchema: string;
  openai: {
    /** Unset = use the offline scripted demo model. */
    apiKey?: string;
    baseUrl?: string;
    model: string;
    /** The model's context window in tokens; known for common models, else 128000 (see src/activities/context-budget.ts). */
    contextWindow?: number;
    /** Prices by model name, US dollars per million tokens; unset: costs are not computed. */
    prices?: ModelPrices;
  };
  /** Where embedded servers keep their files. */
  dataDir: string;
  /** Module whose `tools` (or default) export replaces the demo tools. */
  toolsModule?: string;
  /** The agent of conversations that name none: a name, `none` (one unnamed agent), or unset (the tools module's first agent). */
  defaultAgent?: string;
  /** Tool calls of one model response that run; the rest are answered with an error the model reads. */
  maxParallelToolCalls: number;
  /** Conversations the worker keeps in memory (Temporal's sticky cache); the others are rebuilt from history when they need the worker. */
  maxCachedConversations: number;
  logLevel: LogLevelName;
  /**
   * What the Temporal SDK's core (Rust: polling, workflow activations,
   * evictions, local activities) logs, forwarded to the worker's log; default
   * `warn` (`error` when `logLevel` is). `debug` shows each workflow activation's jobs, which is what
   * tells why a conversation's workflow task timed out or was evicted.
   */
  coreLogLevel: LogLevelName;
  /** Keys that encrypt payloads (the first encrypts, all decrypt); unset: payloads are plain. */
  payloadKeys?: PayloadKey[];
  /** host:port of the Prometheus endpoint (`/metrics`), default 127.0.0.1:9464; `off` for none. */
  metricsAddress: string | 'off';
  /** MCP servers whose tools conversations may use, with `${VAR}` replaced from the environment. */
  mcpServers?: McpServers;
  /**
   * The search attribute groups the worker registers (unset: each that fits)
   * and their names' prefix; clients read the same settings (docs/search-attributes.md).
   */
  searchAttributes: SearchAttributeOptions;
  /** Lost-worker takeover (README, "When a worker dies"): on unless AGENT_LOST_WORKER_TAKEOVER=false. */
  lostWorkers: { enabled: boolean; confirmMs?: number };
  /** Where traces are exported over OTLP/HTTP (README, "Traces"); unset: no traces, and no tracing package is loaded. */
  traces?: TraceExportConfig;
  /** The HTTP API and inbox page (README, "HTTP API"). */
  api: {
    /** Default 127.0.0.1. */
    host: string;
    /** Default 8787; `off` for none. */
    port: number | 'off';
    /** JSON list of static tokens; unset = development tokens made in the data folder. */
    tokensFile?: string;
    /** OIDC/JWT bearer tokens, when an issuer is set. */
    oidc?: { issuer: string; audience?: string; jwksUrl?: string; rolesClaim?: string; subjectClaim?: string };
    /** `id:secret[,id:secret]`; unset = a key made in the data folder. */
    decisionKeys?: string;
    decisionKeysFile?: string;
    /** Refuse unsigned decisions (default true). */
    requireSignedDecisions: boolean;
    /** Let a turn's requester approve its calls (default false: four eyes). */
    allowSelfApproval: boolean;
    /**
     * Browser origins (the Temporal UI's) that may call the codec server with
     * credentials. Default: the embedded dev server's UI when Temporal is
     * embedded, else none.
     */
    codecCorsOrigins: string[];
  };
}

/**
 * Conversations a worker keeps in memory by default. A conversation waiting
 * for a person needs no memory of the worker: past this many, the least
 * recently active are dropped and rebuilt from their (small) history when a
 * decision or a message arrives. Sized so a worker waiting on any number of
 * conversations stays within a few hundred MB (README, "Performance").
 */
export const DEFAULT_MAX_CACHED_CONVERSATIONS = 100;

/** Where the standalone worker serves its metrics by default: this machine only. */
export const DEFAULT_METRICS_ADDRESS = '127.0.0.1:9464';

/** The service name traces carry when OTEL_SERVICE_NAME is unset. */
export const DEFAULT_TRACE_SERVICE_NAME = 'durable-agent-worker';

/** Trace export over OTLP/HTTP, from OpenTelemetry's standard variables. */
export interface TraceExportConfig {
  /** The URL spans are posted to: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else OTEL_EXPORTER_OTLP_ENDPOINT followed by `v1/traces`. */
  url: string;
  /** The variable the URL came from, for messages. */
  endpointVariable: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' | 'OTEL_EXPORTER_OTLP_ENDPOINT';
  /** `service.name` of the spans: OTEL_SERVICE_NAME, default {@link DEFAULT_TRACE_SERVICE_NAME}. */
  serviceName: string;
}

/** Trace export as the OpenTelemetry variables configure it: an endpoint set and OTEL_TRACES_EXPORTER not `none`. */
function traceExport(e: {
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;
  OTEL_TRACES_EXPORTER?: string;
  OTEL_SERVICE_NAME?: string;
}): TraceExportConfig | undefined {
  if (e.OTEL_TRACES_EXPORTER?.toLowerCase() === 'none') return undefined;
  const serviceName = e.OTEL_SERVICE_NAME ?? DEFAULT_TRACE_SERVICE_NAME;
  // As OpenTelemetry's exporters read them: the signal's own endpoint is the whole URL, the shared one a base.
  if (e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) {
    return { url: e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, endpointVariable: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', serviceName };
  }
  if (e.OTEL_EXPORTER_OTLP_ENDPOINT) {
    const base = e.OTEL_EXPORTER_OTLP_ENDPOINT.endsWith('/') ? e.OTEL_EXPORTER_OTLP_ENDPOINT : `${e.OTEL_EXPORTER_OTLP_ENDPOINT}/`;
    return { url: `${base}v1/traces`, endpointVariable: 'OTEL_EXPORTER_OTLP_ENDPOINT', serviceName };
  }
  return undefined;
}

/** The embedded dev server's web UI port by default. */
export const DEFAULT_TEMPORAL_UI_PORT = 8233;

/** The origins a browser gives a page of this machine on `port`, by either of its local names. */
function localOrigins(port: number): string[] {
  return [`http://127.0.0.1:${port}`, `http://localhost:${port}`];
}

/**
 * Replaces `${NAME}` in every string of the MCP configuration with the
 * variable's value, so secrets (an `Authorization` header, a server's key)
 * stay in the environment, never in the JSON. A missing variable is an error.
 */
function expandVariables(servers: McpServers, env: NodeJS.ProcessEnv): McpServers {
  const expand = (value: unknown): unknown => {
    if (typeof value === 'string') {
      return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
        const found = env[name];
        if (found === undefined) throw new ConfigError(`AGENT_MCP_SERVERS names \${${name}}, and ${name} is not set. Set it, or write the value in its place.`);
        return found;
      });
    }
    if (Array.isArray(value)) return value.map(expand);
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expand(v)]));
    return value;
  };
  return expand(servers) as McpServers;
}

/** True for `scheme://host[:port]`, as browsers send it in `Origin`. */
function isOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value;
  } catch {
    return false;
  }
}

/** Reads the configuration from `env` (default `process.env`), with clear errors for bad values. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration in the environment:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  const logLevel = e.LOG_LEVEL ?? 'info';
  // By default warn, or LOG_LEVEL when that is quieter (error).
  const coreLogLevel = e.AGENT_CORE_LOG_LEVEL ?? (logLevel === 'error' ? 'error' : 'warn');
  if (LOG_LEVELS.indexOf(coreLogLevel) < LOG_LEVELS.indexOf(logLevel)) {
    throw new ConfigError(
      `AGENT_CORE_LOG_LEVEL=${coreLogLevel} is more verbose than LOG_LEVEL=${logLevel}: the core's lines go through the worker's log, which would drop them. ` +
        `Set LOG_LEVEL=${coreLogLevel} too.`,
    );
  }
  const connection = loadTemporalConnection(env);
  return {
    temporal: {
      address: connection.address,
      connection,
      namespace: connection.namespace ?? 'default',
      taskQueue: e.TEMPORAL_TASK_QUEUE ?? 'agent',
      cliPath: e.TEMPORAL_CLI_PATH,
      uiPort: e.TEMPORAL_UI_PORT ?? DEFAULT_TEMPORAL_UI_PORT,
    },
    databaseUrl: e.DATABASE_URL,
    databaseSchema: e.AGENT_DATABASE_SCHEMA ?? DEFAULT_DATABASE_SCHEMA,
    openai: {
      apiKey: e.OPENAI_API_KEY,
      baseUrl: e.OPENAI_BASE_URL,
      model: e.OPENAI_MODEL ?? 'gpt-4o-mini',
      contextWindow: e.OPENAI_CONTEXT_WINDOW,
      ...(e.AGENT_MODEL_PRICES ? { prices: e.AGENT_MODEL_PRICES } : {}),
    },
    dataDir: path.resolve(e.AGENT_DATA_DIR ?? path.join(__dirname, '..', '..', '.data')),
    toolsModule: e.AGENT_TOOLS_MODULE,
    ...(e.AGENT_DEFAULT_AGENT ? { defaultAgent: e.AGENT_DEFAULT_AGENT } : {}),
    maxParallelToolCalls: e.AGENT_MAX_PARALLEL_TOOL_CALLS ?? DEFAULT_MAX_PARALLEL_TOOL_CALLS,
    maxCachedConversations: e.AGENT_MAX_CACHED_CONVERSATIONS ?? DEFAULT_MAX_CACHED_CONVERSATIONS,
    logLevel,
    coreLogLevel,
    metricsAddress: e.AGENT_METRICS_ADDRESS ?? DEFAULT_METRICS_ADDRESS,
    traces: traceExport(e),
    ...(e.AGENT_PAYLOAD_KEYS ? { payloadKeys: e.AGENT_PAYLOAD_KEYS } : {}),
    ...(e.AGENT_MCP_SERVERS ? { mcpServers: expandVariables(e.AGENT_MCP_SERVERS, env) } : {}),
    searchAttributes: {
      ...(e.AGENT_SEARCH_ATTRIBUTE_PREFIX ? { prefix: e.AGENT_SEARCH_ATTRIBUTE_PREFIX } : {}),
      ...(e.AGENT_SEARCH_ATTRIBUTES ? { groups: e.AGENT_SEARCH_ATTRIBUTES } : {}),
    },
    lostWorkers: { enabled: e.AGENT_LOST_WORKER_TAKEOVER ?? true, ...(e.AGENT_LOST_WORKER_CONFIRM_MS ? { confirmMs: e.AGENT_LOST_WORKER_CONFIRM_MS } : {}) },
    api: {
      host: e.AGENT_API_HOST ?? '127.0.0.1',
      port: e.AGENT_API_PORT ?? 8787,
      tokensFile: e.AGENT_API_TOKENS_FILE,
      oidc: e.AGENT_OIDC_ISSUER
        ? {
            issuer: e.AGENT_OIDC_ISSUER,
            audience: e.AGENT_OIDC_AUDIENCE,
            jwksUrl: e.AGENT_OIDC_JWKS_URL,
            rolesClaim: e.AGENT_OIDC_ROLES_CLAIM,
            subjectClaim: e.AGENT_OIDC_SUBJECT_CLAIM,
          }
        : undefined,
      decisionKeys: e.AGENT_DECISION_KEYS,
      decisionKeysFile: e.AGENT_DECISION_KEYS_FILE,
      requireSignedDecisions: e.AGENT_REQUIRE_SIGNED_DECISIONS ?? true,
      allowSelfApproval: e.AGENT_ALLOW_SELF_APPROVAL ?? false,
      codecCorsOrigins: e.AGENT_CODEC_CORS_ORIGINS ?? (connection.address ? [] : localOrigins(e.TEMPORAL_UI_PORT ?? DEFAULT_TEMPORAL_UI_PORT)),
    },
  };
}
