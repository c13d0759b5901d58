/**
 * `npm run api`: the HTTP API and inbox page on their own, beside workers
 * that run elsewhere. Needs TEMPORAL_ADDRESS and DATABASE_URL (it starts no
 * embedded services), and the same decision keys as the workers
 * (AGENT_DECISION_KEYS or AGENT_DECISION_KEYS_FILE; the data folder's key
 * when both run from one checkout).
 */
import { AgentClient } from '../client/client';
import { ConfigError, loadConfig } from '../runtime/config';
import { logger } from '../runtime/logger';
import { connectionOptions, explainConnectionFailure } from '../runtime/temporal-connection';
import { resolveApiSecurity, serveConfiguredApi } from './setup';
import { encryptingDataConverter } from '../codec';

async function main(): Promise<void> {
  const config = loadConfig();
  const address = config.temporal.address;
  if (!address || !config.databaseUrl) {
    throw new ConfigError('The API on its own needs TEMPORAL_ADDRESS and DATABASE_URL, where the workers run; `npm start` serves it beside an embedded stack instead.');
  }
  const security = resolveApiSecurity(config);
  const settings = config.temporal.connection;
  const client = await explainConnectionFailure(settings, address, () =>
    AgentClient.connect({
      temporalAddress: address,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      databaseUrl: config.databaseUrl,
      schema: config.databaseSchema,
      // A request about a conversation no worker answers for gets 503 no_worker, not a hang.
      queryTimeoutMs: 10_000,
      dataConverter: encryptingDataConverter(config.payloadKeys),
      ...connectionOptions(settings),
    }),
  );
  const api = await serveConfiguredApi(config, security, client);
  process.stdout.write(`HTTP API on ${api.url}/v1, inbox on ${api.url}/inbox (tokens: ${security.developmentTokensFile ?? config.api.tokensFile}).\n`);
  const stop = async () => {
    await api.stop().catch(() => undefined);
    await client.close().catch(() => undefined);
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
