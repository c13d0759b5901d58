import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';

import { startModelServer } from '../../src/testing';

describe('starting and closing the model server', () => {
  it('listens on 127.0.0.1 and gives a base URL ending in /v1', async () => {
    const server = await startModelServer();
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    } finally {
      await server.close();
    }
  });

  it('refuses to listen on an address that is not loopback', async () => {
    await expect(startModelServer({ host: '0.0.0.0' })).rejects.toThrow(/loopback/);
  });

  it('ends a hanging request when the server closes, without marking it aborted by the client', async () => {
    const server = await startModelServer();
    const client = new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 });
    server.enqueue({ kind: 'hang' });
    const pending = client.chat.completions
      .create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    const deadline = Date.now() + 2000;
    while (server.requests[0]?.reply === undefined && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(server.requests[0]?.reply).toEqual({ kind: 'hang' });

    await server.close();
    expect(await pending).toBeInstanceOf(OpenAI.APIConnectionError);
    expect(server.requests[0].aborted).toBe(false);
  });

  it('can be closed twice', async () => {
    const server = await startModelServer();
    await server.close();
    await expect(server.close()).resolves.toBeUndefined();
  });

  it('takes a responder and a dialect from its options', async () => {
    const server = await startModelServer({ dialect: 'deepseek', responder: () => ({ content: 'from options' }) });
    const client = new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 });
    try {
      const completion = await client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(completion.choices[0].message.content).toBe('from options');
      const outcome = await client.chat.completions
        .create({
          model: 'm',
          messages: [
            { role: 'user', content: 'hi' },
            {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'f', arguments: '{}' } }],
            },
          ],
        })
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      expect((outcome as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('invalid_request_error');
    } finally {
      await server.close();
    }
  });
});
