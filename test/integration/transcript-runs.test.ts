import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppendEntry } from '../../src/contract/activities';
import { migrate } from '../../src/db/migrations';
import { createPool } from '../../src/db/pool';
import { agentTables } from '../../src/db/schema';
import {
  appendMessages,
  DisplacedRunError,
  insertMessages,
  readSuperseded,
  readTranscript,
} from '../../src/db/transcript-store';
import { createTestDatabase } from '../support/harness';

// What a write does to the live transcript when the workflow run that writes changes (continue-as-new, a reset)
// or a turn is regenerated, against the run's real PostgreSQL: the live rows stay the writing run's own, what
// leaves them is kept as superseded, and a displaced run's late write stores nothing.

const tables = agentTables();
let pool: Pool;
beforeAll(async () => {
  pool = createPool(await createTestDatabase(), 4);
  await migrate(pool);
});
afterAll(async () => {
  await pool?.end();
});

let n = 0;
const conversation = (): string => `runs-${++n}`;
const user = (seq: number, content: string): AppendEntry => ({ seq, message: { role: 'user', content } });
const assistant = (seq: number, content: string): AppendEntry => ({ seq, message: { role: 'assistant', content } });
const texts = async (id: string): Promise<string[]> =>
  (await readTranscript(pool, tables, id)).map((m) => `${m.seq}:${String(m.message.content)}`);

describe('transcript runs', () => {
  it("a reset run's first write supersedes what the abandoned run wrote from that seq on", async () => {
    const id = conversation();
    await appendMessages(pool, tables, { conversationId: id, messages: [user(0, 'hi'), assistant(1, 'hello')] }, 'A');
    await appendMessages(
      pool,
      tables,
      { conversationId: id, messages: [user(2, 'refund 1'), assistant(3, 'done 1')] },
      'A',
    );
    await appendMessages(pool, tables, { conversationId: id, messages: [user(4, 'thanks'), assistant(5, 'bye')] }, 'A');

    // Run B replays up to seq 2 (its history holds writes 0..2) and writes its own answer at 3.
    await appendMessages(pool, tables, { conversationId: id, messages: [assistant(3, 'done 2')] }, 'B');

    expect(await texts(id)).toEqual(['0:hi', '1:hello', '2:refund 1', '3:done 2']);
    const superseded = await readSuperseded(pool, tables, id);
    expect(superseded.map((m) => [m.seq, m.message.content, m.reason, m.supersededByRun])).toEqual([
      [3, 'done 1', 'reset', 'B'],
      [4, 'thanks', 'reset', 'B'],
      [5, 'bye', 'reset', 'B'],
    ]);
  });

  it("a displaced run's late write stores nothing and says why", async () => {
    const id = conversation();
    await appendMessages(pool, tables, { conversationId: id, messages: [user(0, 'hi')] }, 'A');
    await appendMessages(pool, tables, { conversationId: id, messages: [assistant(1, 'from B')] }, 'B');

    const late = appendMessages(
      pool,
      tables,
      { conversationId: id, messages: [assistant(1, 'late A'), user(2, 'x')] },
      'A',
    );
    await expect(late).rejects.toThrow(DisplacedRunError);
    await expect(late).rejects.toThrow(/displaced by a later run/);
    expect(await texts(id)).toEqual(['0:hi', '1:from B']);
  });

  it('the run after a continue-as-new supersedes nothing, and retried writes change nothing', async () => {
    const id = conversation();
    await appendMessages(pool, tables, { conversationId: id, messages: [user(0, 'hi'), assistant(1, 'hello')] }, 'A');
    await appendMessages(pool, tables, { conversationId: id, messages: [user(0, 'hi'), assistant(1, 'hello')] }, 'A');
    await appendMessages(pool, tables, { conversationId: id, messages: [user(2, 'again')] }, 'B');
    await appendMessages(pool, tables, { conversationId: id, messages: [user(2, 'again')] }, 'B');

    expect(await texts(id)).toEqual(['0:hi', '1:hello', '2:again']);
    expect(await readSuperseded(pool, tables, id)).toEqual([]);
  });

  it('a reset run that writes the same message at the same seq keeps no superseded copy of it', async () => {
    const id = conversation();
    await appendMessages(pool, tables, { conversationId: id, messages: [user(0, 'hi'), assistant(1, 'same')] }, 'A');
    await appendMessages(pool, tables, { conversationId: id, messages: [user(2, 'more')] }, 'A');
    await appendMessages(pool, tables, { conversationId: id, messages: [assistant(1, 'same')] }, 'B');

    expect(await texts(id)).toEqual(['0:hi', '1:same']);
    expect((await readSuperseded(pool, tables, id)).map((m) => m.seq)).toEqual([2]);
  });

  it('supersedeFrom takes a regenerated answer out, with or without messages in the same write', async () => {
    const id = conversation();
    await appendMessages(
      pool,
      tables,
      { conversationId: id, messages: [user(0, 'hi'), assistant(1, 'first answer'), user(2, 'q'), assistant(3, 'a')] },
      'A',
    );
    await appendMessages(pool, tables, { conversationId: id, messages: [], supersedeFrom: 3 }, 'A');
    expect(await texts(id)).toEqual(['0:hi', '1:first answer', '2:q']);

    await appendMessages(pool, tables, { conversationId: id, messages: [assistant(3, 'b')], supersedeFrom: 3 }, 'A');
    expect(await texts(id)).toEqual(['0:hi', '1:first answer', '2:q', '3:b']);
    const superseded = await readSuperseded(pool, tables, id);
    expect(superseded.map((m) => [m.seq, m.message.content, m.reason])).toEqual([[3, 'a', 'regenerate']]);
  });

  it('a write outside any workflow run (a fork copy, a test) neither displaces nor is refused', async () => {
    const id = conversation();
    await appendMessages(pool, tables, { conversationId: id, messages: [user(0, 'copied'), assistant(1, 'copied')] });
    await appendMessages(pool, tables, { conversationId: id, messages: [user(2, 'new')] }, 'A');
    await appendMessages(pool, tables, { conversationId: id, messages: [assistant(3, 'outside')] });
    expect(await texts(id)).toEqual(['0:copied', '1:copied', '2:new', '3:outside']);
    expect(await readSuperseded(pool, tables, id)).toEqual([]);
  });
  describe("a model call's own final answer, and a stop of that call", () => {
    const stop = (id: string, run: string, fromSeq: number) =>
      appendMessages(
        pool,
        tables,
        { conversationId: id, messages: [], supersedeFrom: fromSeq, supersedeReason: 'stopped' },
        run,
      );

    it('written before the stop: the stop supersedes it (reason stopped)', async () => {
      const id = conversation();
      await appendMessages(pool, tables, { conversationId: id, messages: [user(0, 'hi')] }, 'A');
      expect(
        await insertMessages(pool, tables, id, [assistant(1, 'late answer')], { runId: 'A', ownAnswer: true }),
      ).toBe(true);
      expect(await texts(id)).toEqual(['0:hi', '1:late answer']);
      await stop(id, 'A', 1);
      expect(await texts(id)).toEqual(['0:hi']);
      const superseded = await readSuperseded(pool, tables, id);
      expect(superseded.map((m) => [m.seq, m.message.content, m.reason])).toEqual([[1, 'late answer', 'stopped']]);
    });

    it('written after the stop: it stores nothing and says so, and the seq stays free for the next message', async () => {
      const id = conversation();
      await appendMessages(pool, tables, { conversationId: id, messages: [user(0, 'hi')] }, 'A');
      await stop(id, 'A', 1);
      expect(
        await insertMessages(pool, tables, id, [assistant(1, 'late answer')], { runId: 'A', ownAnswer: true }),
      ).toBe(false);
      expect(await texts(id)).toEqual(['0:hi']);
      await appendMessages(pool, tables, { conversationId: id, messages: [user(1, 'next question')] }, 'A');
      expect(await texts(id)).toEqual(['0:hi', '1:next question']);
      expect(await readSuperseded(pool, tables, id)).toEqual([]);
    });

    it('written while the stop comes: the stop waits for it, then supersedes it', async () => {
      const id = conversation();
      await appendMessages(pool, tables, { conversationId: id, messages: [user(0, 'hi')] }, 'A');
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        expect(
          await insertMessages(client, tables, id, [assistant(1, 'racing answer')], { runId: 'A', ownAnswer: true }),
        ).toBe(true);
        let stopped = false;
        const stopping = stop(id, 'A', 1).then(() => (stopped = true));
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(stopped).toBe(false); // it waits for the answer's transaction (the run's row)
        await client.query('COMMIT');
        await stopping;
      } finally {
        client.release();
      }
      expect(await texts(id)).toEqual(['0:hi']);
      const superseded = await readSuperseded(pool, tables, id);
      expect(superseded.map((m) => [m.seq, m.message.content, m.reason])).toEqual([[1, 'racing answer', 'stopped']]);
    });
  });
});
