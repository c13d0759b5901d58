/** One PostgreSQL transaction on a pooled client. */
import type { Pool, PoolClient } from 'pg';

/**
 * Runs `work` inside BEGIN … COMMIT on one client of `pool`; rolls back when
 * it throws, and always releases the client.
 */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
