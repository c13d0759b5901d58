/**
 * Waiting for PostgreSQL when a worker starts: a database restarting (a
 * failover, a maintenance window) delays the start instead of failing it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'pg';
import { logger } from '../runtime/logger';
import { isConnectionError } from './retry';

/** How long a starting worker waits for PostgreSQL by default. */
export const DEFAULT_DATABASE_WAIT_MS = 60_000;

/**
 * Resolves once `pool` answers a query. While PostgreSQL cannot be reached it
 * tries again (every 0.25 s, growing to 2 s) for at most `forMs`, logging
 * once; then, or at once for any other error, it throws the last error.
 */
export async function waitForDatabase(pool: Pool, forMs = DEFAULT_DATABASE_WAIT_MS): Promise<void> {
  const started = Date.now();
  let warned = false;
  for (let attempt = 1; ; attempt++) {
    try {
      await pool.query('SELECT 1');
      if (warned) logger.info({ waitedMs: Date.now() - started }, 'PostgreSQL is reachable again');
      return;
    } catch (err) {
      if (!isConnectionError(err) || Date.now() - started >= forMs) {
        if (warned && err instanceof Error) err.message = `${err.message} (after waiting ${Math.round((Date.now() - started) / 1000)} s for PostgreSQL)`;
        throw err;
      }
      if (!warned) logger.warn({ error: (err as Error).message, waitUpToMs: forMs }, 'PostgreSQL is unreachable; waiting for it before starting');
      warned = true;
      await sleep(Math.min(250 * attempt, 2_000));
    }
  }
}
