import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/db/pool';
import { inTransaction } from '../../src/db/transaction';
import { startHarness, type Harness } from '../support/harness';

// PostgreSQL may end a connection between two statements of a transaction (a server shutting down on Ctrl-C, an
// administrator's pg_terminate_backend). The pool does not listen for a checked-out client's errors; without a
// listener of the transaction's own, that error ended the process (seen: `npm start` stopped while its migrations ran).

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

describe('a transaction whose connection PostgreSQL ends between two statements', () => {
  it('fails with the connection error instead of ending the process, and the pool goes on with a new connection', async () => {
    const pool = createPool(h.databaseUrl, 1);
    try {
      const failed = await inTransaction(pool, async (client) => {
        const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await h.pool.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
        // The server's message arrives while no statement runs: the client emits it as an error event.
        await sleep(500);
        await client.query('SELECT 1');
      }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(failed).toBeInstanceOf(Error);
      expect(String((failed as Error).message)).toMatch(/terminat|Connection terminated|not queryable/i);
      // The broken client was discarded: the next transaction runs on a fresh connection.
      expect(await inTransaction(pool, async (client) => (await client.query('SELECT 41 + 1 AS n')).rows[0].n)).toBe(
        42,
      );
    } finally {
      await pool.end();
    }
  });
});
