/** One PostgreSQL transaction on a pooled client. */
import type { Pool, PoolClient } from 'pg';
import { logger } from '../common/logger';

/**
 * Runs `work` inside BEGIN … COMMIT on one client of `pool`; rolls back when
 * it throws, and always releases the client.
 *
 * While the client is checked out the pool no longer listens for its errors,
 * and a connection PostgreSQL ends between two statements (a server shutting
 * down, an administrator's command) emits one: listened for here, so it fails
 * the transaction's next statement instead of ending the process, and the
 * client is discarded rather than returned to the pool.
 */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error): void => {
    broken = err;
    logger.warn({ error: err.message }, 'PostgreSQL ended a connection during a transaction');
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}
