import { describe, expect, it } from 'vitest';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { toResponsesRequest } from '../../src/activities/model/responses-request';
import { sealReasoning } from '../../src/testing/responses-encrypted';
import type { RecordedRequest } from '../../src/testing';
import { checkResponsesRequests, viewRequest } from '../chaos/model-request';

// The chaos run reads requests of both APIs alike: the same conversation sent to Chat Completions and, translated by the
// worker, to the Responses API must look the same to its scripted model; and its second reading of Responses requests
// finds what breaks the Responses form of the guarantee.

const record = (path: string, body: unknown, index = 0): RecordedRequest => ({
  index,
  receivedAt: 0,
  method: 'POST',
  path,
  body,
  valid: true,
  aborted: false,
});

const reasoning = (id: string, next: { type: 'message' } | { type: 'function_call'; call_id: string }) => ({
  type: 'reasoning' as const,
  id,
  summary: [],
  encrypted_content: sealReasoning({ id, text: 'thinking', next }),
});

const chat: ChatCompletionCreateParamsNonStreaming = {
  model: 'scripted-model',
  messages: [
    { role: 'system', content: 'You help.' },
    { role: 'user', content: '[chaos-x-000] message 1' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'find_customer', arguments: '{}' } },
        { id: 'call_2', type: 'function', function: { name: 'check_stock', arguments: '{}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: 'Ada' },
    { role: 'tool', tool_call_id: 'call_2', content: '3' },
    { role: 'assistant', content: 'Found her.' },
    { role: 'user', content: '[chaos-x-000] message 2' },
  ],
  tools: [
    { type: 'function', function: { name: 'find_customer', parameters: { type: 'object', properties: {} } } },
    { type: 'function', function: { name: 'transfer_to_backdesk', parameters: { type: 'object', properties: {} } } },
  ],
};

describe('the chaos run reading model requests', () => {
  it('sees a Responses request as the same messages and tools as its Chat Completions form', () => {
    const asChat = viewRequest(record('/v1/chat/completions', chat));
    const asResponses = viewRequest(record('/v1/responses', toResponsesRequest(chat)));
    expect(asResponses.api).toBe('responses');
    expect(asResponses.messages.map((m) => m.role)).toEqual(asChat.messages.map((m) => m.role));
    expect(asResponses.messages[1].content).toBe('[chaos-x-000] message 1');
    expect(asResponses.toolNames).toEqual(['find_customer', 'transfer_to_backdesk']);
    expect(asResponses.toolNames).toEqual(asChat.toolNames);
  });

  it('finds no break in a request with reasoning sent back before its items, and each break when there is one', () => {
    const items = [
      { type: 'message', role: 'user', content: '[chaos-x-000] message 1' },
      reasoning('rs_1', { type: 'function_call', call_id: 'call_1' }),
      { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'find_customer', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'Ada' },
      reasoning('rs_2', { type: 'message' }),
      { type: 'message', id: 'msg_2', role: 'assistant', status: 'completed', content: [] },
    ];
    const body = (input: unknown[]) => ({
      model: 'scripted-model',
      input,
      store: false,
      include: ['reasoning.encrypted_content'],
    });
    const good = checkResponsesRequests([record('/v1/responses', body(items))]);
    expect(good).toEqual({ reasoningItemsSentBack: 2, reasoningLedCallsSent: 0, ruleBreaks: [], reasoningLost: [] });

    // The call taken out from after its reasoning, then its output; an item sent without its id; store left on.
    const withoutCall = items.filter((_, i) => i !== 2);
    const withoutOutput = items.filter((_, i) => i !== 3);
    const withoutId = items.map((item, i) => (i === 5 ? { ...item, id: undefined } : item));
    const found = checkResponsesRequests([
      record('/v1/responses', body(withoutCall), 1),
      record('/v1/responses', body(withoutOutput), 2),
      record('/v1/responses', body(withoutId), 3),
      record('/v1/responses', { ...body(items), store: true }, 4),
      record('/v1/chat/completions', chat, 5),
    ]).ruleBreaks;
    expect(found).toHaveLength(4);
    expect(found[0]).toMatch(/^Responses request #1: .*reasoning rs_1 .*function_call_output call_1 without/);
    expect(found[1]).toMatch(/^Responses request #2: function_call call_1 sent 1 time\(s\), answered 0/);
    expect(found[2]).toMatch(/^Responses request #3: .*reasoning rs_2 followed by an item without its id/);
    expect(found[3]).toMatch(/^Responses request #4: store is not false/);
  });

  it('finds a call sent back without the reasoning the model wrote before it', () => {
    const input = [
      { type: 'message', role: 'user', content: '[chaos-x-000] message 1' },
      { type: 'function_call', call_id: 'call_c0_1', name: 'find_customer', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_c0_1', output: 'Ada' },
    ];
    const body = { model: 'scripted-model', input, store: false, include: ['reasoning.encrypted_content'] };
    const stats = checkResponsesRequests([record('/v1/responses', body, 7)], new Set(['call_c0_1']));
    expect(stats.ruleBreaks).toEqual([]);
    expect(stats.reasoningLedCallsSent).toBe(1);
    expect(stats.reasoningLost).toEqual(['Responses request #7: input[1]: call call_c0_1 without its reasoning']);
  });
});
