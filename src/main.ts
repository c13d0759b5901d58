/**
 * `npm start`: runs the agent worker. Starts embedded Temporal, PostgreSQL
 * and an offline demo model for whatever the environment does not configure.
 * Ctrl-C shuts everything down cleanly.
 */
import { NativeConnection } from '@temporalio/worker';
import { createOpenAIClient } from './activities/openai-client';
import { migrate } from './db/migrations';
import { createPool } from './db/pool';
import { ConfigError, loadConfig } from './runtime/config';
import { logger } from './runtime/logger';
import { startServices } from './runtime/services';
import { connectionOptions, EMBEDDED_DEV_SERVER, explainConnectionFailure } from './runtime/temporal-connection';
import { createAgentWorker } from './runtime/worker';
import { backofficeTools } from './tools/backoffice';
import { loadToolsModule } from './tools/load';

async function main(): Promise<void> {
  const config = loadConfig();
  const services = await startServices(config);
  const pool = createPool(services.databaseUrl);
  let connection: NativeConnection | undefined;
  try {
    const applied = await migrate(pool);
    if (applied.length > 0) logger.info({ versions: applied }, 'applied database migrations');
    // The embedded dev server takes plain connections; a configured one gets TLS, API key and metadata.
    const settings = services.temporalEmbedded ? EMBEDDED_DEV_SERVER : config.temporal.connection;
    const options = { address: services.temporalAddress, ...connectionOptions(settings) };
    // The worker's plugin registers the search attributes a configured namespace lacks before it polls.
    connection = await explainConnectionFailure(settings, services.temporalAddress, () => NativeConnection.connect(options));
    const worker = await createAgentWorker({
      connection,
      namespace: services.namespace,
      taskQueue: services.taskQueue,
      pool,
      openai: createOpenAIClient({ apiKey: services.model.apiKey, baseUrl: services.model.baseUrl }),
      defaultModel: services.model.name,
      contextWindow: config.openai.contextWindow,
      tools: config.toolsModule ? await loadToolsModule(config.toolsModule) : backofficeTools(),
      maxParallelToolCalls: config.maxParallelToolCalls,
    });
    printBanner(services);
    await worker.run();
    logger.info('worker stopped');
  } finally {
    await connection?.close().catch(() => undefined);
    await pool.end().catch(() => undefined);
    await services.stop();
  }
}

function printBanner(services: Awaited<ReturnType<typeof startServices>>): void {
  const lines = [
    '',
    'Durable agent worker is running.',
    `  Temporal     ${services.temporalAddress}  (${services.origins.temporal})`,
    ...(services.temporalUiUrl ? [`  Temporal UI  ${services.temporalUiUrl}`] : []),
    `  PostgreSQL   ${services.origins.postgres}`,
    `  Model        ${services.origins.model}`,
    `  Task queue   ${services.taskQueue}`,
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

main().catch((err) => {
  // A configuration problem is said plainly, as written for the person starting the worker.
  if (err instanceof ConfigError) process.stderr.write(`The worker cannot start: ${err.message}\n`);
  else logger.error({ err }, 'worker failed');
  process.exitCode = 1;
});
