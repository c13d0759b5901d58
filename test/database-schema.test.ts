import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { applyOnce } from '../src/activities/tools';
import { AgentClient } from '../src/client/client';
import { migrate } from '../src/db/migrations';
import { createPool } from '../src/db/pool';
import { agentTables, AGENT_TABLE_NAMES } from '../src/db/schema';
import { readTranscript } from '../src/db/transcript-store';
import { ConfigError, DatabaseLayoutError } from '../src/errors';
import { loadConfig } from '../src/runtime/config';
import { startModelServer, type ModelServer } from '../src/testing';
import { DEMO_CUSTOMERS, DEMO_ORDERS, setupBackofficeDemo } from '../src/tools/backoffice-data';
import { createTestDatabase } from './support/harness';
import { buildPublicLayout, PUBLIC_LAYOUT_MIGRATIONS } from './support/public-layout-v5';
import { startWorkerProcess } from './support/worker-process';

// Where the project's tables live: only the project's tables, in a schema of their own
// (default durable_agent, AGENT_DATABASE_SCHEMA), every query naming it; databases migrated
// before are moved into it; the back-office demo sets up its own tables in public.
// Each test makes its own database on the run's real PostgreSQL server.

const TEAM_TOOLS = path.join(__dirname, 'support', 'team-tools.ts');
const DEMO_TABLES = ['public.customers', 'public.orders', 'public.refunds'];

let model: ModelServer;
const pools: Pool[] = [];
beforeAll(async () => {
  model = await startModelServer();
});
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await model?.close();
});

/** A pool on a new, empty database, and the database's URL. */
async function freshDatabase(): Promise<{ pool: Pool; databaseUrl: string }> {
  const databaseUrl = await createTestDatabase();
  const pool = createPool(databaseUrl, 4);
  pools.push(pool);
  return { pool, databaseUrl };
}

/** Every table outside PostgreSQL's own schemas, as `schema.table`, sorted. */
async function tablesIn(pool: Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT table_schema || '.' || table_name AS name FROM information_schema.tables
      WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`,
  );
  return rows.map((r) => r.name);
}

/** Every schema outside PostgreSQL's own, sorted. */
async function schemasIn(pool: Pool): Promise<string[]> {
  const { rows } = await pool.query<{ nspname: string }>(
    `SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema' ORDER BY 1`,
  );
  return rows.map((r) => r.nspname);
}

const projectTablesIn = (schema: string): string[] => AGENT_TABLE_NAMES.map((name) => `${schema}.${name}`).sort();

/** The environment of a worker process (`src/main.ts`) on `databaseUrl`, with the team's tools unless `extra` says otherwise. */
const workerEnv = (databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> => ({
  TEMPORAL_ADDRESS: inject('temporalAddress'),
  TEMPORAL_TASK_QUEUE: `schema-${randomUUID()}`,
  DATABASE_URL: databaseUrl,
  OPENAI_API_KEY: 'test-key',
  OPENAI_BASE_URL: model.url,
  AGENT_TOOLS_MODULE: TEAM_TOOLS,
  AGENT_DATABASE_SCHEMA: '',
  ...extra,
});

/** Starts a worker process on `databaseUrl` and stops it once it is running: it has migrated by then. */
async function runWorkerOnce(databaseUrl: string, extra: Record<string, string> = {}): Promise<void> {
  const worker = await startWorkerProcess(workerEnv(databaseUrl, extra));
  await worker.stop();
}

describe("the project's tables in a schema of their own", () => {
  it("a fresh database migrated by the worker holds only the project's tables, in the project's schema", async () => {
    const { pool, databaseUrl } = await freshDatabase();
    await runWorkerOnce(databaseUrl);

    expect(await tablesIn(pool)).toEqual(projectTablesIn('durable_agent'));
    expect(await schemasIn(pool)).toEqual(['durable_agent', 'public']);
    const ledger = await pool.query<{ version: number; name: string }>('SELECT version, name FROM durable_agent.schema_migrations ORDER BY version');
    // The retired version 2 is recorded too: every ledger holds every version up to the latest.
    expect(ledger.rows.map((r) => r.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(ledger.rows[1].name).toMatch(/^retired: the back-office demo tables moved to the demo's own setup$/);
  });

  it("the worker running the demo tools sets up the demo's tables in public, next to the project's schema", async () => {
    const { pool, databaseUrl } = await freshDatabase();
    await runWorkerOnce(databaseUrl, { AGENT_TOOLS_MODULE: '' });

    expect(await tablesIn(pool)).toEqual([...projectTablesIn('durable_agent'), ...DEMO_TABLES]);
    expect((await pool.query('SELECT id FROM public.customers ORDER BY id')).rows.map((r) => r.id)).toEqual(DEMO_CUSTOMERS.map((c) => c.id).sort());
  });

  it('a schema name from the configuration is used', async () => {
    const { pool, databaseUrl } = await freshDatabase();
    const env = workerEnv(databaseUrl, { AGENT_DATABASE_SCHEMA: 'agent_x' });
    const worker = await startWorkerProcess(env);
    const client = await AgentClient.connect({ temporalAddress: env.TEMPORAL_ADDRESS, taskQueue: env.TEMPORAL_TASK_QUEUE, databaseUrl, schema: 'agent_x' });
    try {
      model.enqueue(
        { toolCalls: [{ id: 'call_note', name: 'remember', arguments: { note: 'schemas are configurable' } }] },
        { content: 'Noted, in agent_x.' },
      );
      const { turn, answer } = await client.ask('schema-x', 'Remember that schemas are configurable');
      expect(turn.outcome).toBe('answered');
      // The client read the answer from agent_x, where the worker's activities wrote it.
      expect(answer).toBe('Noted, in agent_x.');
    } finally {
      await client.close();
      await worker.stop();
    }

    expect(await tablesIn(pool)).toEqual(projectTablesIn('agent_x'));
    expect(await schemasIn(pool)).toEqual(['agent_x', 'public']);
    const count = async (table: string): Promise<number> =>
      (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM agent_x.${table}`)).rows[0].n;
    expect(await count('conversation_messages')).toBe(4);
    expect(await count('model_responses')).toBe(2);
    expect(await count('tool_results')).toBe(1);
    expect(await count('tool_ledger')).toBe(1);
    expect(await readTranscript(pool, agentTables('agent_x'), 'schema-x')).toHaveLength(4);
  });

  it('a bad schema name is refused with the value, the rule and the way out, and nothing is created', async () => {
    const rule = /"Agent-X" is not a plain lowercase SQL identifier \(\^\[a-z_\]\[a-z0-9_\]\{0,62\}\$: .*\)\. Use a plain lowercase SQL identifier such as durable_agent/;
    expect(() => loadConfig({ AGENT_DATABASE_SCHEMA: 'Agent-X' })).toThrow(ConfigError);
    expect(() => loadConfig({ AGENT_DATABASE_SCHEMA: 'Agent-X' })).toThrow(new RegExp(`AGENT_DATABASE_SCHEMA: ${rule.source}`));
    expect(() => loadConfig({ AGENT_DATABASE_SCHEMA: 'public' })).toThrow(/AGENT_DATABASE_SCHEMA: "public" is shared with every other user of the database/);
    expect(() => loadConfig({ AGENT_DATABASE_SCHEMA: 'pg_agent' })).toThrow(/AGENT_DATABASE_SCHEMA: "pg_agent" starts with pg_, which PostgreSQL reserves/);
    expect(loadConfig({}).databaseSchema).toBe('durable_agent');

    const { pool, databaseUrl } = await freshDatabase();
    await expect(migrate(pool, { schema: 'Agent-X' })).rejects.toThrow(rule);
    await expect(migrate(pool, { schema: 'x"; DROP SCHEMA public; --' })).rejects.toThrow(ConfigError);
    await expect(AgentClient.connect({ temporalAddress: inject('temporalAddress'), databaseUrl, schema: 'Agent-X' })).rejects.toThrow(rule);
    await expect(startWorkerProcess(workerEnv(databaseUrl, { AGENT_DATABASE_SCHEMA: 'Agent-X' }))).rejects.toThrow(
      new RegExp(`The worker cannot start: Invalid configuration in the environment:\\s+AGENT_DATABASE_SCHEMA: ${rule.source}`),
    );
    expect(await tablesIn(pool)).toEqual([]);
    expect(await schemasIn(pool)).toEqual(['public']);
  });

  it('a database migrated before the schema existed is moved into it with its rows, its demo tables left in public, and no migration renumbered', async () => {
    const { pool } = await freshDatabase();
    await buildPublicLayout(pool);
    await pool.query(
      `INSERT INTO public.conversation_messages (conversation_id, seq, role, message) VALUES ('old-1', 0, 'user', '{"role":"user","content":"Refund ord_1002"}')`,
    );
    await pool.query(`INSERT INTO public.tool_ledger (idempotency_key, tool_name, result) VALUES ('old-1/msg-1/call-0', 'issue_refund', '{"refund_id":"1"}')`);
    await pool.query(`INSERT INTO public.refunds (order_id, amount_cents, reason, idempotency_key) VALUES ('ord_1002', 700, 'damaged', 'old-1/msg-1/call-0')`);
    await pool.query(`UPDATE public.orders SET refunded_cents = 700 WHERE id = 'ord_1002'`);
    const oldLedger = (await pool.query('SELECT version, name, applied_at FROM public.schema_migrations ORDER BY version')).rows;

    // Moved, then the migrations written after that layout (6, 7) run in the schema.
    expect(await migrate(pool)).toEqual([6, 7, 8, 9]);

    expect(await tablesIn(pool)).toEqual([...projectTablesIn('durable_agent'), ...DEMO_TABLES]);
    // The ledger moved as it was: versions 1 to 5 under their old names, version 2 still "applied".
    const movedLedger = (await pool.query('SELECT version, name, applied_at FROM durable_agent.schema_migrations WHERE version <= 5 ORDER BY version')).rows;
    expect(movedLedger).toEqual(oldLedger);
    expect(movedLedger.map((r) => [r.version, r.name])).toEqual(PUBLIC_LAYOUT_MIGRATIONS.map((m) => [m.version, m.name]));
    // Rows, and an index of migration 5, moved with their tables; the project reads them where they are now.
    const tables = agentTables();
    expect(await readTranscript(pool, tables, 'old-1')).toEqual([
      { seq: 0, message: { role: 'user', content: 'Refund ord_1002' }, createdAt: expect.any(Date) },
    ]);
    let appliedAgain = false;
    const recorded = await applyOnce(pool, tables, 'old-1/msg-1/call-0', 'issue_refund', async () => {
      appliedAgain = true;
      return { refund_id: '2' };
    });
    expect(appliedAgain).toBe(false);
    expect(recorded).toEqual({ refund_id: '1' });
    const index = await pool.query("SELECT schemaname FROM pg_indexes WHERE indexname = 'model_responses_by_conversation'");
    expect(index.rows).toEqual([{ schemaname: 'durable_agent' }]);
    // The demo's tables stayed in public with their rows, and the demo's setup leaves them as they are.
    await setupBackofficeDemo(pool);
    expect((await pool.query("SELECT refunded_cents FROM public.orders WHERE id = 'ord_1002'")).rows).toEqual([{ refunded_cents: 700 }]);
    expect((await pool.query('SELECT count(*)::int AS n FROM public.refunds')).rows).toEqual([{ n: 1 }]);
    expect((await pool.query('SELECT count(*)::int AS n FROM public.customers')).rows).toEqual([{ n: DEMO_CUSTOMERS.length }]);

    // Migrating again changes nothing.
    expect(await migrate(pool)).toEqual([]);
    expect(await tablesIn(pool)).toEqual([...projectTablesIn('durable_agent'), ...DEMO_TABLES]);
    expect((await pool.query('SELECT version, name, applied_at FROM durable_agent.schema_migrations WHERE version <= 5 ORDER BY version')).rows).toEqual(oldLedger);
  });

  it('a database migrated to an older version before the schema existed is moved, then its later migrations run in the schema', async () => {
    const { pool } = await freshDatabase();
    await buildPublicLayout(pool, 3);
    await pool.query(
      `INSERT INTO public.approval_decisions (conversation_id, decision_id, decision, tool_call_ids, decided_at, via) VALUES ('old-2', 'd1', 'approve', '{call_a}', now(), 'signal')`,
    );

    expect(await migrate(pool)).toEqual([4, 5, 6, 7, 8, 9]);

    expect(await tablesIn(pool)).toEqual([...projectTablesIn('durable_agent'), ...DEMO_TABLES]);
    expect((await pool.query('SELECT version FROM durable_agent.schema_migrations ORDER BY version')).rows.map((r) => r.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Migration 4 added its column to the moved table, whose row is still there.
    expect((await pool.query('SELECT decision_id, call_keys FROM durable_agent.approval_decisions')).rows).toEqual([{ decision_id: 'd1', call_keys: null }]);
  });

  it("a team's own public.schema_migrations from another tool is left alone", async () => {
    const ledgers = [
      // Rails and many others: text versions.
      {
        create: 'CREATE TABLE public.schema_migrations (version character varying NOT NULL PRIMARY KEY)',
        insert: "INSERT INTO public.schema_migrations VALUES ('20240101120000'), ('20240202120000')",
      },
      // The same columns as the project's ledger, but another tool's rows.
      {
        create: 'CREATE TABLE public.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
        insert: "INSERT INTO public.schema_migrations (version, name) VALUES (1, 'create users'), (2, 'create invoices')",
      },
    ];
    for (const ledger of ledgers) {
      const { pool } = await freshDatabase();
      await pool.query(ledger.create);
      await pool.query(ledger.insert);
      // A team table that happens to carry a name of the project's.
      await pool.query('CREATE TABLE public.tool_results (id serial PRIMARY KEY, outcome text)');
      await pool.query("INSERT INTO public.tool_results (outcome) VALUES ('the team''s own row')");
      const before = (await pool.query('SELECT * FROM public.schema_migrations ORDER BY 1')).rows;

      expect(await migrate(pool)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);

      expect(await tablesIn(pool)).toEqual([...projectTablesIn('durable_agent'), 'public.schema_migrations', 'public.tool_results']);
      expect((await pool.query('SELECT * FROM public.schema_migrations ORDER BY 1')).rows).toEqual(before);
      expect((await pool.query('SELECT outcome FROM public.tool_results')).rows).toEqual([{ outcome: "the team's own row" }]);
      expect((await pool.query('SELECT count(*)::int AS n FROM durable_agent.tool_results')).rows).toEqual([{ n: 0 }]);
    }
  });

  it("this project's ledger in public with some of its tables gone stops migrate with what to do, and changes nothing", async () => {
    const { pool } = await freshDatabase();
    await buildPublicLayout(pool);
    await pool.query('DROP TABLE public.tool_ledger');
    const before = await tablesIn(pool);

    const failure = migrate(pool);
    await expect(failure).rejects.toThrow(DatabaseLayoutError);
    await expect(failure).rejects.toThrow(
      /public\.schema_migrations is this project's ledger .* but public\.tool_ledger is missing, so the tables cannot be moved into schema "durable_agent"\. Restore it from a backup, or, .* rename or drop public\.schema_migrations/,
    );
    expect(await tablesIn(pool)).toEqual(before);
    expect(await schemasIn(pool)).toEqual(['public']);
  });

  it("a table of the project's name already in the schema, without the project's ledger, stops the move with what to do", async () => {
    const { pool } = await freshDatabase();
    await buildPublicLayout(pool);
    await pool.query('CREATE SCHEMA durable_agent');
    await pool.query('CREATE TABLE durable_agent.tool_ledger (note text)');
    const before = await tablesIn(pool);

    await expect(migrate(pool)).rejects.toThrow(
      /cannot be moved into schema "durable_agent": durable_agent\.tool_ledger already exists there without the project's ledger\. Drop or rename it .* or configure another schema \(AGENT_DATABASE_SCHEMA, or the schema option\)/,
    );
    expect(await tablesIn(pool)).toEqual(before);
  });

  it('the demo setup is idempotent and seeds its rows once', async () => {
    const { pool } = await freshDatabase();
    // Two processes starting at once, then a restart.
    await Promise.all([setupBackofficeDemo(pool), setupBackofficeDemo(pool)]);
    expect(await tablesIn(pool)).toEqual(DEMO_TABLES);
    await pool.query("UPDATE public.orders SET refunded_cents = 1200 WHERE id = 'ord_1001'");
    await pool.query("INSERT INTO public.customers (id, name, email) VALUES ('cus_zuse', 'Konrad Zuse', 'konrad@example.com')");

    await setupBackofficeDemo(pool);

    expect((await pool.query('SELECT id FROM public.customers ORDER BY id')).rows.map((r) => r.id)).toEqual(
      [...DEMO_CUSTOMERS.map((c) => c.id), 'cus_zuse'].sort(),
    );
    expect((await pool.query('SELECT id, refunded_cents FROM public.orders ORDER BY id')).rows).toEqual(
      DEMO_ORDERS.map((o) => ({ id: o.id, refunded_cents: o.id === 'ord_1001' ? 1200 : 0 })),
    );
    // The demo's setup creates nothing of the project's.
    expect(await schemasIn(pool)).toEqual(['public']);
  });
});
