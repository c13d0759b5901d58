/** The one logger of the worker and its tools. */
import type { Logger as SdkLogger, LogLevel, LogMetadata } from '@temporalio/worker';
import pino from 'pino';

/** The levels of `LOG_LEVEL` (and `AGENT_CORE_LOG_LEVEL`), most verbose first. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;

/** A log level: `trace`, `debug`, `info`, `warn` or `error`. */
export type LogLevelName = (typeof LOG_LEVELS)[number];

const asked = process.env.LOG_LEVEL?.trim();

/**
 * Process-wide logger; level from `LOG_LEVEL` (default info). A level it does
 * not know falls back to info here, so the configuration's validation (which
 * runs after this module loads) can say what is wrong instead of a crash.
 */
export const logger = pino({
  level: asked && (LOG_LEVELS as readonly string[]).includes(asked) ? asked : 'info',
  base: undefined,
});

/** The Temporal SDK's logger interface over one function that takes the level. */
export function sdkLogger(log: (level: LogLevel, message: string, meta?: LogMetadata) => void): SdkLogger {
  return {
    log,
    trace: (message, meta) => log('TRACE', message, meta),
    debug: (message, meta) => log('DEBUG', message, meta),
    info: (message, meta) => log('INFO', message, meta),
    warn: (message, meta) => log('WARN', message, meta),
    error: (message, meta) => log('ERROR', message, meta),
  };
}
