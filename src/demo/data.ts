/**
 * The back-office demo's own data: customers, orders and refunds in
 * PostgreSQL's `public` schema, where the demo has always kept them, so a
 * database the demo used before keeps its rows. The demo is an app using the
 * worker, not part of it: `migrate` never creates these tables; whoever runs
 * `backofficeTools()` calls {@link setupBackofficeDemo} first.
 */
import type { Pool } from 'pg';
import { inTransaction } from '../db/transaction';

/** The demo's customers, seeded when absent. */
export const DEMO_CUSTOMERS = [
  { id: 'cus_ada', name: 'Ada Lovelace', email: 'ada@example.com' },
  { id: 'cus_alan', name: 'Alan Turing', email: 'alan@example.com' },
  { id: 'cus_grace', name: 'Grace Hopper', email: 'grace@example.com' },
] as const;

/** The demo's orders, seeded when absent (nothing refunded). */
export const DEMO_ORDERS = [
  { id: 'ord_1001', customerId: 'cus_ada', description: 'Analytical engine gears', totalCents: 12900 },
  { id: 'ord_1002', customerId: 'cus_ada', description: 'Punched cards, box of 500', totalCents: 2400 },
  { id: 'ord_2001', customerId: 'cus_alan', description: 'Enigma rotor set', totalCents: 45000 },
  { id: 'ord_3001', customerId: 'cus_grace', description: 'Compiler manual, hardcover', totalCents: 5900 },
] as const;

/**
 * Creates the tables `backofficeTools()` work on, in `public`, when absent,
 * and adds each seed customer and order whose id is absent. Idempotent: rows
 * already there (an order with refunds, a customer a test added) are left as
 * they are, so it runs at every start. Safe when several processes start at once.
 */
export async function setupBackofficeDemo(pool: Pool): Promise<void> {
  await inTransaction(pool, async (client) => {
    // CREATE TABLE IF NOT EXISTS races with itself (two creators, one unique-violation): take turns.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('durable-agent-worker.backoffice-demo'))");
    await client.query(`
      CREATE TABLE IF NOT EXISTS public.customers (
        id text PRIMARY KEY,
        name text NOT NULL,
        email text NOT NULL
      );
      CREATE TABLE IF NOT EXISTS public.orders (
        id text PRIMARY KEY,
        customer_id text NOT NULL REFERENCES public.customers(id),
        description text NOT NULL,
        total_cents integer NOT NULL CHECK (total_cents >= 0),
        refunded_cents integer NOT NULL DEFAULT 0 CHECK (refunded_cents >= 0),
        created_at timestamptz NOT NULL DEFAULT now(),
        CHECK (refunded_cents <= total_cents)
      );
      CREATE TABLE IF NOT EXISTS public.refunds (
        id bigserial PRIMARY KEY,
        order_id text NOT NULL REFERENCES public.orders(id),
        amount_cents integer NOT NULL CHECK (amount_cents > 0),
        reason text NOT NULL,
        idempotency_key text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now()
      );
    `);
    for (const c of DEMO_CUSTOMERS) {
      await client.query(
        'INSERT INTO public.customers (id, name, email) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING',
        [c.id, c.name, c.email],
      );
    }
    for (const o of DEMO_ORDERS) {
      await client.query(
        'INSERT INTO public.orders (id, customer_id, description, total_cents) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING',
        [o.id, o.customerId, o.description, o.totalCents],
      );
    }
  });
}
