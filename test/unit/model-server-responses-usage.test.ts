import OpenAI from 'openai';
import type { ResponseInputItem, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { countTokens } from '../../src/common/tokens';
import { startModelServer, type ModelServer } from '../../src/testing';
import { SCRIPTED_IMAGE_TOKENS } from '../../src/testing/content-tokens';
import { countPromptTokens } from '../../src/testing/context-window';
import { countInputTokens } from '../../src/testing/responses-plan';
import { lookupTool } from '../support/responses-tools';

// What the scripted server bills: reasoning sent back and images as input, and the answers that did not finish.

let server: ModelServer;
let client: OpenAI;
beforeAll(async () => {
  server = await startModelServer();
  client = new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 });
});
afterAll(async () => {
  await server.close();
});

const thought = 'The user wants the weather in Oslo; I should call lookup with the city and read what it says. '.repeat(
  5,
);
const image = 'data:image/png;base64,' + 'iVBORw0KGgo'.repeat(500);

describe('the scripted server counts input as OpenAI bills it', () => {
  it('bills a reasoning item sent back as the reasoning it holds, which it reported as reasoning_tokens', async () => {
    server.enqueue({ reasoningContent: thought, toolCalls: [{ name: 'lookup', arguments: { city: 'Oslo' } }] });
    const first = await client.responses.create({
      model: 'gpt-test',
      input: [{ role: 'user', content: 'weather in Oslo?' }],
      tools: [lookupTool],
      store: false,
      include: ['reasoning.encrypted_content'],
    });
    const reasoningTokens = first.usage?.output_tokens_details.reasoning_tokens ?? 0;
    expect(reasoningTokens).toBe(countTokens(thought));
    expect(first.usage?.output_tokens).toBeGreaterThan(reasoningTokens);

    const call = first.output.find((i) => i.type === 'function_call')!;
    const tail: ResponseInputItem[] = [
      call as ResponseInputItem,
      { type: 'function_call_output', call_id: call.type === 'function_call' ? call.call_id : '', output: 'sunny' },
    ];
    const ask = async (input: ResponseInputItem[]) => {
      server.enqueue({ content: 'Sunny.' });
      const answer = await client.responses.create({
        model: 'gpt-test',
        input,
        tools: [lookupTool],
        store: false,
        include: ['reasoning.encrypted_content'],
      });
      return answer.usage?.input_tokens ?? 0;
    };
    const user: ResponseInputItem = { role: 'user', content: 'weather in Oslo?' };
    const withReasoning = await ask([user, ...(first.output as ResponseInputItem[]).slice(0, 1), ...tail]);
    const without = await ask([user, ...tail]);
    // The reasoning's own tokens and the item's framing (4): far more than its id and encrypted token's length.
    expect(withReasoning - without).toBe(reasoningTokens + 4);
    expect(server.invalidRequests()).toHaveLength(0);
  });

  it('counts an image part as 765 tokens (85 at detail low) in both APIs, and the text beside it', () => {
    const chat = (detail?: 'low' | 'auto') =>
      countPromptTokens({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what is this?' },
              { type: 'image_url', image_url: { url: image, ...(detail ? { detail } : {}) } },
            ],
          },
        ],
      });
    const chatText = countPromptTokens({ messages: [{ role: 'user', content: 'what is this?' }] });
    expect(chat()).toBe(chatText + SCRIPTED_IMAGE_TOKENS.auto);
    expect(chat('low')).toBe(chatText + 85);
    expect(SCRIPTED_IMAGE_TOKENS.auto).toBe(765);

    const responses = (detail: 'low' | 'auto' | 'high') =>
      countInputTokens({
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'what is this?' },
              { type: 'input_image', image_url: image, detail },
            ],
          },
        ],
      });
    const responsesText = countInputTokens({ input: [{ role: 'user', content: 'what is this?' }] });
    expect(responses('auto')).toBe(responsesText + 765);
    expect(responses('high')).toBe(responsesText + 765);
    expect(responses('low')).toBe(responsesText + 85);
  });

  it('answers the image request with that count as input_tokens', async () => {
    server.enqueue({ content: 'A picture.' });
    const answer = await client.responses.create({
      model: 'gpt-test',
      input: [{ role: 'user', content: [{ type: 'input_image', image_url: image, detail: 'auto' }] }],
    });
    expect(answer.usage?.input_tokens).toBe(3 + 4 + 765);
  });
});

describe('the scripted server answers responses that did not finish', () => {
  const failure = { code: 'server_error', message: 'The model had an error while generating.' };

  it('answers status failed with the error, what it wrote and the usage', async () => {
    server.enqueue({ content: 'Half an ans', responseError: failure });
    const answer = await client.responses.create({ model: 'gpt-test', input: 'hi' });
    expect(answer.status).toBe('failed');
    expect(answer.error).toEqual(failure);
    expect(answer.incomplete_details).toBeNull();
    expect(answer.completed_at).toBeNull();
    expect(answer.output[0]).toMatchObject({ type: 'message', status: 'incomplete' });
    expect(answer.output_text).toBe('Half an ans');
    expect(answer.usage?.input_tokens).toBeGreaterThan(0);
    expect(answer.usage?.output_tokens).toBeGreaterThan(0);
  });

  it('streams a failed response as response.failed carrying the error and usage', async () => {
    server.enqueue({ content: 'Half', responseError: failure });
    const stream = await client.responses.create({ model: 'gpt-test', input: 'hi', stream: true });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const last = events.at(-1)!;
    expect(last.type).toBe('response.failed');
    expect(events.some((e) => e.type === 'response.completed')).toBe(false);
    if (last.type !== 'response.failed') throw new Error('unreachable');
    expect(last.response).toMatchObject({ status: 'failed', error: failure });
    expect(last.response.usage?.total_tokens).toBeGreaterThan(0);
  });

  it('answers a content-filtered reply as incomplete for content_filter, streamed as response.incomplete', async () => {
    server.enqueue({ content: 'Some of it', finishReason: 'content_filter' });
    const answer = await client.responses.create({ model: 'gpt-test', input: 'hi' });
    expect(answer).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'content_filter' },
      error: null,
    });
    expect(answer.usage?.output_tokens).toBeGreaterThan(0);
    server.enqueue({ content: 'Some of it', finishReason: 'content_filter' });
    const stream = await client.responses.create({ model: 'gpt-test', input: 'hi', stream: true });
    let last: ResponseStreamEvent | undefined;
    for await (const event of stream) last = event;
    expect(last?.type).toBe('response.incomplete');
  });
});
