/**
 * The offline demo model: a scripted "brain" behind the model server that
 * knows the back-office demo tools, so a newcomer without an API key can see
 * the whole loop (tool calls, results, a final answer). Every answer says
 * plainly that it comes from the offline demo model.
 */
import type { RecordedRequest, Responder, ScriptedMessageReply, ScriptedReply } from '../testing/types';
import { demoRequestOf, type WireMessage } from './request-view';

/** Prefix of every text answer of the demo model. */
export const DEMO_LABEL = '[offline demo model]';

/** Answers like a small agent that can look up customers, list orders and issue refunds. */
export const demoResponder: Responder = (request: RecordedRequest): ScriptedReply => {
  // Either API (OPENAI_API=responses too): read as Chat Completions carries it.
  const { messages, tools: offered, toolChoice } = demoRequestOf(request);
  const lastUser = messages.map((m) => m.role).lastIndexOf('user');
  const content = messages[lastUser]?.content ?? '';
  // A message with files arrives as content parts: the demo reads their text.
  const userText = Array.isArray(content)
    ? content.flatMap((p: { type?: string; text?: string }) => (p.type === 'text' && p.text ? [p.text] : [])).join('\n')
    : String(content);
  const since = messages.slice(lastUser + 1);
  // A handoff's result only says which agent answers now: the new agent starts as if nothing ran yet.
  const handoffIds = new Set(
    since.flatMap(
      (m) => m.tool_calls?.filter((c) => c.function.name.startsWith('transfer_to_')).map((c) => c.id) ?? [],
    ),
  );
  const results = since.filter((m) => m.role === 'tool' && !handoffIds.has(m.tool_call_id ?? ''));
  const calledTools = since.flatMap((m) => m.tool_calls?.map((c) => c.function.name) ?? []);
  const toolsOffered = offered.length > 0;

  const first = toolsOffered && toolChoice !== 'none' ? planFromUserText(userText) : undefined;
  if (first?.toolCalls && !first.toolCalls.every((c) => calledTools.includes(c.name))) {
    // A refunds agent that can ask the auditor does so before it refunds.
    const refund =
      first.toolCalls[0].name === 'issue_refund'
        ? (first.toolCalls[0].arguments as { order_id: string; amount_cents: number })
        : undefined;
    if (refund && offered.includes('audit_order') && !calledTools.includes('audit_order')) {
      const task = `Check order ${refund.order_id} before a refund of ${refund.amount_cents} cents.`;
      return { toolCalls: [{ name: 'audit_order', arguments: { input: task } }] };
    }
    // An agent without the tools the request needs hands the conversation to one that may have them.
    const handoff = offered.find((name) => name.startsWith('transfer_to_'));
    if (first.toolCalls.every((c) => offered.includes(c.name))) return first;
    if (handoff && !calledTools.includes(handoff) && results.length === 0)
      return { toolCalls: [{ name: handoff, arguments: {} }] };
  }
  if (results.length > 0 && toolsOffered && toolChoice !== 'none' && !calledTools.includes('list_orders')) {
    const found = lastJson(results);
    const customers = (found as { customers?: { id: string }[] } | undefined)?.customers;
    if (customers && customers.length === 1) {
      return { toolCalls: [{ name: 'list_orders', arguments: { customer_id: customers[0].id } }] };
    }
  }
  if (results.length > 0) {
    const lines = results.map((r) => `- ${String(r.content).slice(0, 300)}`);
    return { content: `${DEMO_LABEL} Here is what the tools returned:\n${lines.join('\n')}` };
  }
  return {
    content:
      `${DEMO_LABEL} Hello! I am a scripted stand-in for a real model (set OPENAI_API_KEY to use one). ` +
      'Try: "find Ada", "orders of cus_alan", or "refund $12 on ord_1001 because it arrived late".',
  };
};

function planFromUserText(text: string): ScriptedMessageReply | undefined {
  const order = /\bord_\d+\b/.exec(text)?.[0];
  if (order && /^check order/i.test(text))
    return { toolCalls: [{ name: 'get_order', arguments: { order_id: order } }] };
  if (order && /refund/i.test(text)) {
    const amount = /\$\s?(\d+(?:\.\d{1,2})?)/.exec(text)?.[1];
    const amountCents = amount ? Math.round(Number(amount) * 100) : 500;
    const reason = /because (.+)$/i.exec(text)?.[1]?.trim() ?? 'requested by the customer';
    return { toolCalls: [{ name: 'issue_refund', arguments: { order_id: order, amount_cents: amountCents, reason } }] };
  }
  const customerId = /\bcus_[a-z0-9]+\b/i.exec(text)?.[0];
  if (customerId) {
    return {
      toolCalls: [
        { name: 'find_customer', arguments: { query: customerId } },
        { name: 'list_orders', arguments: { customer_id: customerId } },
      ],
    };
  }
  const name = /\b(?:find|look up|lookup|who is|customer)\s+([A-Za-z][\w.@-]*)/i.exec(text)?.[1];
  if (name) return { toolCalls: [{ name: 'find_customer', arguments: { query: name } }] };
  return undefined;
}

function lastJson(results: WireMessage[]): unknown {
  try {
    return JSON.parse(String(results[results.length - 1].content));
  } catch {
    return undefined;
  }
}
