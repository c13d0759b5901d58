/** The one logger of the worker and its tools. */
import pino from 'pino';

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error'];
const asked = process.env.LOG_LEVEL?.trim();

/**
 * Process-wide logger; level from `LOG_LEVEL` (default info). A level it does
 * not know falls back to info here, so the configuration's validation (which
 * runs after this module loads) can say what is wrong instead of a crash.
 */
export const logger = pino({ level: asked && LEVELS.includes(asked) ? asked : 'info', base: undefined });
