/**
 * The standalone worker's Temporal runtime: its logs go through the worker's
 * logger (the SDK's, the native core's and the workflows' own `log` lines),
 * and its metrics (the SDK's and the agent's) are served in Prometheus format
 * on `AGENT_METRICS_ADDRESS`. A team's own worker installs its own runtime;
 * the agent's metrics reach it through the SDK's meters all the same.
 */
import { makeTelemetryFilterString, Runtime, type Logger, type LogLevel, type LogMetadata } from '@temporalio/worker';
import { ConfigError } from '../common/errors';
import type { AgentClient } from '../client/client';
import { AGENT_METRICS, agentHistogramBuckets } from '../contract/metrics';
import { logger, sdkLogger, type LogLevelName } from '../common/logger';

/**
 * Installs the process's Temporal runtime. Call once, before anything
 * connects to Temporal. `coreLogLevel` (`AGENT_CORE_LOG_LEVEL`) is what the
 * SDK's core forwards to the worker's log; everything else in it (its HTTP
 * and gRPC libraries) stays at `error`, as the SDK's default. Returns the
 * metrics URL, if any.
 */
export function installRuntime(metricsAddress: string | 'off', coreLogLevel: LogLevelName): { metricsUrl?: string } {
  try {
    Runtime.install({
      logger: pinoLogger(),
      telemetryOptions: {
        logging: {
          forward: {},
          filter: makeTelemetryFilterString({ core: coreLogLevel.toUpperCase() as LogLevel, other: 'ERROR' }),
        },
        ...(metricsAddress === 'off'
          ? {}
          : {
              metrics: {
                prometheus: { bindAddress: metricsAddress, histogramBucketOverrides: agentHistogramBuckets() },
              },
            }),
      },
    });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (/address already in use/i.test(message)) {
      throw new ConfigError(
        `AGENT_METRICS_ADDRESS: ${metricsAddress} is in use by another process (another worker on this machine?). ` +
          'Set AGENT_METRICS_ADDRESS to a free host:port, or to off for no metrics endpoint.',
      );
    }
    if (/metrics|prometheus|address/i.test(message)) {
      throw new ConfigError(
        `AGENT_METRICS_ADDRESS: cannot serve metrics on ${metricsAddress} (${message}). Set a host:port of this machine, or off.`,
      );
    }
    throw err;
  }
  return metricsAddress === 'off' ? {} : { metricsUrl: `http://${metricsAddress}/metrics` };
}

/** The SDK's logger interface over the worker's pino logger. */
function pinoLogger(): Logger {
  // The SDK names an error `error`; pino serializes one (type, message, stack) under `err` only.
  const fields = (meta: LogMetadata | undefined): LogMetadata => {
    if (!meta || !(meta.error instanceof Error)) return meta ?? {};
    const { error, ...rest } = meta;
    return { ...rest, err: error };
  };
  return sdkLogger((level, message, meta) => logger[level.toLowerCase() as Lowercase<LogLevel>](fields(meta), message));
}

/** How often the standalone worker counts the conversations waiting for a person. */
export const APPROVAL_BACKLOG_INTERVAL_MS = 15_000;

/**
 * Keeps the `agent_conversations_awaiting_approval` gauge current: counts
 * through Temporal's visibility now and every `intervalMs`. Returns a
 * function that stops it. A failed count is logged once until one succeeds.
 */
export function watchApprovalBacklog(client: AgentClient, intervalMs = APPROVAL_BACKLOG_INTERVAL_MS): () => void {
  const spec = AGENT_METRICS.conversationsAwaitingApproval;
  const gauge = Runtime.instance().metricMeter.createGauge(spec.name, 'int', spec.unit, spec.description);
  let failing = false;
  let running = false;
  const count = async () => {
    if (running) return;
    running = true;
    try {
      for (const figure of await client.approvalBacklog()) gauge.set(figure.conversations, { waited: figure.waited });
      failing = false;
    } catch (err) {
      if (!failing)
        logger.warn({ err }, 'could not count the conversations waiting for approval; the gauge keeps its last value');
      failing = true;
    } finally {
      running = false;
    }
  };
  void count();
  const timer = setInterval(() => void count(), intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
