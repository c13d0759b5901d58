import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

let h: Harness;
let current: WorkerProcess | undefined;

beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(async () => {
  await current?.stop('SIGKILL');
  await h?.stop();
});

const workerEnv = (): Record<string, string> => h.workerEnv({ OPENAI_MODEL: 'scripted-model' });

describe('worker process restarts', () => {
  it('the worker process is stopped and started between two turns and the conversation carries on', async () => {
    const id = h.newConversationId();
    current = await startWorkerProcess(workerEnv());
    h.model.enqueue({ toolCalls: [{ id: 'call_find_alan', name: 'find_customer', arguments: { query: 'Alan' } }] }, { content: 'Alan Turing is a customer.' });
    const first = await h.client.ask(id, 'Is Alan a customer?');
    expect(first.answer).toBe('Alan Turing is a customer.');

    expect(await current.stop('SIGTERM')).toBe(0);
    current = undefined;

    h.model.enqueue(
      { toolCalls: [{ id: 'call_orders_alan', name: 'list_orders', arguments: { customer_id: 'cus_alan' } }] },
      { content: 'Alan ordered an Enigma rotor set.' },
    );
    const messageId = await h.client.sendMessage(id, 'What did Alan order?');
    current = await startWorkerProcess(workerEnv());
    const turn = await h.client.waitForTurn(id, messageId);
    expect(turn.outcome).toBe('answered');

    const transcript = (await h.client.transcript(id)).map((m) => m.message);
    expect(transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user', 'assistant', 'tool', 'assistant']);
    expect(transcript[7]).toMatchObject({ content: 'Alan ordered an Enigma rotor set.' });
    expect(h.requestsFor('What did Alan order?')).toHaveLength(2);
    h.expectOnlyValidModelRequests();
    expect((await h.client.state(id)).transcriptRepairs).toBe(0);
  });
});
