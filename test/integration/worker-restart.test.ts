import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentClient, NoWorkerAnsweredError } from '../../src/client/client';
import { connectionOptions, loadTemporalConnection } from '../../src/app/temporal-connection';
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
    h.model.enqueue(
      { toolCalls: [{ id: 'call_find_alan', name: 'find_customer', arguments: { query: 'Alan' } }] },
      { content: 'Alan Turing is a customer.' },
    );
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
    expect(transcript.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(transcript[7]).toMatchObject({ content: 'Alan ordered an Enigma rotor set.' });
    expect(h.requestsFor('What did Alan order?')).toHaveLength(2);
    h.expectOnlyValidModelRequests();
    expect((await h.client.state(id)).transcriptRepairs).toBe(0);
  });

  it('waitForTurn keeps waiting while no worker answers its queries, and returns the turn once a worker runs it', async () => {
    // A client whose queries give up after 1 s: while no worker runs, each state query ends in NoWorkerAnsweredError.
    const impatient = await AgentClient.connect({
      temporalAddress: h.temporalAddress,
      ...connectionOptions(loadTemporalConnection(h.temporalEnv)),
      databaseUrl: h.databaseUrl,
      taskQueue: h.taskQueue,
      queryTimeoutMs: 1_000,
    });
    try {
      // The worker the test before left running would answer; this one starts its own.
      await current?.stop('SIGTERM');
      const id = h.newConversationId('patient');
      current = await startWorkerProcess(workerEnv());
      h.model.enqueue({ content: 'First answer.' });
      expect((await h.client.ask(id, 'Hello')).answer).toBe('First answer.');
      expect(await current.stop('SIGTERM')).toBe(0);
      current = undefined;

      h.model.enqueue({ content: 'Answered once a worker was back.' });
      const messageId = await h.client.sendMessage(id, 'Anyone there?');
      await expect(impatient.state(id)).rejects.toBeInstanceOf(NoWorkerAnsweredError);
      let settled = false;
      const waiting = impatient.waitForTurn(id, messageId, 60_000).finally(() => (settled = true));
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(settled).toBe(false);
      current = await startWorkerProcess(workerEnv());
      const turn = await waiting;
      expect(turn.outcome).toBe('answered');
      expect((await h.client.transcript(id)).at(-1)?.message).toMatchObject({
        role: 'assistant',
        content: 'Answered once a worker was back.',
      });
      h.expectOnlyValidModelRequests();
    } finally {
      await impatient.close();
    }
  });
});
