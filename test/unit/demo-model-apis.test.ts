import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import { toResponsesRequest } from '../../src/activities/model/responses-request';
import { demoResponder } from '../../src/demo/model';
import { demoRequestOf } from '../../src/demo/request-view';
import type { RecordedRequest } from '../../src/testing/types';

// The offline demo model behind `npm start` with OPENAI_API=responses: the worker sends it Responses requests, made
// by the worker's own translation, and it must answer them as it answers the same conversation on Chat Completions.

const fn = (name: string) => ({
  type: 'function' as const,
  function: { name, description: name, parameters: { type: 'object', properties: {} } },
});
const tools = [fn('find_customer'), fn('list_orders'), fn('issue_refund'), fn('transfer_to_refunds')];

const asked = (text: string): ChatCompletionCreateParamsNonStreaming['messages'] => [
  { role: 'system', content: 'You are the back office.' },
  { role: 'user', content: text },
];

const conversations: Record<string, ChatCompletionCreateParamsNonStreaming['messages']> = {
  'a first question': asked('find Ada'),
  'a tool result that names one customer': [
    ...asked('find Ada'),
    {
      role: 'assistant',
      content: 'Looking.',
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'find_customer', arguments: '{"query":"Ada"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: JSON.stringify({ customers: [{ id: 'cus_ada' }] }) },
  ],
  'the results of two calls of one answer': [
    ...asked('customer cus_ada'),
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'find_customer', arguments: '{"query":"cus_ada"}' } },
        { id: 'call_2', type: 'function', function: { name: 'list_orders', arguments: '{"customer_id":"cus_ada"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: '{"customers":[{"id":"cus_ada"},{"id":"cus_bob"}]}' },
    { role: 'tool', tool_call_id: 'call_2', content: '{"orders":[]}' },
  ],
  'a message with a file': [
    { role: 'system', content: 'You are the back office.' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'refund $12.50 on ord_2001 because it broke' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
      ],
    },
  ],
};

const recorded = (path: string, body: unknown): RecordedRequest => ({ path, body }) as RecordedRequest;

describe('the offline demo model on both model APIs', () => {
  for (const [name, messages] of Object.entries(conversations)) {
    it(`answers ${name} the same on the Responses API as on Chat Completions`, async () => {
      const chat: ChatCompletionCreateParamsNonStreaming = { model: 'demo', messages, tools };
      const responses = toResponsesRequest(chat);
      const onChat = await demoResponder(recorded('/v1/chat/completions', chat));
      const onResponses = await demoResponder(recorded('/v1/responses', responses));
      expect(onResponses).toEqual(onChat);
    });
  }

  it('reads a Responses request back into the messages, tools and tool choice it was made from', () => {
    const chat: ChatCompletionCreateParamsNonStreaming = {
      model: 'demo',
      messages: conversations['the results of two calls of one answer'],
      tools,
      tool_choice: 'none',
    };
    const read = demoRequestOf(recorded('/v1/responses', toResponsesRequest(chat)));
    expect(read.tools).toEqual(tools.map((t) => t.function.name));
    expect(read.toolChoice).toBe('none');
    expect(read.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool']);
    expect(read.messages[2].tool_calls?.map((c) => [c.id, c.function.name])).toEqual([
      ['call_1', 'find_customer'],
      ['call_2', 'list_orders'],
    ]);
    expect(read.messages.slice(3).map((m) => m.tool_call_id)).toEqual(['call_1', 'call_2']);
  });
});
