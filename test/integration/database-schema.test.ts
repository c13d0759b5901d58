import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { AgentClient } from '../../src/client/client';
import { migrate } from '../../src/db/migrations';
import { createPool } from '../../src/db/pool';
import { agentTables, AGENT_TABLE_NAMES } from '../../src/db/schema';
import { readTranscript } from '../../src/db/transcript-store';
import { ConfigError } from '../../src/common/errors';
import { loadConfig } from '../../src/app/config';
import { startModelServer, type ModelServer } from '../../src/testing';
import { DEMO_CUSTOMERS, DEMO_ORDERS, setupBackofficeDemo } from '../../src/demo/data';
import { createTestDatabase } from '../support/harness';
import { startWorkerProcess } from '../support/worker-process';

// Where the project's tables live: only the project's tables, in a schema of their own
// (default durable_agent, AGENT_DATABASE_SCHEMA), every query naming it; databases migrated
// before are moved into it; the back-office demo sets up its own tables in public.
// Each test makes its own database on the run's real PostgreSQL server.

const TEAM_TOOLS = path.join(__dirname, '..', 'support', 'team-tools.ts');
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

/**
 * The environment of a worker process (`src/main.ts`) on `databaseUrl`, with the team's tools unless `extra` says
 * otherwise.
 */
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
    const ledger = await pool.query<{ version: number; name: string }>(
      'SELECT version, name FROM durable_agent.schema_migrations ORDER BY version',
    );
    // The retired version 2 is recorded too: every ledger holds every version up to the latest.
    expect(ledger.rows.map((r) => r.version)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,
    ]);
    expect(ledger.rows[1].name).toMatch(/^retired: the back-office demo tables moved to the demo's own setup$/);
  });

  it("the worker running the demo tools sets up the demo's tables in public, next to the project's schema", async () => {
    const { pool, databaseUrl } = await freshDatabase();
    await runWorkerOnce(databaseUrl, { AGENT_TOOLS_MODULE: '' });

    expect(await tablesIn(pool)).toEqual([...projectTablesIn('durable_agent'), ...DEMO_TABLES]);
    expect((await pool.query('SELECT id FROM public.customers ORDER BY id')).rows.map((r) => r.id)).toEqual(
      DEMO_CUSTOMERS.map((c) => c.id).sort(),
    );
  });

  it('a schema name from the configuration is used', async () => {
    const { pool, databaseUrl } = await freshDatabase();
    const env = workerEnv(databaseUrl, { AGENT_DATABASE_SCHEMA: 'agent_x' });
    const worker = await startWorkerProcess(env);
    const client = await AgentClient.connect({
      temporalAddress: env.TEMPORAL_ADDRESS,
      taskQueue: env.TEMPORAL_TASK_QUEUE,
      databaseUrl,
      schema: 'agent_x',
    });
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
    const rule =
      /"Agent-X" is not a plain lowercase SQL identifier \(\^\[a-z_\]\[a-z0-9_\]\{0,62\}\$: .*\)\. Use a plain lowercase SQL identifier such as durable_agent/;
    expect(() => loadConfig({ AGENT_DATABASE_SCHEMA: 'Agent-X' })).toThrow(ConfigError);
    expect(() => loadConfig({ AGENT_DATABASE_SCHEMA: 'Agent-X' })).toThrow(
      new RegExp(`AGENT_DATABASE_SCHEMA: ${rule.source}`),
    );
    expect(() => loadConfig({ AGENT_DATABASE_SCHEMA: 'public' })).toThrow(
      /AGENT_DATABASE_SCHEMA: "public" is shared with every other user of the database/,
    );
    expect(() => loadConfig({ AGENT_DATABASE_SCHEMA: 'pg_agent' })).toThrow(
      /AGENT_DATABASE_SCHEMA: "pg_agent" starts with pg_, which PostgreSQL reserves/,
    );
    expect(loadConfig({}).databaseSchema).toBe('durable_agent');

    const { pool, databaseUrl } = await freshDatabase();
    await expect(migrate(pool, { schema: 'Agent-X' })).rejects.toThrow(rule);
    await expect(migrate(pool, { schema: 'x"; DROP SCHEMA public; --' })).rejects.toThrow(ConfigError);
    await expect(
      AgentClient.connect({ temporalAddress: inject('temporalAddress'), databaseUrl, schema: 'Agent-X' }),
    ).rejects.toThrow(rule);
    await expect(startWorkerProcess(workerEnv(databaseUrl, { AGENT_DATABASE_SCHEMA: 'Agent-X' }))).rejects.toThrow(
      new RegExp(
        `The worker cannot start: Invalid configuration in the environment:\\s+AGENT_DATABASE_SCHEMA: ${rule.source}`,
      ),
    );
    expect(await tablesIn(pool)).toEqual([]);
    expect(await schemasIn(pool)).toEqual(['public']);
  });

  it('a tools module that does not load stops the worker at once with exit code 1, naming the variable and the file', async () => {
    // After Temporal's runtime is installed and the services are configured, before any connection: the process used to
    // print the error and then hang, ignoring SIGTERM (the runtime held it alive).
    const { databaseUrl } = await freshDatabase();
    const missing = path.join(os.tmpdir(), `no-such-tools-${randomUUID()}.js`);
    const error = await startWorkerProcess(workerEnv(databaseUrl, { AGENT_TOOLS_MODULE: missing }), 60_000).catch(
      (err: Error) => err,
    );
    expect((error as Error).message).toMatch(/^worker exited with 1 before it was ready:/);
    expect((error as Error).message).toContain(
      `The worker cannot start: AGENT_TOOLS_MODULE=${missing}: cannot load ${missing}`,
    );
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
        create:
          'CREATE TABLE public.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
        insert:
          "INSERT INTO public.schema_migrations (version, name) VALUES (1, 'create users'), (2, 'create invoices')",
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

      expect(await migrate(pool)).toEqual([
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,
      ]);

      expect(await tablesIn(pool)).toEqual([
        ...projectTablesIn('durable_agent'),
        'public.schema_migrations',
        'public.tool_results',
      ]);
      expect((await pool.query('SELECT * FROM public.schema_migrations ORDER BY 1')).rows).toEqual(before);
      expect((await pool.query('SELECT outcome FROM public.tool_results')).rows).toEqual([
        { outcome: "the team's own row" },
      ]);
      expect((await pool.query('SELECT count(*)::int AS n FROM durable_agent.tool_results')).rows).toEqual([{ n: 0 }]);
    }
  });

  it('the demo setup is idempotent and seeds its rows once', async () => {
    const { pool } = await freshDatabase();
    // Two processes starting at once, then a restart.
    await Promise.all([setupBackofficeDemo(pool), setupBackofficeDemo(pool)]);
    expect(await tablesIn(pool)).toEqual(DEMO_TABLES);
    await pool.query("UPDATE public.orders SET refunded_cents = 1200 WHERE id = 'ord_1001'");
    await pool.query(
      "INSERT INTO public.customers (id, name, email) VALUES ('cus_zuse', 'Konrad Zuse', 'konrad@example.com')",
    );

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
