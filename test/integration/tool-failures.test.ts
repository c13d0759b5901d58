import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backofficeTools } from '../../src/demo/tools';
import { tool } from '../../src/tools/tool';
import { startHarness, type Harness } from '../support/harness';

let h: Harness;
let inventoryAttempts = 0;

const flakyInventory = tool({
  name: 'check_inventory',
  description: 'Check stock for a product.',
  parameters: z.object({ sku: z.string() }),
  maxAttempts: 2,
  execute() {
    inventoryAttempts++;
    throw new Error('warehouse API is offline');
  },
});

beforeAll(async () => {
  h = await startHarness({ tools: [...backofficeTools(), flakyInventory] });
});
afterAll(async () => {
  await h?.stop();
});

/** Runs one turn where the model makes `call`, then answers; returns the parsed tool message content. */
async function turnWithCall(marker: string, call: { name: string; arguments: string | Record<string, unknown> }) {
  const id = h.newConversationId();
  h.model.enqueue({ toolCalls: [{ id: 'call_under_test', ...call }] }, { content: 'I could not do that, sorry.' });
  const { turn, answer } = await h.client.ask(id, marker);
  const transcript = (await h.client.transcript(id)).map((m) => m.message);
  const toolMessage = transcript.find((m) => m.role === 'tool');
  expect(toolMessage).toMatchObject({ role: 'tool', tool_call_id: 'call_under_test' });
  const requests = h.requestsFor(marker);
  expect(requests).toHaveLength(2);
  expect((requests[1].messages as { role: string }[]).map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
  expect(turn.outcome).toBe('answered');
  expect(answer).toBe('I could not do that, sorry.');
  h.expectOnlyValidModelRequests();
  return JSON.parse((toolMessage as { content: string }).content) as { kind: string; reason: string; error: string };
}

describe('tool calls that cannot succeed become error tool messages and the loop goes on', () => {
  it('a tool that throws on every attempt is retried, then answered with a tool_failed message', async () => {
    inventoryAttempts = 0;
    const result = await turnWithCall('Is the gear set in stock?', {
      name: 'check_inventory',
      arguments: { sku: 'G-1' },
    });
    expect(result).toMatchObject({ kind: 'tool_failed', reason: 'error' });
    expect(result.error).toContain('warehouse API is offline');
    expect(inventoryAttempts).toBe(2);
  });

  it('a call to a tool the worker does not have names the tools it does have', async () => {
    const result = await turnWithCall('Please delete the customer', {
      name: 'delete_customer',
      arguments: { id: 'cus_ada' },
    });
    expect(result).toMatchObject({ kind: 'tool_failed', reason: 'unknown_tool' });
    expect(result.error).toContain('Unknown tool "delete_customer"');
    expect(result.error).toContain('find_customer');
  });

  it('arguments that are not valid JSON are answered with invalid_arguments, and the tool never runs', async () => {
    const result = await turnWithCall('Find customer with broken JSON', {
      name: 'find_customer',
      arguments: '{"query": "Ada"',
    });
    expect(result).toMatchObject({ kind: 'tool_failed', reason: 'invalid_arguments' });
    expect(result.error).toContain('not valid JSON');
  });

  it('arguments that do not match the schema are answered with invalid_arguments naming the field', async () => {
    const result = await turnWithCall('Find customer number 42', { name: 'find_customer', arguments: { query: 42 } });
    expect(result).toMatchObject({ kind: 'tool_failed', reason: 'invalid_arguments' });
    expect(result.error).toContain('query');
  });

  it('a ToolError from the tool is not retried and its message reaches the model', async () => {
    const result = await turnWithCall('Refund an order that does not exist', {
      name: 'issue_refund',
      arguments: { order_id: 'ord_9999', amount_cents: 100, reason: 'test' },
    });
    expect(result).toMatchObject({ kind: 'tool_failed' });
    expect(result.error).toBe('Order ord_9999 does not exist.');
  });
});
