import { afterEach, describe, expect, it, vi } from 'vitest';
import { Pool } from 'pg';
import { DeltaPublisher } from '../src/activities/deltas';
import { freePort } from '../src/db/free-port';
import { logger } from '../src/runtime/logger';

// While PostgreSQL is down every stream event of a response fails to publish.
// The publisher logs the first failure of a response and one count at its end,
// not a line per delta (a database outage in the chaos run at scale printed
// 2,103 of them). The pool is a real one, pointed at a port nobody listens on.

afterEach(() => vi.restoreAllMocks());

describe('DeltaPublisher while the database is down', () => {
  it('logs the first failure of a response and one count at its end, not one line per event', async () => {
    const pool = new Pool({ host: '127.0.0.1', port: await freePort(), user: 'nobody', database: 'none', connectionTimeoutMillis: 2_000 });
    const warn = vi.spyOn(logger, 'warn');
    try {
      const ids = { conversationId: 'conv-outage', responseKey: 'resp-1', attempt: 1 };
      const publisher = new DeltaPublisher(pool, ids);
      for (let i = 0; i < 5; i++) {
        publisher.push(`piece ${i} `);
        await new Promise((resolve) => setTimeout(resolve, 60)); // past the 50 ms batching: one event each
      }
      await publisher.end(true);
      const lines = warn.mock.calls.map(([meta, message]) => ({ meta: meta as unknown as Record<string, unknown>, message }));
      expect(lines.map((l) => l.message)).toEqual([
        'could not publish a stream event',
        'stream events of this response were not published; clients read the stored answer instead',
      ]);
      expect(lines[0].meta).toMatchObject({ ...ids, error: expect.stringContaining('ECONNREFUSED') });
      // 5 deltas and the end event.
      expect(lines[1].meta).toMatchObject({ ...ids, failed: 6 });
    } finally {
      await pool.end();
    }
  });
});
