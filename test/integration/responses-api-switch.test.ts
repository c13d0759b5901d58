import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';
import { agent } from '../../src/tools/agents';
import { backofficeTools } from '../../src/demo/tools';

// A conversation that moves between the two model APIs at a handoff: the triage agent speaks the Responses API,
// the writer Chat Completions; one transcript, valid for both.

const tools = backofficeTools();
const agents = [
  agent({
    name: 'triage',
    instructions: 'TRIAGE: route requests.',
    tools: tools.filter((t) => t.name === 'find_customer'),
    handoffs: ['writer'],
    modelSettings: { api: 'responses' },
  }),
  agent({ name: 'writer', instructions: 'WRITER: answer in prose.', handoffs: ['triage'] }),
];

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ tools, agents, defaultAgent: 'triage' });
});
afterAll(async () => {
  await h?.stop();
});

type Item = { type?: string; role?: string; content?: unknown };

describe('switching model APIs between agents', () => {
  it('sends Chat Completions no reasoning items, and the Responses agent its own back after the round trip', async () => {
    const id = h.newConversationId('api-switch');
    h.model.enqueue(
      {
        reasoningContent: 'Find the customer, then let the writer answer.',
        toolCalls: [{ id: 'call_s1', name: 'find_customer', arguments: { query: 'Ada' } }],
      },
      { reasoningContent: 'Hand it over.', toolCalls: [{ id: 'call_s2', name: 'transfer_to_writer', arguments: {} }] },
      { content: 'Ada Lovelace is our customer cus_1001.' },
      { toolCalls: [{ id: 'call_s3', name: 'transfer_to_triage', arguments: {} }] },
      { content: 'Triage here again.' },
    );
    const first = await h.client.ask(id, 'SWITCH who is Ada?');
    expect(first.answer).toBe('Ada Lovelace is our customer cus_1001.');
    const second = await h.client.ask(id, 'SWITCH back to triage please');
    expect(second.answer).toBe('Triage here again.');

    const paths = h.model.requests.map((r) => r.path);
    expect(paths).toEqual([
      '/v1/responses',
      '/v1/responses',
      '/v1/chat/completions',
      '/v1/chat/completions',
      '/v1/responses',
    ]);
    // Chat Completions requests carry the transcript's messages only: no reasoning of the other API.
    for (const r of h.model.requests.filter((q) => q.path === '/v1/chat/completions'))
      expect(JSON.stringify(r.body)).not.toContain('reasoning');
    // Back on the Responses API, triage's two reasoning items go back, each before the call it preceded.
    const last = h.model.requests[4].body as { input: Item[] };
    const types = last.input.map((i) => i.type ?? 'message');
    const reasoningAt = types.flatMap((t, i) => (t === 'reasoning' ? [i] : []));
    expect(reasoningAt).toHaveLength(2);
    for (const at of reasoningAt) expect(types[at + 1]).toBe('function_call');
    h.expectOnlyValidModelRequests();
  });
});
