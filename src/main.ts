/**
 * `npm start`: runs the agent worker. Starts embedded Temporal, PostgreSQL
 * and an offline demo model for whatever the environment does not configure.
 * Ctrl-C shuts everything down cleanly.
 */
import './app/node-check';
// Second: from here on, Ctrl-C asks for a clean stop, while the other modules load too.
import { stop, StopRequestedError } from './app/stop-signals';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { resolveApiSecurity, serveConfiguredApi, type ApiSecurity } from './app/api-setup';
import { AgentClient } from './client/client';
import type { Pool } from 'pg';
import { createPool } from './db/pool';
import { ConfigError, loadConfig, type WorkerConfig } from './app/config';
import { pluginOptionsFrom } from './app/plugin-options';
import { logger } from './common/logger';
import { endServerWaitsOn, TEMPORAL_START_WAIT_MS } from './common/wait-for-server';
import { recordApi } from './app/runtime-file';
import { startServices } from './app/services';
import {
  connectionOptions,
  EMBEDDED_DEV_SERVER,
  explainConnectionFailure,
  waitForNamespace,
} from './app/temporal-connection';
import { createAgentWorker } from './worker/worker';
import { SearchAttributeLimitError } from './worker/search-attributes';
import { PreReleaseConversationsError } from './worker/pre-release-conversations';
import { installRuntime, watchApprovalBacklog } from './app/telemetry';
import { encryptingDataConverter } from './codec';
import { bundleWorkflowsApart } from './worker/workflow-bundle';
import { describeTraceExport, startTraceExport, type TraceExport } from './app/tracing-setup';
import { backofficeAgents, backofficeTools } from './demo/tools';
import { setupBackofficeDemo } from './demo/data';
import { loadToolsModule } from './app/tools-module';
import type { Tool } from './tools/tool';
import type { Agent } from './tools/agents';
import type { Guardrail } from './tools/guardrails';
import { readApprovalPolicy } from './policies/policy-file';
import { readWebhookSettings } from './app/webhook-settings';
import type { NotificationOptions } from './notifications/options';
import type { ApprovalPolicy } from './policies/approval-policy';

/**
 * SIGINT and SIGTERM (src/app/stop-signals.ts) stop everything at any point,
 * and the process exits 0: while the modules load (nothing has started), while
 * the services start (the one starting finishes, the next does not begin),
 * while the worker is prepared (every wait for a server ends), or once the
 * worker runs (it drains). Then the API, the connections and every service
 * this process started stop, in reverse order. Without this a signal during
 * the start would end the process and leave Temporal and PostgreSQL running.
 */
let runningWorker: Worker | undefined;
/** Trace export, when the OpenTelemetry variables set an OTLP endpoint (README, "Traces"); the banner says where. */
let traceExport: TraceExport | undefined;
stop.onStop(() => {
  try {
    runningWorker?.shutdown();
  } catch {
    // Not running yet (the SDK's own signal handler stops it as it starts) or already shutting down.
  }
});
endServerWaitsOn(stop.signal);

async function main(): Promise<void> {
  if (stop.requested) return;
  const config = loadConfig();
  // Before anything touches Temporal (the embedded server too): the runtime's logger and metrics endpoint are set once.
  const { metricsUrl } = installRuntime(config.metricsAddress, config.coreLogLevel);
  // Tokens and decision keys are settled before anything starts: a bad token file stops here.
  const security = resolveApiSecurity(config);
  // So is the approval policy of AGENT_APPROVAL_POLICY_FILE or AGENT_APPROVAL_POLICY: a bad rule stops here.
  const configuredPolicy = readApprovalPolicy(config.approvalPolicy);
  // And the webhooks of AGENT_WEBHOOKS_FILE or AGENT_WEBHOOK_URL: a file others can read, or a bad endpoint, stops here.
  const notifications = readWebhookSettings(config.webhooks);
  // Before anything starts too: a missing tracing package stops here. Nothing makes spans until the worker runs.
  traceExport = config.traces && startTraceExport(config.traces);
  // Encrypted payloads: the workers, their workflow bundle and the clients share one data converter.
  const dataConverter = encryptingDataConverter(config.payloadKeys);
  // The workflow bundle is made (or an earlier one reused) while the services start: both take seconds.
  const bundling = bundleWorkflowsApart(
    config.dataDir,
    {
      failureConverterPath: dataConverter.failureConverterPath,
      // Traces: the OpenTelemetry plugin's workflow interceptors, which a prebuilt bundle gets only here.
      workflowInterceptorModules: traceExport?.workflowInterceptorModules,
    },
    stop.signal,
  );
  bundling.catch(() => undefined); // awaited below; a start that stops before then does not fail on it
  const services = await startServices(config, stop.signal);
  const pool = createPool(services.databaseUrl);
  // Until the worker runs, a stop ends what the preparation asks of PostgreSQL; once it runs, it drains with the pool.
  stop.onStop(() => runningWorker || void pool.end().catch(() => undefined));
  let connection: NativeConnection | undefined;
  let client: AgentClient | undefined;
  let api: Awaited<ReturnType<typeof serveConfiguredApi>> | undefined;
  let stopBacklog: (() => void) | undefined;
  try {
    stop.signal.throwIfAborted();
    const loaded = await loadTools(config, pool);
    // The embedded dev server takes plain connections; a configured one gets TLS, API key and metadata.
    const settings = services.temporalEmbedded ? EMBEDDED_DEV_SERVER : config.temporal.connection;
    const options = { address: services.temporalAddress, ...connectionOptions(settings) };
    // The worker's plugin applies the migrations and registers the search attributes a namespace lacks
    // while the worker is created, before it polls.
    // A server restarting (a deploy, a failover) delays the start rather than failing it.
    connection = await explainConnectionFailure(
      settings,
      services.temporalAddress,
      () => NativeConnection.connect(options),
      {
        waitMs: TEMPORAL_START_WAIT_MS,
      },
    );
    // A cluster that has just started (or lost its database a moment) may not know the namespace yet.
    await waitForNamespace(connection, services.namespace, services.temporalAddress, TEMPORAL_START_WAIT_MS);
    const { codePath, reused } = await bundling;
    stop.signal.throwIfAborted();
    if (reused)
      logger.debug({ codePath }, 'reused the workflow bundle of an earlier start: nothing it is made of changed');
    const workflowBundle = { codePath };
    const worker = await createAgentWorker({
      ...pluginOptionsFrom(config, {
        pool,
        model: services.model,
        ...loaded,
        configuredPolicy,
        decisionTrust: security.decisionTrust,
        notifications,
      }),
      connection,
      namespace: services.namespace,
      taskQueue: services.taskQueue,
      dataConverter,
      maxCachedConversations: config.maxCachedConversations,
      workflowBundle,
      plugins: traceExport ? [traceExport.plugin] : [],
    });
    // From here a stop skips what is left and runs the worker, which stops at once: it then lets go of its connection.
    if (!stop.requested && (config.api.port !== 'off' || metricsUrl)) {
      client = await AgentClient.connect({
        temporalAddress: services.temporalAddress,
        namespace: services.namespace,
        taskQueue: services.taskQueue,
        databaseUrl: services.databaseUrl,
        schema: config.databaseSchema,
        searchAttributes: config.searchAttributes,
        // A request about a conversation no worker answers for gets 503 no_worker, not a hang.
        queryTimeoutMs: 10_000,
        dataConverter,
        // Traces: a message sent through the API starts the conversation's trace.
        plugins: traceExport ? [traceExport.plugin] : [],
        ...connectionOptions(settings),
      });
    }
    if (!stop.requested && client && config.api.port !== 'off') {
      api = await serveConfiguredApi(config, security, client);
      // The CLI on this machine decides through this API (as the development approver when the tokens are ours),
      // whether Temporal is embedded or a team's cluster.
      recordApi(config.dataDir, { apiUrl: api.url, developmentTokensFile: security.developmentTokensFile });
    }
    if (!stop.requested && client && metricsUrl) stopBacklog = watchApprovalBacklog(client);
    if (!stop.requested)
      printBanner(
        services,
        api?.url,
        security,
        metricsUrl,
        config,
        loaded.approvalPolicy ?? configuredPolicy,
        notifications,
      );
    runningWorker = worker;
    await worker.run();
    logger.info('worker stopped');
  } finally {
    stopBacklog?.();
    await api?.stop().catch(() => undefined);
    await client?.close().catch(() => undefined);
    await connection?.close().catch(() => undefined);
    await pool.end().catch(() => undefined);
    // The worker has drained: the spans still buffered go out now.
    await traceExport?.shutdown();
    await services.stop();
  }
}

/**
 * The tools and agents of AGENT_TOOLS_MODULE (and its guardrails and
 * approval policy), else the demo's, with the demo's tables set up
 * (migrations never create them). Conversations that name no agent are with
 * the first agent.
 */
async function loadTools(
  config: WorkerConfig,
  pool: Pool,
): Promise<{ tools: Tool[]; agents: Agent[]; guardrails: Guardrail[]; approvalPolicy?: ApprovalPolicy }> {
  if (config.toolsModule) return loadToolsModule(config.toolsModule);
  await setupBackofficeDemo(pool);
  const tools = backofficeTools();
  return { tools, agents: backofficeAgents(tools), guardrails: [] };
}

function printBanner(
  services: Awaited<ReturnType<typeof startServices>>,
  apiUrl: string | undefined,
  security: ApiSecurity,
  metricsUrl: string | undefined,
  config: WorkerConfig,
  policy: ApprovalPolicy | undefined,
  notifications: NotificationOptions | undefined,
): void {
  const payloadsEncrypted = config.payloadKeys !== undefined;
  const mcp = Object.entries(config.mcpServers ?? {}).map(
    ([name, s]) => `${name} (${'command' in s ? 'stdio' : 'http'})`,
  );
  const api = apiUrl
    ? [
        `  HTTP API     ${apiUrl}/v1  (OpenAPI: ${apiUrl}/openapi.json)`,
        `  Inbox        ${apiUrl}/inbox`,
        ...(security.developmentTokensFile
          ? [
              `  Tokens       made for local development, in ${security.developmentTokensFile} (mode 0600)${process.stdout.isTTY ? ':' : ''}`,
              // Printed to a terminal only: where output is collected (a container's log), it would leave the file's
              // protection.
              ...(process.stdout.isTTY
                ? security.tokens.map(
                    (t) => `                 ${t.subject.padEnd(16)} ${t.roles.join(', ').padEnd(22)} ${t.token}`,
                  )
                : ['               (not printed: the output is not a terminal)']),
            ]
          : [
              `  Tokens       ${security.tokens.length} from AGENT_API_TOKENS_FILE${security.authenticate ? ', and OIDC tokens' : ''}`,
            ]),
        `  Decisions    signed with a key from ${security.decisionKeysOrigin}; unsigned ones ${security.decisionTrust.requireSigned === false ? 'recorded as unauthenticated' : 'refused'}`,
        ...(payloadsEncrypted
          ? [`  Codec        ${apiUrl}/codec  (decodes encrypted payloads for operators: README, "Encrypted payloads")`]
          : []),
      ]
    : ['  HTTP API     off (AGENT_API_PORT=off)'];
  const lines = [
    '',
    'Durable agent worker is running.',
    `  Temporal     ${services.temporalAddress}  (${services.origins.temporal})`,
    ...(services.temporalUiUrl ? [`  Temporal UI  ${services.temporalUiUrl}`] : []),
    `  PostgreSQL   ${services.origins.postgres}`,
    `  Model        ${services.origins.model}`,
    `  Task queue   ${services.taskQueue}`,
    `  MCP servers  ${mcp.length > 0 ? mcp.join(', ') : 'none (AGENT_MCP_SERVERS)'}`,
    `  Approvals    ${describePolicy(policy, config)}`,
    `  Webhooks     ${describeWebhooks(notifications, config)}`,
    ...api,
    `  Metrics      ${metricsUrl ?? 'off (AGENT_METRICS_ADDRESS=off)'}`,
    `  Traces       ${describeTraceExport(traceExport)}`,
    '',
    'Talk to it from another terminal:',
    '  npm run cli -- chat                 interactive conversation',
    '  npm run cli -- say <id> "find Ada"  one message, prints the answer',
    '  npm run cli -- show <id>            the transcript',
    'Press Ctrl-C to stop.',
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** The banner's line on the webhooks: the endpoints' names and hosts (never their secrets), from where. */
function describeWebhooks(notifications: NotificationOptions | undefined, config: WorkerConfig): string {
  if (!notifications || notifications.endpoints.length === 0) return 'none (AGENT_WEBHOOKS_FILE, AGENT_WEBHOOK_URL)';
  const endpoints = notifications.endpoints.map((e) => `${e.name} (${new URL(e.url).host})`).join(', ');
  return `${endpoints} from ${config.webhooks.file ?? 'AGENT_WEBHOOK_URL'}`;
}

/** The banner's line on the approval policy: how many rules, from where. */
function describePolicy(policy: ApprovalPolicy | undefined, config: WorkerConfig): string {
  if (!policy) return "each tool's needsApproval (no approval policy: AGENT_APPROVAL_POLICY_FILE)";
  const rules = `${policy.rules.length} approval policy rule${policy.rules.length === 1 ? '' : 's'}`;
  if (config.approvalPolicy.file) return `${rules} from ${config.approvalPolicy.file}`;
  if (config.approvalPolicy.inline) return `${rules} from AGENT_APPROVAL_POLICY`;
  return `${rules} from the tools module`;
}

main().then(
  () => {
    // Everything this process started has stopped (main's finally). A gRPC retry timer of a call the stop cut short, or
    // a worker made but never run, would keep the process up a while longer for nothing.
    if (stop.requested) process.exit(0);
  },
  (err: unknown) => {
    if (stop.requested) {
      // A stop during the start: what failed failed because of it (a wait it ended, a server that got the same Ctrl-C,
      // the bundler stopped with it). Said in a line, not as a crash; it was asked for, so the exit is 0.
      if (!(err instanceof StopRequestedError))
        logger.info({ startEndedWith: err instanceof Error ? err.message : String(err) }, 'stopped while starting');
      process.exit(0);
    }
    failed(err);
  },
);

function failed(err: unknown): never {
  // A configuration or database layout problem is said plainly, as written for the person starting the worker.
  if (
    err instanceof ConfigError ||
    err instanceof SearchAttributeLimitError ||
    err instanceof PreReleaseConversationsError
  )
    process.stderr.write(`The worker cannot start: ${err.message}\n`);
  else logger.error({ err }, 'worker failed');
  // Everything this process started has stopped by now (main's finally). Exit rather than wait for the event loop to
  // empty: Temporal's runtime, once installed, keeps the process alive until a connection or worker it made closes, and
  // a
  // start that failed before making one (a tools module that does not load) would otherwise hang, ignoring SIGTERM.
  process.exit(1);
}
