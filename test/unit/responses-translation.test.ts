import { describe, expect, it } from 'vitest';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { Response, ResponseInputItem } from 'openai/resources/responses/responses';
import { readResponsesOutput, reasoningEntries } from '../../src/activities/model/responses-answer';
import {
  findResponsesItemProblems,
  toInputItems,
  toResponsesRequest,
  withStoredReasoning,
} from '../../src/activities/model/responses-request';
import { modelApiOf } from '../../src/activities/model/responses-completion';
import { stoppedParts, stoppedReason } from '../../src/activities/model/responses-stopped';
import { toCompletion } from '../../src/activities/completion';
import { loadConfig } from '../../src/app/config';
import { describeInvalidInput } from '../../src/contract/conversation-input-checks';
import type { ChatMessage } from '../../src/contract/messages';
import type { ReasoningEntry } from '../../src/db/reasoning-store';

type Messages = ChatCompletionCreateParamsNonStreaming['messages'];

const reasoning = (id: string): ReasoningEntry['item'] => ({
  type: 'reasoning',
  id,
  summary: [],
  encrypted_content: `gAAAA-${id}-sealed`,
});

const toolSpec = {
  type: 'function' as const,
  function: {
    name: 'refund_order',
    description: 'Refund an order',
    parameters: {
      type: 'object',
      properties: { order_id: { type: 'string' } },
      required: ['order_id'],
      additionalProperties: false,
    },
    strict: true,
  },
};

describe('a Chat Completions request in the Responses form', () => {
  it('sends the transcript as items, never stores anything at OpenAI and asks for encrypted reasoning', () => {
    const body: ChatCompletionCreateParamsNonStreaming = {
      model: 'o4-mini',
      messages: [
        { role: 'system', content: 'You are the back office.' },
        { role: 'user', content: 'Refund order 42.' },
        {
          role: 'assistant',
          content: 'Looking it up.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'refund_order', arguments: '{"order_id":"42"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"refunded":true}' },
      ],
      tools: [toolSpec],
      tool_choice: 'auto',
      max_tokens: 500,
      temperature: 0.2,
    };
    const request = toResponsesRequest(body);
    expect(request).toEqual({
      model: 'o4-mini',
      store: false,
      include: ['reasoning.encrypted_content'],
      temperature: 0.2,
      max_output_tokens: 500,
      tool_choice: 'auto',
      tools: [
        {
          type: 'function',
          name: 'refund_order',
          description: 'Refund an order',
          parameters: toolSpec.function.parameters,
          strict: true,
        },
      ],
      input: [
        { type: 'message', role: 'system', content: 'You are the back office.' },
        { type: 'message', role: 'user', content: 'Refund order 42.' },
        { type: 'message', role: 'assistant', content: 'Looking it up.' },
        { type: 'function_call', call_id: 'call_1', name: 'refund_order', arguments: '{"order_id":"42"}' },
        { type: 'function_call_output', call_id: 'call_1', output: '{"refunded":true}' },
      ],
    });
    expect(request).not.toHaveProperty('previous_response_id');
    expect(findResponsesItemProblems(request.input as ResponseInputItem[])).toEqual([]);
  });

  it('asks for a typed output as text.format, and sends files as input parts', () => {
    const request = toResponsesRequest({
      model: 'gpt-5',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is on the receipt?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBO' } },
            { type: 'file', file: { filename: 'invoice.pdf', file_data: 'data:application/pdf;base64,JVBE' } },
          ],
        },
      ],
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'receipt', schema: { type: 'object' }, strict: true },
      },
    });
    expect(request.text).toEqual({
      format: { type: 'json_schema', name: 'receipt', schema: { type: 'object' }, strict: true },
    });
    expect(request.input).toEqual([
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'What is on the receipt?' },
          { type: 'input_image', image_url: 'data:image/png;base64,iVBO', detail: 'auto' },
          { type: 'input_file', filename: 'invoice.pdf', file_data: 'data:application/pdf;base64,JVBE' },
        ],
      },
    ]);
    expect(request).not.toHaveProperty('tools');
  });

  it('sends each reasoning item just before the item that followed it, that item with its id', () => {
    const entries: ReasoningEntry[] = [
      { item: reasoning('rs_a'), before: { type: 'message', id: 'msg_1' } },
      { item: reasoning('rs_b'), before: { type: 'function_call', id: 'fc_2', callId: 'call_2' } },
    ];
    const answer = withStoredReasoning(
      {
        role: 'assistant',
        content: 'Refunding both.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'refund_order', arguments: '{"order_id":"1"}' } },
          { id: 'call_2', type: 'function', function: { name: 'refund_order', arguments: '{"order_id":"2"}' } },
        ],
      },
      entries,
    );
    const items = toInputItems([
      { role: 'user', content: 'Refund 1 and 2.' },
      answer as Messages[number],
      { role: 'tool', tool_call_id: 'call_1', content: 'ok' },
      { role: 'tool', tool_call_id: 'call_2', content: 'ok' },
    ]);
    expect(items.map((i) => [i.type, 'id' in i ? i.id : undefined])).toEqual([
      ['message', undefined],
      ['reasoning', 'rs_a'],
      ['message', 'msg_1'],
      ['function_call', undefined],
      ['reasoning', 'rs_b'],
      ['function_call', 'fc_2'],
      ['function_call_output', undefined],
      ['function_call_output', undefined],
    ]);
    // The encrypted content goes back exactly as it came.
    expect(items[1]).toEqual(reasoning('rs_a'));
    expect(items[2]).toEqual({
      type: 'message',
      role: 'assistant',
      id: 'msg_1',
      status: 'completed',
      content: [{ type: 'output_text', text: 'Refunding both.', annotations: [] }],
    });
    expect(findResponsesItemProblems(items)).toEqual([]);
  });

  it('drops a reasoning item whose following item is gone, and sends no other message the field', () => {
    const entries: ReasoningEntry[] = [
      { item: reasoning('rs_gone'), before: { type: 'function_call', id: 'fc_9', callId: 'call_9' } },
      { item: reasoning('rs_text'), before: { type: 'message', id: 'msg_9' } },
    ];
    // A handoff's filter took the calls out and the answer had no text: nothing of it may be sent with reasoning.
    const filtered = withStoredReasoning({ role: 'assistant', content: null }, entries);
    expect(toInputItems([{ role: 'user', content: 'hi' }, filtered as Messages[number]])).toEqual([
      { type: 'message', role: 'user', content: 'hi' },
    ]);
    const user: ChatMessage = { role: 'user', content: 'hi' };
    expect(withStoredReasoning(user, entries)).toBe(user);
  });

  it('finds every break of the Responses form of the guarantee', () => {
    const items: ResponseInputItem[] = [
      { type: 'message', role: 'user', content: 'go' },
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'x' },
      { type: 'function_call', call_id: 'c1', name: 'a', arguments: '{}' },
      { type: 'function_call', call_id: 'c2', name: 'a', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: 'ok' },
      { type: 'function_call_output', call_id: 'c1', output: 'again' },
      { type: 'message', role: 'user', content: 'and?' },
      { type: 'function_call_output', call_id: 'c7', output: 'stray' },
      { type: 'reasoning', id: 'rs_2', summary: [], encrypted_content: 'y' },
    ];
    expect(findResponsesItemProblems(items)).toEqual([
      { kind: 'missing_result', index: 1, toolCallId: 'c2' },
      // rs_1 is followed by a call sent without its id: nothing ties the reasoning to it.
      { kind: 'reasoning_without_following_item', index: 1, reasoningId: 'rs_1' },
      { kind: 'duplicate_result', index: 5, toolCallId: 'c1' },
      { kind: 'orphan_result', index: 7, toolCallId: 'c7' },
      { kind: 'reasoning_without_following_item', index: 8, reasoningId: 'rs_2' },
    ]);
  });
});

describe('a Responses answer in the transcript form', () => {
  const response = (output: unknown[], extra: Partial<Response> = {}): Response =>
    ({
      status: 'completed',
      incomplete_details: null,
      usage: { input_tokens: 120, output_tokens: 30, total_tokens: 150 },
      output,
      ...extra,
    }) as unknown as Response;

  it('reads text, calls by call_id, usage, and keeps each reasoning item with what followed it', () => {
    const parts = readResponsesOutput(
      response([
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'enc1' },
        { type: 'function_call', id: 'fc_1', call_id: 'call_a', name: 'refund_order', arguments: '{"order_id":"1"}' },
        { type: 'reasoning', id: 'rs_2', summary: [], encrypted_content: 'enc2' },
        { type: 'function_call', id: 'fc_2', call_id: 'call_a', name: 'refund_order', arguments: '' },
      ]),
    );
    expect(parts.finishReason).toBe('tool_calls');
    expect(parts.usage).toEqual({ promptTokens: 120, completionTokens: 30 });
    const completion = toCompletion(parts);
    // A repeated call_id gets an id of its own, and the reasoning before it follows it there.
    const [first, second] = completion.message.tool_calls!;
    expect(first.id).toBe('call_a');
    expect(second.id).not.toBe('call_a');
    expect(second.function.arguments).toBe('{}');
    expect(completion.message.content).toBeNull();
    expect(reasoningEntries(parts, completion.message.tool_calls!)).toEqual([
      {
        item: { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'enc1' },
        before: { type: 'function_call', id: 'fc_1', callId: 'call_a' },
      },
      {
        item: { type: 'reasoning', id: 'rs_2', summary: [], encrypted_content: 'enc2' },
        before: { type: 'function_call', id: 'fc_2', callId: second.id },
      },
    ]);
  });

  it('round-trips: the stored answer and its reasoning are sent back as the model wrote them', () => {
    const output = [
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'enc1' },
      {
        type: 'message',
        id: 'msg_1',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Done: refunded.', annotations: [] }],
      },
    ];
    const parts = readResponsesOutput(response(output));
    const completion = toCompletion(parts);
    expect(completion.message).toEqual({ role: 'assistant', content: 'Done: refunded.' });
    expect(completion.finishReason).toBe('stop');
    const stored = withStoredReasoning(completion.message, reasoningEntries(parts, []));
    expect(toInputItems([stored as Messages[number]])).toEqual(output);
  });

  it('keeps no reasoning that nothing followed, and reads an answer cut at max_output_tokens as length', () => {
    const parts = readResponsesOutput(
      response(
        [
          {
            type: 'message',
            id: 'msg_1',
            role: 'assistant',
            status: 'incomplete',
            content: [{ type: 'output_text', text: 'The refund polic', annotations: [] }],
          },
          { type: 'reasoning', id: 'rs_tail', summary: [], encrypted_content: 'enc' },
        ],
        { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
      ),
    );
    expect(parts.finishReason).toBe('length');
    expect(parts.reasoning).toEqual([]);
    expect(parts.content).toBe('The refund polic');
  });

  it('keeps a failed response that was billed as the answer: its text, a note saying why, no calls, no reasoning', () => {
    const failed = response(
      [
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'enc1' },
        { type: 'function_call', id: 'fc_1', call_id: 'call_a', name: 'refund_order', arguments: '{"order_' },
      ],
      { status: 'failed', error: { code: 'server_error', message: 'The model had an error.' } },
    );
    const stopped = stoppedReason(failed)!;
    expect(stopped).toEqual({ status: 'failed', code: 'server_error', message: 'The model had an error.' });
    const { parts } = stoppedParts(readResponsesOutput(failed), stopped);
    const completion = toCompletion(parts);
    expect(completion.message).toEqual({
      role: 'assistant',
      content:
        "[The model's response failed (server_error: The model had an error.); its usage was counted and it was not retried. Its 1 tool call(s) were not run. Send the message again to retry.]",
    });
    expect(completion.finishReason).toBe('failed');
    expect(completion.usage).toEqual({ promptTokens: 120, completionTokens: 30 });
    expect(parts.reasoning).toEqual([]);
    // Without usage nothing was billed: the call fails and is retried, as before.
    expect(stoppedReason({ ...failed, usage: undefined })).toBeUndefined();
  });

  it('keeps a content-filtered answer with a note after its text; an answer cut at max_output_tokens has none', () => {
    const message = (text: string) => ({
      type: 'message',
      id: 'msg_1',
      role: 'assistant',
      status: 'incomplete',
      content: [{ type: 'output_text', text, annotations: [] }],
    });
    const filtered = response([message('Here is how')], {
      status: 'incomplete',
      incomplete_details: { reason: 'content_filter' },
    });
    const { parts, note } = stoppedParts(readResponsesOutput(filtered), stoppedReason(filtered)!);
    expect(parts.finishReason).toBe('content_filter');
    expect(parts.content).toBe(`Here is how${note}`);
    expect(note).toBe(
      "\n\n[The model's response is incomplete: the provider's content filter stopped it (content_filter); what it wrote before is kept and its usage was counted. Rephrase the message and send it again to go on.]",
    );
    const cut = response([message('The refund polic')], {
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
    });
    expect(stoppedReason(cut)).toBeUndefined();
  });

  it('chooses the API: the call, else the worker, else Chat Completions', () => {
    expect(modelApiOf(undefined, undefined)).toBe('chat');
    expect(modelApiOf(undefined, 'responses')).toBe('responses');
    expect(modelApiOf('chat', 'responses')).toBe('chat');
  });

  it("reads the worker's API from OPENAI_API, and refuses any other value, here and in a conversation's input", () => {
    expect(loadConfig({}).openai.api).toBeUndefined();
    expect(loadConfig({ OPENAI_API: 'responses' }).openai.api).toBe('responses');
    expect(() => loadConfig({ OPENAI_API: 'assistants' })).toThrow(
      /OPENAI_API.*must be chat \(Chat Completions\) or responses/,
    );
    expect(describeInvalidInput({ model: { api: 'assistants' } })).toContain(
      'model.api must be "chat" (Chat Completions, the default) or "responses", got "assistants"',
    );
    expect(describeInvalidInput({ model: { api: 'responses' } })).toEqual([]);
  });
});
