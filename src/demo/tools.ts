/**
 * A small back-office domain for demos and tests: customers, orders and
 * refunds in PostgreSQL's `public` schema, created and seeded by
 * `setupBackofficeDemo` (./data), which must run before these
 * tools do. `find_customer` and `list_orders` read; `issue_refund` writes its
 * effect and its ledger row in one transaction.
 */
import { z } from 'zod';
import { tool, ToolError, type Tool } from '../tools/tool';
import { agent, type Agent } from '../tools/agents';

/** Refunds above this amount (in cents) need a person's approval. */
export const REFUND_APPROVAL_THRESHOLD_CENTS = 10_000;

/** The demo tools. */
export function backofficeTools(): Tool[] {
  return [
    tool({
      name: 'find_customer',
      description: 'Find customers by a part of their name, email or id.',
      parameters: z.object({ query: z.string().min(1).describe('Part of a name, an email or a customer id') }),
      async execute({ query }, { db }) {
        const { rows } = await db.query(
          `SELECT id, name, email FROM public.customers
            WHERE id = $1 OR name ILIKE '%' || $1 || '%' OR email ILIKE '%' || $1 || '%'
            ORDER BY id LIMIT 10`,
          [query],
        );
        return { customers: rows };
      },
    }),
    tool({
      name: 'list_orders',
      description: "List a customer's orders with amounts already refunded.",
      parameters: z.object({ customer_id: z.string().min(1).describe('Customer id, e.g. cus_ada') }),
      async execute({ customer_id }, { db }) {
        const { rows } = await db.query(
          `SELECT id, description, total_cents, refunded_cents FROM public.orders WHERE customer_id = $1 ORDER BY id`,
          [customer_id],
        );
        return { customer_id, orders: rows };
      },
    }),
    tool({
      name: 'issue_refund',
      description: 'Refund part or all of an order. Applied once per tool call, however often it is retried.',
      parameters: z.object({
        order_id: z.string().min(1).describe('Order id, e.g. ord_1001'),
        amount_cents: z.number().int().positive().describe('Amount to refund, in cents'),
        reason: z.string().min(1).describe('Why the refund is issued'),
      }),
      needsApproval: ({ amount_cents }) => amount_cents > REFUND_APPROVAL_THRESHOLD_CENTS,
      idempotent: true,
      async execute({ order_id, amount_cents, reason }, { once, idempotencyKey }) {
        return once(async (tx) => {
          const order = await tx.query<{ total_cents: number; refunded_cents: number }>(
            'SELECT total_cents, refunded_cents FROM public.orders WHERE id = $1 FOR UPDATE',
            [order_id],
          );
          if (order.rowCount === 0) throw new ToolError(`Order ${order_id} does not exist.`);
          const { total_cents, refunded_cents } = order.rows[0];
          if (refunded_cents + amount_cents > total_cents) {
            throw new ToolError(
              `Refund of ${amount_cents} cents on ${order_id} exceeds what is left to refund (${total_cents - refunded_cents} cents).`,
            );
          }
          const refund = await tx.query<{ id: string }>(
            'INSERT INTO public.refunds (order_id, amount_cents, reason, idempotency_key) VALUES ($1, $2, $3, $4) RETURNING id',
            [order_id, amount_cents, reason, idempotencyKey],
          );
          await tx.query('UPDATE public.orders SET refunded_cents = refunded_cents + $2 WHERE id = $1', [
            order_id,
            amount_cents,
          ]);
          return {
            refund_id: refund.rows[0].id,
            order_id,
            amount_cents,
            refunded_total_cents: refunded_cents + amount_cents,
          };
        });
      },
    }),
  ];
}

/** The order auditor's tool: one order with what was refunded on it so far. Read-only. */
export function orderAuditTool(): Tool {
  return tool({
    name: 'get_order',
    description: 'One order by id: its customer, total, what was refunded so far, and each refund with its reason.',
    parameters: z.object({ order_id: z.string().min(1).describe('Order id, e.g. ord_1001') }),
    async execute({ order_id }, { db }) {
      const order = await db.query(
        'SELECT id, customer_id, description, total_cents, refunded_cents FROM public.orders WHERE id = $1',
        [order_id],
      );
      if (order.rowCount === 0) throw new ToolError(`Order ${order_id} does not exist.`);
      const refunds = await db.query(
        'SELECT amount_cents, reason FROM public.refunds WHERE order_id = $1 ORDER BY id',
        [order_id],
      );
      return { order: order.rows[0], refunds: refunds.rows };
    },
  });
}

/**
 * The demo's agents, over its tools: `triage` (first: where conversations
 * begin) looks customers and orders up and hands refund requests to
 * `refunds`, which asks the `auditor` (an agent called as a tool, in a
 * conversation of its own) to check the order, issues the refund and hands
 * anything else back.
 */
export function backofficeAgents(tools: readonly Tool[] = backofficeTools()): Agent[] {
  const named = (...names: string[]) => tools.filter((t) => names.includes(t.name));
  const auditor = agent({
    name: 'auditor',
    instructions:
      'You audit orders before refunds: look the order up and say whether the refund asked for fits what is left to refund. Do not refund.',
    handoffDescription: 'Checks an order and its earlier refunds before a refund; answers with what it found.',
    tools: [orderAuditTool()],
  });
  return [
    agent({
      name: 'triage',
      instructions:
        'You are the triage agent of a back office. Look customers and their orders up. ' +
        'Hand any refund request to the refunds agent; never promise a refund yourself.',
      handoffDescription: 'Looks customers and orders up and routes requests.',
      tools: named('find_customer', 'list_orders'),
      handoffs: ['refunds'],
    }),
    agent({
      name: 'refunds',
      instructions:
        'You are the refunds specialist of a back office. Ask the auditor to check the order (audit_order), then issue the refund asked for ' +
        "with issue_refund (refunds over $100 wait for a person's approval). Hand anything that is not a refund back to the triage agent.",
      handoffDescription: 'Issues refunds on orders.',
      tools: [...named('list_orders', 'issue_refund'), auditor.asTool({ toolName: 'audit_order' })],
      handoffs: ['triage'],
    }),
    auditor,
  ];
}
