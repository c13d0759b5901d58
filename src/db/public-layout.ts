/**
 * Databases migrated before the project had a schema of its own: every table,
 * the ledger `schema_migrations` (versions 1 to 5) and the back-office demo's
 * tables in `public`. `migrate` moves the project's tables and ledger into the
 * project's schema, rows and all, and leaves everything else in `public`.
 *
 * What such a database holds is history, frozen here: no release after the
 * schema was introduced writes into `public`.
 */
import type { PoolClient } from 'pg';
import { DatabaseLayoutError } from '../errors';
import type { AgentTableName, AgentTables } from './schema';

/** The name version 1 was recorded under in `public.schema_migrations`: how the project's ledger is recognised. */
const FIRST_LEDGER_ROW = 'transcripts, model responses, tool results and the idempotency ledger';

/** The columns of the project's ledger, and their types as `information_schema` names them. */
const LEDGER_COLUMNS: Record<string, string> = { version: 'integer', name: 'text', applied_at: 'timestamp with time zone' };

/** The tables each recorded version created in `public` (version 2 created the demo's tables, which stay). */
const TABLES_BY_VERSION: Record<number, readonly AgentTableName[]> = {
  1: ['conversation_messages', 'tool_results', 'model_responses', 'tool_ledger'],
  3: ['approval_decisions'],
};

/**
 * When the project's schema has no ledger yet and `public.schema_migrations`
 * is this project's ledger, moves the ledger and the project's tables into the
 * schema (`ALTER TABLE … SET SCHEMA`, which keeps rows, indexes and
 * constraints). Runs inside the caller's transaction, under its migration
 * lock. Returns the tables moved, none when there was nothing of the project's
 * in `public`. A `public.schema_migrations` of another tool is left alone.
 */
export async function moveOutOfPublic(client: PoolClient, tables: AgentTables): Promise<AgentTableName[]> {
  if (await relationKind(client, tables.schema, 'schema_migrations')) return [];
  const versions = await projectLedgerVersions(client);
  if (!versions) return [];

  const toMove: AgentTableName[] = ['schema_migrations', ...versions.flatMap((v) => TABLES_BY_VERSION[v] ?? [])];
  const missing: string[] = [];
  const taken: string[] = [];
  for (const name of toMove) {
    const kind = await relationKind(client, 'public', name);
    if (kind !== 'r' && kind !== 'p') missing.push(`public.${name}`);
    if (await relationKind(client, tables.schema, name)) taken.push(`${tables.schema}.${name}`);
  }
  if (missing.length > 0) {
    throw new DatabaseLayoutError(
      `public.schema_migrations is this project's ledger from before its tables had a schema of their own (versions ${versions.join(', ')}), ` +
        `but ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} missing, so the tables cannot be moved into schema "${tables.schema}". ` +
        `Restore ${missing.length === 1 ? 'it' : 'them'} from a backup, or, to start afresh without the old conversations, ` +
        'rename or drop public.schema_migrations and start again.',
    );
  }
  if (taken.length > 0) {
    throw new DatabaseLayoutError(
      `The project's tables in public (from before they had a schema of their own) cannot be moved into schema "${tables.schema}": ` +
        `${taken.join(', ')} already ${taken.length === 1 ? 'exists' : 'exist'} there without the project's ledger. ` +
        `Drop or rename ${taken.length === 1 ? 'it' : 'them'} if ${taken.length === 1 ? 'it holds' : 'they hold'} nothing you need, ` +
        'or configure another schema (AGENT_DATABASE_SCHEMA, or the schema option).',
    );
  }
  for (const name of toMove) await client.query(`ALTER TABLE public."${name}" SET SCHEMA ${tables.quotedSchema}`);
  return toMove;
}

/**
 * The versions recorded in `public.schema_migrations` when it is this
 * project's ledger: the project's columns, and version 1 recorded under the
 * project's name for it. Undefined otherwise. The shape is checked before the
 * table is read, so another tool's ledger (whose `version` may be text) is
 * never queried in a way that could fail.
 */
async function projectLedgerVersions(client: PoolClient): Promise<number[] | undefined> {
  const { rows: columns } = await client.query<{ column_name: string; data_type: string }>(
    `SELECT column_name, data_type FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name = 'schema_migrations'`,
  );
  const expected = Object.entries(LEDGER_COLUMNS);
  const sameShape =
    columns.length === expected.length && expected.every(([name, type]) => columns.some((c) => c.column_name === name && c.data_type === type));
  if (!sameShape) return undefined;
  const { rows } = await client.query<{ version: number; name: string }>('SELECT version, name FROM public.schema_migrations ORDER BY version');
  if (!rows.some((r) => r.version === 1 && r.name === FIRST_LEDGER_ROW)) return undefined;
  return rows.map((r) => r.version);
}

/**
 * The kind of relation `schema.name` is (`r` a table, `p` a partitioned one,
 * `v` a view, …), undefined when there is none. Read from the catalog, which
 * shows relations whatever the role's privileges on them.
 */
async function relationKind(client: PoolClient, schema: string, name: string): Promise<string | undefined> {
  const { rows } = await client.query<{ relkind: string }>(
    'SELECT c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2',
    [schema, name],
  );
  return rows[0]?.relkind;
}
