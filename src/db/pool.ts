/** The one place that builds PostgreSQL connection pools. */
import { Pool } from 'pg';
import { logger } from '../common/logger';

/** Opens a pool on `databaseUrl`. Idle-client errors are logged, not fatal. */
export function createPool(databaseUrl: string, max = 10): Pool {
  const pool = new Pool({ connectionString: databaseUrl, max });
  pool.on('error', (err) => logger.warn({ error: err.message }, 'PostgreSQL closed an idle connection'));
  return pool;
}
