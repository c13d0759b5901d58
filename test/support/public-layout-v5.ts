/**
 * A frozen copy of the project's migrations 1 to 5 as they were before the
 * project's tables had a schema of their own: unqualified SQL, run with
 * `search_path` at `public`, the ledger `schema_migrations` in `public` too.
 * Tests build databases "migrated by an earlier release" from it. Never edit
 * it to follow the current migrations: it is what old databases hold.
 */
import type { Pool } from 'pg';
import { inTransaction } from '../../src/db/transaction';

interface OldMigration {
  version: number;
  name: string;
  sql: string;
}

/** Migrations 1 to 5 as released before the project's schema, verbatim. */
export const PUBLIC_LAYOUT_MIGRATIONS: OldMigration[] = [
  {
    version: 1,
    name: 'transcripts, model responses, tool results and the idempotency ledger',
    sql: `
      CREATE TABLE conversation_messages (
        conversation_id text NOT NULL,
        seq integer NOT NULL,
        role text NOT NULL,
        message jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (conversation_id, seq)
      );
      CREATE TABLE tool_results (
        idempotency_key text PRIMARY KEY,
        conversation_id text NOT NULL,
        tool_call_id text NOT NULL,
        tool_name text NOT NULL,
        content text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE model_responses (
        response_key text PRIMARY KEY,
        conversation_id text NOT NULL,
        message jsonb NOT NULL,
        finish_reason text,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE tool_ledger (
        idempotency_key text PRIMARY KEY,
        tool_name text NOT NULL,
        result jsonb,
        created_at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
  {
    version: 2,
    name: 'back-office demo domain: customers, orders, refunds',
    sql: `
      CREATE TABLE customers (
        id text PRIMARY KEY,
        name text NOT NULL,
        email text NOT NULL
      );
      CREATE TABLE orders (
        id text PRIMARY KEY,
        customer_id text NOT NULL REFERENCES customers(id),
        description text NOT NULL,
        total_cents integer NOT NULL CHECK (total_cents >= 0),
        refunded_cents integer NOT NULL DEFAULT 0 CHECK (refunded_cents >= 0),
        created_at timestamptz NOT NULL DEFAULT now(),
        CHECK (refunded_cents <= total_cents)
      );
      CREATE TABLE refunds (
        id bigserial PRIMARY KEY,
        order_id text NOT NULL REFERENCES orders(id),
        amount_cents integer NOT NULL CHECK (amount_cents > 0),
        reason text NOT NULL,
        idempotency_key text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      INSERT INTO customers (id, name, email) VALUES
        ('cus_ada', 'Ada Lovelace', 'ada@example.com'),
        ('cus_alan', 'Alan Turing', 'alan@example.com'),
        ('cus_grace', 'Grace Hopper', 'grace@example.com');
      INSERT INTO orders (id, customer_id, description, total_cents) VALUES
        ('ord_1001', 'cus_ada', 'Analytical engine gears', 12900),
        ('ord_1002', 'cus_ada', 'Punched cards, box of 500', 2400),
        ('ord_2001', 'cus_alan', 'Enigma rotor set', 45000),
        ('ord_3001', 'cus_grace', 'Compiler manual, hardcover', 5900);
    `,
  },
  {
    version: 3,
    name: 'approval decisions, for people',
    sql: `
      CREATE TABLE approval_decisions (
        conversation_id text NOT NULL,
        decision_id text NOT NULL,
        decision text NOT NULL CHECK (decision IN ('approve', 'reject')),
        tool_call_ids text[] NOT NULL,
        reason text,
        decided_by text,
        decided_at timestamptz NOT NULL,
        via text NOT NULL,
        PRIMARY KEY (conversation_id, decision_id)
      );
    `,
  },
  {
    version: 4,
    name: 'effect keys of decided calls',
    sql: `
      -- The effect key of each decided call (see src/core/effect-keys.ts), in the order of
      -- tool_call_ids: provider ids repeat across responses, the keys never do. NULL for decisions
      -- recorded before effect keys per call instance.
      ALTER TABLE approval_decisions ADD COLUMN call_keys text[];
    `,
  },
  {
    version: 5,
    name: 'usage and context budget of model responses',
    sql: `
      -- The provider's usage ({promptTokens, completionTokens}), the worker's estimate of the
      -- prompt's tokens (to calibrate the next estimate against the provider's count) and what
      -- the context budget did to the request. NULL for responses stored before.
      ALTER TABLE model_responses ADD COLUMN usage jsonb;
      ALTER TABLE model_responses ADD COLUMN prompt_estimate integer;
      ALTER TABLE model_responses ADD COLUMN context_budget jsonb;
      CREATE INDEX model_responses_by_conversation ON model_responses (conversation_id, created_at);
    `,
  },
];

/**
 * Builds the layout an earlier release left in `pool`'s database: migrations
 * up to `throughVersion` run in `public`, and recorded in `public.schema_migrations`.
 */
export async function buildPublicLayout(pool: Pool, throughVersion = 5): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query('SET LOCAL search_path TO public');
    await client.query(`CREATE TABLE schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    for (const m of PUBLIC_LAYOUT_MIGRATIONS.filter((m) => m.version <= throughVersion)) {
      await client.query(m.sql);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
    }
  });
}
