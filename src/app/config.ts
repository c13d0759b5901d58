/**
 * The worker's configuration, read from the environment in one place: one
 * table, one entry per setting. The configuration's fields are the table's
 * keys; the variables, their checks, the type ({@link WorkerConfig}) and the
 * list a deployment sets ({@link ENV_VARS}) are derived from it (`settings.ts`),
 * and a unit test holds docs/configuration.md's table to it.
 */
import path from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../common/errors';
import { LOG_LEVELS } from '../common/logger';
import { DEFAULT_MAX_PARALLEL_TOOL_CALLS, MAX_PARALLEL_TOOL_CALLS_LIMIT } from '../contract/activities';
import { DEFAULT_DATABASE_SCHEMA, describeBadSchemaName } from '../db/schema';
import { describeBadPrices, type ModelPrices } from '../core/pricing';
import { parsePayloadKeys } from '../codec/aes-gcm';
import { describeBadMcpServers, type McpServers } from '../mcp/protocol';
import { AGENT_NAME_PATTERN, describeBadSearchAttributePrefix, parseSearchAttributeGroups } from '../contract';
import { MODEL_APIS } from '../contract/model-api';
import type { SearchAttributeOptions } from '../contract';
import type { ApprovalPolicySource } from '../policies/policy-file';
import type { WebhookSource } from './webhook-settings';
import {
  checkedBy,
  deploymentVariables,
  group,
  jsonVariable,
  parsedBy,
  readSettings,
  setting,
  text,
  variablesOf,
  wholeNumber,
  yesNo,
  type ConfigOf,
  type DeclaredVariable,
} from './settings';
import { traceSettings } from './trace-settings';
import { DEFAULT_TEMPORAL_UI_PORT, temporalConnection, temporalUiPort } from './temporal-settings';
import { expandVariables, isOrigin, localOrigins } from './setting-values';

export { ConfigError };
export type { TraceExportConfig } from './trace-settings';
export { DEFAULT_TEMPORAL_UI_PORT };

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

/** A log level's name, as pino and the SDK core take it. */
const levelName = z.enum(LOG_LEVELS).optional();

/** Settings other settings' defaults depend on, declared before the table that holds them. */
const logLevelSetting = setting({
  variable: 'LOG_LEVEL',
  parse: text.pipe(levelName),
  default: 'info',
  deployment: false,
  doc: "what the worker logs: trace, debug, info, warn or error; at debug the start shows the workflow bundler's output",
});

/**
 * The configuration table. Each key is the field of {@link WorkerConfig};
 * each entry declares its variable, how it is read, its default and what it
 * does. docs/configuration.md's table lists the same variables (a unit test
 * says where they part).
 */
const SETTINGS = {
  temporal: {
    address: setting({
      variable: 'TEMPORAL_ADDRESS',
      parse: text,
      resolve: (_, { read }) => read(temporalConnection).address,
      doc: "host:port of a Temporal frontend (or the profile's address); unset: start the embedded dev server",
    }),
    connection: temporalConnection,
    namespace: setting({
      variable: 'TEMPORAL_NAMESPACE',
      parse: text,
      resolve: (_, { read }) => read(temporalConnection).namespace ?? 'default',
      doc: "the namespace (or the profile's), default `default`",
    }),
    taskQueue: setting({
      variable: 'TEMPORAL_TASK_QUEUE',
      parse: text,
      default: 'agent',
      doc: 'the task queue workers poll and clients start conversations on',
    }),
    cliPath: setting({
      variable: 'TEMPORAL_CLI_PATH',
      parse: text,
      deployment: false,
      doc: 'path of a `temporal` CLI binary for the embedded dev server',
    }),
    uiPort: temporalUiPort,
  },
  databaseUrl: setting({
    variable: 'DATABASE_URL',
    parse: text.pipe(
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, 'must look like postgres://user:password@host:5432/database')
        .optional(),
    ),
    doc: 'PostgreSQL connection string; unset: start embedded PostgreSQL',
  }),
  databaseSchema: setting({
    variable: 'AGENT_DATABASE_SCHEMA',
    parse: checkedBy(describeBadSchemaName),
    default: DEFAULT_DATABASE_SCHEMA,
    doc: "PostgreSQL schema of the project's tables",
  }),
  openai: {
    apiKey: setting({
      variable: 'OPENAI_API_KEY',
      parse: text,
      doc: 'key of an OpenAI-compatible provider; unset: the offline scripted demo model',
    }),
    baseUrl: setting({
      variable: 'OPENAI_BASE_URL',
      parse: text.pipe(
        z.url({ protocol: /^https?$/, error: 'must be an http(s) URL such as https://api.openai.com/v1' }).optional(),
      ),
      doc: "the provider's endpoint; unset: the SDK's (api.openai.com)",
    }),
    model: setting({
      variable: 'OPENAI_MODEL',
      parse: text,
      default: 'gpt-4o-mini',
      doc: 'the model of conversations that name none',
    }),
    contextWindow: setting({
      variable: 'OPENAI_CONTEXT_WINDOW',
      parse: wholeNumber(
        "must be the model's context window in tokens, a whole number such as 128000",
        z.number().min(1024, 'must be at least 1024 tokens'),
      ),
      doc: "the model's context window in tokens; unset: known for common models, else 128000 (src/activities/context-budget.ts)",
    }),
    api: setting({
      variable: 'OPENAI_API',
      parse: text.pipe(z.enum(MODEL_APIS, { error: 'must be chat (Chat Completions) or responses' }).optional()),
      doc: 'the API model calls speak: `chat` (Chat Completions) or `responses`; a conversation or agent may choose its own ([model-apis.md](model-apis.md))',
    }),
    prices: setting({
      variable: 'AGENT_MODEL_PRICES',
      parse: jsonVariable<ModelPrices>(
        'must be JSON such as {"gpt-4.1": {"input": 2, "output": 8}} (US dollars per million tokens)',
        describeBadPrices,
      ),
      doc: 'prices by model name, US dollars per million tokens; unset: costs are not computed',
    }),
  },
  dataDir: setting({
    variable: 'AGENT_DATA_DIR',
    parse: text,
    resolve: (dir) => path.resolve(dir ?? path.join(__dirname, '..', '..', '.data')),
    doc: "where embedded servers keep their files, the CLI's runtime file and the workflow bundle; default `.data` in the checkout",
  }),
  toolsModule: setting({
    variable: 'AGENT_TOOLS_MODULE',
    parse: text,
    doc: 'module whose `tools` (and `agents`, `guardrails`, `policy`) replace the demo back-office ones',
  }),
  approvalPolicy: group({
    members: {
      file: setting({
        variable: 'AGENT_APPROVAL_POLICY_FILE',
        parse: text,
        doc: 'a JSON file of approval policy rules (docs/approval-policies.md)',
      }),
      inline: setting({
        variable: 'AGENT_APPROVAL_POLICY',
        parse: text,
        doc: 'approval policy rules as JSON, in place of a file',
      }),
    },
    doc: 'who decides each tool call: a JSON approval policy, from a file or the variable itself; read when the worker starts',
    // Read by npm start alone (src/policies/policy-file.ts), so the CLI and `npm run api` never open the file.
    build: ({ file, inline }): ApprovalPolicySource => ({
      ...(file !== undefined ? { file } : {}),
      ...(inline !== undefined ? { inline } : {}),
    }),
  }),
  defaultAgent: setting({
    variable: 'AGENT_DEFAULT_AGENT',
    parse: text.pipe(
      z
        .string()
        .refine(
          (v) => v === 'none' || AGENT_NAME_PATTERN.test(v),
          'must be the name of one of the agents (1-52 letters, digits, "_" or "-"), or "none"',
        )
        .optional(),
    ),
    doc: "the agent of conversations that name none: a name, `none` (one unnamed agent), or unset (the tools module's first agent)",
  }),
  maxParallelToolCalls: setting({
    variable: 'AGENT_MAX_PARALLEL_TOOL_CALLS',
    parse: wholeNumber(
      `must be a whole number from 1 to ${MAX_PARALLEL_TOOL_CALLS_LIMIT}`,
      z
        .number()
        .min(1, `must be at least 1 (calls over the limit are answered with an error, never run)`)
        .max(
          MAX_PARALLEL_TOOL_CALLS_LIMIT,
          `must be at most ${MAX_PARALLEL_TOOL_CALLS_LIMIT}, the most tools a provider accepts`,
        ),
    ),
    default: DEFAULT_MAX_PARALLEL_TOOL_CALLS,
    doc: 'tool calls of one model response that run; the rest are answered with an error the model reads',
  }),
  maxCachedConversations: setting({
    variable: 'AGENT_MAX_CACHED_CONVERSATIONS',
    parse: wholeNumber(
      'must be a whole number of conversations, at least 2',
      z.number().min(2, 'must be at least 2 (a worker needs room for the conversations it is working on)'),
    ),
    default: DEFAULT_MAX_CACHED_CONVERSATIONS,
    doc: "conversations the worker keeps in memory (Temporal's sticky cache); the others are rebuilt from history",
  }),
  logLevel: logLevelSetting,
  coreLogLevel: setting({
    variable: 'AGENT_CORE_LOG_LEVEL',
    parse: text.pipe(levelName),
    // Warn, or LOG_LEVEL when that is quieter (error).
    default: ({ read }) => (read(logLevelSetting) === 'error' ? 'error' : 'warn'),
    check: (core, { read }) => {
      const worker = read(logLevelSetting);
      if (LOG_LEVELS.indexOf(core) >= LOG_LEVELS.indexOf(worker)) return undefined;
      return (
        `AGENT_CORE_LOG_LEVEL=${core} is more verbose than LOG_LEVEL=${worker}: the core's lines go through the worker's log, which would drop them. ` +
        `Set LOG_LEVEL=${core} too.`
      );
    },
    deployment: false,
    doc: "what the Temporal SDK's core (polling, activations, evictions) logs through the worker's log; at debug each activation's jobs",
  }),
  payloadKeys: setting({
    variable: 'AGENT_PAYLOAD_KEYS',
    parse: parsedBy(parsePayloadKeys, (message) => message.replace(/^AGENT_PAYLOAD_KEYS: /, '')),
    doc: 'keys that encrypt payloads (the first encrypts, all decrypt); unset: payloads are plain',
  }),
  metricsAddress: setting({
    variable: 'AGENT_METRICS_ADDRESS',
    parse: text.pipe(
      z
        .string()
        .regex(
          /^(off|[^\s:/]+:\d{1,5}|\[[0-9a-fA-F:]+\]:\d{1,5})$/,
          'must be host:port such as 127.0.0.1:9464, or "off" for no metrics endpoint',
        )
        .optional(),
    ),
    default: DEFAULT_METRICS_ADDRESS,
    doc: 'host:port of the Prometheus endpoint (`/metrics`); `off` for none',
  }),
  mcpServers: setting({
    variable: 'AGENT_MCP_SERVERS',
    parse: jsonVariable<McpServers>(
      'must be JSON such as {"crm": {"command": "node", "args": ["crm-mcp.js"]}, "tickets": {"url": "https://tickets.example.com/mcp"}}',
      (value) => describeBadMcpServers(value, 'the value').join('; ') || undefined,
    ),
    resolve: (servers, { env }) => servers && expandVariables(servers, env),
    doc: 'MCP servers whose tools conversations may use, with `${VAR}` replaced from the environment',
  }),
  searchAttributes: group({
    members: {
      groups: setting({
        variable: 'AGENT_SEARCH_ATTRIBUTES',
        parse: parsedBy(parseSearchAttributeGroups),
        doc: 'the search attribute groups the worker registers: auto (each that fits), none, or a list',
      }),
      prefix: setting({
        variable: 'AGENT_SEARCH_ATTRIBUTE_PREFIX',
        parse: checkedBy(describeBadSearchAttributePrefix),
        doc: "the search attributes' names' prefix",
      }),
    },
    doc: 'the search attribute groups the worker registers and their prefix; clients read the same (docs/search-attributes.md)',
    build: ({ groups, prefix }): SearchAttributeOptions => ({
      ...(prefix ? { prefix } : {}),
      ...(groups ? { groups } : {}),
    }),
  }),
  lostWorkers: group({
    members: {
      enabled: setting({
        variable: 'AGENT_LOST_WORKER_TAKEOVER',
        parse: yesNo,
        default: true,
        doc: "peers take over a worker killed outright (README, 'When a worker dies')",
      }),
      confirmMs: setting({
        variable: 'AGENT_LOST_WORKER_CONFIRM_MS',
        parse: wholeNumber(
          'must be a whole number of milliseconds',
          z
            .number()
            .min(
              100,
              'must be at least 100 ms (a worker reconnecting after a short cut must have time to lock its key again)',
            ),
        ),
        doc: "how long a worker's liveness lock stays free before a peer takes it over; unset: the plugin's",
      }),
    },
    doc: 'lost-worker takeover, on unless AGENT_LOST_WORKER_TAKEOVER=false',
    build: ({ enabled, confirmMs }) => ({ enabled, ...(confirmMs ? { confirmMs } : {}) }),
  }),
  webhooks: group({
    members: {
      file: setting({
        variable: 'AGENT_WEBHOOKS_FILE',
        parse: text,
        doc: 'a JSON file of webhook endpoints, readable by its owner only (it holds their secrets)',
      }),
      url: setting({
        variable: 'AGENT_WEBHOOK_URL',
        parse: text.pipe(
          z
            .url({ protocol: /^https?$/, error: 'must be an http(s) URL such as https://hooks.example.com/agent' })
            .optional(),
        ),
        doc: 'one webhook endpoint, in place of a file',
      }),
      secret: setting({
        variable: 'AGENT_WEBHOOK_SECRET',
        parse: text,
        doc: "`keyId:secret` that signs AGENT_WEBHOOK_URL's deliveries",
      }),
    },
    doc: 'webhooks about waiting calls (docs/notifications.md): endpoints from a file, or one from AGENT_WEBHOOK_URL and AGENT_WEBHOOK_SECRET; read when the worker starts',
    refine: ({ file, url, secret }, refuse) => {
      if (file !== undefined && url !== undefined)
        refuse(
          'url',
          'is set with AGENT_WEBHOOKS_FILE: give the endpoints in the file, or one endpoint here, not both',
        );
      if (url !== undefined && secret === undefined)
        refuse('secret', 'must be set with AGENT_WEBHOOK_URL: keyId:secret, such as k1:$(openssl rand -hex 32)');
      if (url === undefined && secret !== undefined)
        refuse('secret', 'is set without AGENT_WEBHOOK_URL: set the URL it signs for, or unset it');
    },
    // Read by npm start alone (src/app/webhook-settings.ts), so the CLI and `npm run api` never open the file.
    build: ({ file, url, secret }): WebhookSource => ({
      ...(file !== undefined ? { file } : {}),
      ...(url !== undefined ? { url } : {}),
      ...(secret !== undefined ? { secret } : {}),
    }),
  }),
  traces: traceSettings,
  api: {
    host: setting({
      variable: 'AGENT_API_HOST',
      parse: text,
      default: '127.0.0.1',
      doc: 'where the HTTP API and inbox page listen',
    }),
    port: setting({
      variable: 'AGENT_API_PORT',
      parse: text.pipe(
        z
          .string()
          .regex(/^(off|\d+)$/, 'must be a port number (0 for any free port), or "off" for no HTTP API')
          .transform((v) => (v === 'off' ? ('off' as const) : Number(v)))
          .refine((v) => v === 'off' || v <= 65535, 'must be at most 65535')
          .optional(),
      ),
      default: 8787,
      doc: "the HTTP API's port; `0` for any free one, `off` for none",
    }),
    tokensFile: setting({
      variable: 'AGENT_API_TOKENS_FILE',
      parse: text,
      doc: 'JSON list of static tokens; unset: development tokens made in the data folder',
    }),
    oidc: group({
      members: {
        issuer: setting({
          variable: 'AGENT_OIDC_ISSUER',
          parse: text,
          doc: 'the issuer whose bearer JWTs are accepted',
        }),
        audience: setting({ variable: 'AGENT_OIDC_AUDIENCE', parse: text, doc: 'the audience they must carry' }),
        jwksUrl: setting({
          variable: 'AGENT_OIDC_JWKS_URL',
          parse: text,
          doc: "where the issuer's keys are; unset: discovered",
        }),
        rolesClaim: setting({
          variable: 'AGENT_OIDC_ROLES_CLAIM',
          parse: text,
          doc: 'the claim (dotted path) with the roles',
        }),
        groupsClaim: setting({
          variable: 'AGENT_OIDC_GROUPS_CLAIM',
          parse: text,
          doc: "the claim (dotted path) with the groups an approval policy's rules name",
        }),
        subjectClaim: setting({
          variable: 'AGENT_OIDC_SUBJECT_CLAIM',
          parse: text,
          doc: 'the claim naming the person',
        }),
      },
      doc: 'OIDC/JWT bearer tokens, when an issuer is set',
      build: ({ issuer, ...rest }) => (issuer ? { issuer, ...rest } : undefined),
    }),
    decisionKeys: setting({
      variable: 'AGENT_DECISION_KEYS',
      parse: text,
      doc: '`id:secret[,id:secret]` that sign decisions; unset: a key made in the data folder',
    }),
    decisionKeysFile: setting({
      variable: 'AGENT_DECISION_KEYS_FILE',
      parse: text,
      doc: 'a file holding the decision keys',
    }),
    requireSignedDecisions: setting({
      variable: 'AGENT_REQUIRE_SIGNED_DECISIONS',
      parse: yesNo,
      default: true,
      doc: 'refuse unsigned decisions',
    }),
    allowSelfApproval: setting({
      variable: 'AGENT_ALLOW_SELF_APPROVAL',
      parse: yesNo,
      default: false,
      doc: "let a turn's requester approve its calls (no four eyes)",
    }),
    codecCorsOrigins: setting({
      variable: 'AGENT_CODEC_CORS_ORIGINS',
      parse: text.pipe(
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
      // The embedded dev server's UI when Temporal is embedded, else none.
      resolve: (origins, { read }) =>
        origins ?? (read(temporalConnection).address ? [] : localOrigins(read(temporalUiPort))),
      doc: "browser origins (the Temporal UI's) that may call the codec server with credentials",
    }),
  },
};

/**
 * The worker's settings, one field per entry of the configuration table. Unset connection settings mean "start an
 * embedded one".
 */
export type WorkerConfig = ConfigOf<typeof SETTINGS>;

/** Reads the configuration from `env` (default `process.env`), with clear errors for bad values. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  return readSettings(SETTINGS, env);
}

/** The environment variables a deployment sets (docker-compose.yml's worker lists each; see docs/configuration.md). */
export const ENV_VARS: readonly string[] = deploymentVariables(SETTINGS);

/**
 * Every variable the configuration table declares, with its line of doc and plain default, for the configuration page.
 */
export function declaredVariables(): DeclaredVariable[] {
  return variablesOf(SETTINGS);
}
