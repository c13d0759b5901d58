/** Waiting for PostgreSQL when a worker starts (see `waitForServer`). */
import type { Pool } from 'pg';
import { waitForServer } from '../common/wait-for-server';
import { isConnectionError } from './errors';

/** How long a starting worker waits for PostgreSQL by default. */
export const DEFAULT_DATABASE_WAIT_MS = 60_000;

/**
 * Resolves once `pool` answers a query, waiting up to `forMs` while
 * PostgreSQL cannot be reached; any other error is thrown at once.
 */
export async function waitForDatabase(pool: Pool, forMs = DEFAULT_DATABASE_WAIT_MS): Promise<void> {
  await waitForServer('PostgreSQL', () => pool.query('SELECT 1'), isConnectionError, forMs);
}
