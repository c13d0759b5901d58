/**
 * `npm run api`: the HTTP API and inbox page on their own, beside workers
 * that run elsewhere. Needs TEMPORAL_ADDRESS and DATABASE_URL (it starts no
 * embedded services), and the same decision keys as the workers
 * (AGENT_DECISION_KEYS or AGENT_DECISION_KEYS_FILE; the data folder's key
 * when both run from one checkout).
 */
import './node-check';
import { AgentClient } from '../client/client';
import { ConfigError, loadConfig } from './config';
import { logger } from '../common/logger';
import { connectionOptions, explainConnectionFailure } from './temporal-connection';
import { resolveApiSecurity, serveConfiguredApi } from './api-setup';
import { encryptingDataConverter } from '../codec';
import { describeTraceExport, startTraceExport } from './tracing-setup';

async function main(): Promise<void> {
  const config = loadConfig();
  const address = config.temporal.address;
  if (!address || !config.databaseUrl) {
    throw new ConfigError(
      'The API on its own needs TEMPORAL_ADDRESS and DATABASE_URL, where the workers run; `npm start` serves it beside an embedded stack instead.',
    );
  }
  const security = resolveApiSecurity(config);
  // Traces, when the OpenTelemetry variables set an OTLP endpoint: each message sent starts its conversation's trace.
  const traces = config.traces && startTraceExport(config.traces);
  const settings = config.temporal.connection;
  const client = await explainConnectionFailure(settings, address, () =>
    AgentClient.connect({
      temporalAddress: address,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      databaseUrl: config.databaseUrl,
      schema: config.databaseSchema,
      searchAttributes: config.searchAttributes,
      // A request about a conversation no worker answers for gets 503 no_worker, not a hang.
      queryTimeoutMs: 10_000,
      dataConverter: encryptingDataConverter(config.payloadKeys),
      plugins: traces ? [traces.plugin] : [],
      ...connectionOptions(settings),
    }),
  );
  const api = await serveConfiguredApi(config, security, client);
  process.stdout.write(
    `HTTP API on ${api.url}/v1, inbox on ${api.url}/inbox (tokens: ${security.developmentTokensFile ?? config.api.tokensFile}).\n`,
  );
  process.stdout.write(`Traces: ${describeTraceExport(traces)}.\n`);
  const stop = async () => {
    await api.stop().catch(() => undefined);
    await client.close().catch(() => undefined);
    // The spans still buffered go out before the process ends.
    await traces?.shutdown();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch((err) => {
  if (err instanceof ConfigError) process.stderr.write(`The API cannot start: ${err.message}\n`);
  else logger.error({ err }, 'API failed');
  process.exitCode = 1;
});
