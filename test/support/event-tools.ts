/**
 * Tools that wait for events, for tests (a worker process loads them through AGENT_TOOLS_MODULE; in-process harnesses
 * import them): `await_payment_settled` waits up to a minute for `payment.settled` with the order's id as its key,
 * `await_quick_reply` up to 2 s for `customer.replied`; `come_back_later` lets the model ask its conversation to come
 * back.
 */
import { z } from 'zod';
import type { Tool } from '../../src/tools/tool';
import { waitForEvent } from '../../src/tools/wait-for-event';
import { comeBackLater } from '../../src/tools/come-back-later';

export const tools: Tool[] = [
  waitForEvent({
    name: 'await_payment_settled',
    description: "Wait until the order's payment has settled; returns the settlement.",
    parameters: z.object({ order_id: z.string().min(1) }),
    event: 'payment.settled',
    key: ({ order_id }) => order_id,
    timeoutMs: 60_000,
  }),
  waitForEvent({
    name: 'await_quick_reply',
    description: "Wait a moment for the customer's reply.",
    parameters: z.object({ ticket: z.string().min(1) }),
    event: 'customer.replied',
    key: ({ ticket }) => ticket,
    timeoutMs: 2_000,
  }),
  comeBackLater(),
];
