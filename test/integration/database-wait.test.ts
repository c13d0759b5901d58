import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgresServer } from '../../src/db/embedded-postgres';
import { createPool } from '../../src/db/pool';
import { waitForDatabase } from '../../src/db/wait';

// A worker starting while PostgreSQL restarts waits for it instead of
// failing: a PostgreSQL server of the test's own, stopped and started again
// on the same port and data (in this process, as the chaos run does).

let dataDir: string;
let pg: EmbeddedPostgresServer;
beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-pg-wait-'));
  fs.chmodSync(dataDir, 0o755);
  pg = await startEmbeddedPostgres({ dataDir: path.join(dataDir, 'cluster'), database: 'waiting', ephemeral: false });
}, 120_000);
afterAll(async () => {
  await pg?.stop().catch(() => undefined);
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('a starting worker waits for PostgreSQL', () => {
  it('while the database is down it keeps trying, and goes on once the database is back', async () => {
    const pool = createPool(pg.databaseUrl, 2);
    try {
      await pool.query('CREATE TABLE kept (n int); INSERT INTO kept VALUES (42)');
      await pg.stop();
      const waiting = waitForDatabase(pool, 60_000).then(() => Date.now());
      const stoppedFor = 2_000;
      await sleep(stoppedFor);
      // Still waiting, not failed.
      expect(
        await Promise.race([
          waiting.then(
            () => 'done',
            () => 'failed',
          ),
          sleep(10).then(() => 'waiting'),
        ]),
      ).toBe('waiting');
      const restartedAt = Date.now();
      pg = await startEmbeddedPostgres({ dataDir: pg.dataDir, port: pg.port, database: 'waiting', ephemeral: false });
      expect(await waiting).toBeGreaterThanOrEqual(restartedAt);
      expect((await pool.query('SELECT n FROM kept')).rows).toEqual([{ n: 42 }]);
    } finally {
      await pool.end();
    }
  });

  it('a database that stays down fails the wait after its limit, saying how long it waited; another error fails at once', async () => {
    const pool = createPool(pg.databaseUrl, 2);
    try {
      await pg.stop();
      const err = (await waitForDatabase(pool, 1_500).catch((e: Error) => e)) as Error & { code?: string };
      expect(err.code).toBe('ECONNREFUSED');
      expect(err.message).toMatch(/\(after waiting [12] s for PostgreSQL\)$/);
      pg = await startEmbeddedPostgres({ dataDir: pg.dataDir, port: pg.port, database: 'waiting', ephemeral: false });
    } finally {
      await pool.end();
    }
    const wrongPassword = createPool(pg.databaseUrl.replace(/:[^:@/]+@/, ':not-the-password@'), 1);
    try {
      // Not a connection error: thrown at the first try (waiting its 300 s would outlast the test's 120 s timeout).
      const err = (await waitForDatabase(wrongPassword, 300_000).catch((e: Error) => e)) as Error & { code?: string };
      expect(err.code).toBe('28P01');
      expect(err.message).not.toContain('after waiting');
    } finally {
      await wrongPassword.end();
    }
  });
});
