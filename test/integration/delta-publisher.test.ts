import { afterEach, describe, expect, it, vi } from 'vitest';
import { Pool, type PoolClient } from 'pg';
import { DeltaPublisher } from '../../src/activities/deltas';
import { freePort } from '../../src/common/free-port';
import { logger } from '../../src/common/logger';
import { findUnstorableCharacter, toStorableText } from '../../src/contract/text';
import { STREAM_CHANNEL, type StreamEvent } from '../../src/db/stream-channel';
import { createTestDatabase } from '../support/harness';
import { agentTables } from '../../src/db/schema';
import { migrate } from '../../src/db/migrations';

// Text deltas reach clients through PostgreSQL NOTIFY as they will be stored.
// While PostgreSQL is down every stream event of a response fails to publish.
// The publisher logs the first failure of a response and one count at its end,
// not a line per delta (a database outage in the chaos run at scale printed
// 2,103 of them). The pool is a real one, pointed at a port nobody listens on.

afterEach(() => vi.restoreAllMocks());

describe('DeltaPublisher while the database is down', () => {
  it('logs the first failure of a response and one count at its end, not one line per event', async () => {
    const pool = new Pool({
      host: '127.0.0.1',
      port: await freePort(),
      user: 'nobody',
      database: 'none',
      connectionTimeoutMillis: 2_000,
    });
    const warn = vi.spyOn(logger, 'warn');
    try {
      const ids = { conversationId: 'conv-outage', responseKey: 'resp-1', attempt: 1 };
      const publisher = new DeltaPublisher(pool, agentTables(), ids);
      for (let i = 0; i < 5; i++) {
        publisher.push(`piece ${i} `);
        await new Promise((resolve) => setTimeout(resolve, 60)); // past the 50 ms batching: one event each
      }
      await publisher.end(true);
      const lines = warn.mock.calls.map(([meta, message]) => ({
        meta: meta as unknown as Record<string, unknown>,
        message,
      }));
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

/** A migrated test database, and the stream events a listener on it receives. */
async function listening(): Promise<{ pool: Pool; listener: PoolClient; events: StreamEvent[] }> {
  const pool = new Pool({ connectionString: await createTestDatabase() });
  await migrate(pool);
  const listener = await pool.connect();
  const events: StreamEvent[] = [];
  listener.on('notification', (n) => events.push(JSON.parse(n.payload ?? '{}') as StreamEvent));
  await listener.query(`LISTEN ${STREAM_CHANNEL}`);
  return { pool, listener, events };
}

describe('DeltaPublisher text', () => {
  it('never splits a surrogate pair across events and sends U+FFFD where the stored answer has it', async () => {
    const { pool, listener, events } = await listening();
    try {
      const ids = { conversationId: 'conv-text', responseKey: 'resp-text', attempt: 1 };
      const publisher = new DeltaPublisher(pool, agentTables(), ids);
      // A pair across the 2,000-character piece limit, a pair split across two pushes, a NUL, a lone surrogate.
      const pushes = [`${'a'.repeat(1999)}\ud83d\ude00b`, 'c\ud83d', '\ude00d\u0000e', 'f\udc00g'];
      for (const text of pushes) {
        publisher.push(text);
        await new Promise((resolve) => setTimeout(resolve, 60)); // past the 50 ms batching: each push is flushed
      }
      await publisher.end(true);
      await expect.poll(() => events.some((e) => e.type === 'end'), { timeout: 5_000 }).toBe(true);
      const deltas = events.flatMap((e) => (e.type === 'delta' ? [e] : []));
      expect(deltas.length).toBeGreaterThan(2);
      for (const delta of deltas) expect(findUnstorableCharacter(delta.text)).toBeUndefined();
      expect(deltas.map((d) => d.text).join('')).toBe(toStorableText(pushes.join('')));
      // Offsets count what was sent before each event.
      expect(deltas.map((d) => d.offset)).toEqual(
        deltas.map((_, i) => deltas.slice(0, i).reduce((n, d) => n + d.text.length, 0)),
      );
    } finally {
      listener.release();
      await pool.end();
    }
  });
});

describe('DeltaPublisher without text', () => {
  it('sends nothing for a first attempt that streamed no text and succeeded, and an end for a later or failed one', async () => {
    const { pool, listener, events } = await listening();
    try {
      const ended = async (attempt: number, ok: boolean): Promise<void> =>
        new DeltaPublisher(pool, agentTables(), {
          conversationId: 'conv-calls',
          responseKey: `resp-${attempt}-${ok}`,
          attempt,
        }).end(ok);
      await ended(1, true); // tool calls only: nobody saw anything, nothing was kept
      await ended(1, false);
      await ended(2, true); // an earlier attempt may have left pieces: they are dropped, and listeners told
      await expect.poll(() => events.length, { timeout: 5_000 }).toBe(2);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(events.map((e) => [e.type, e.responseKey])).toEqual([
        ['end', 'resp-1-false'],
        ['end', 'resp-2-true'],
      ]);
    } finally {
      listener.release();
      await pool.end();
    }
  });
});
