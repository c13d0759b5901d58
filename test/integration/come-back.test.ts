import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { apiCaller, TEST_TOKENS, token } from '../support/api';
import { launchChromium } from '../support/browser';
import { exportHistoryFixture } from '../support/fixture-export';
import { startHarness, type Harness } from '../support/harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

// Coming back later, against a real worker process, dev server, PostgreSQL and the HTTP API: a conversation asked
// (through the API) to come back in a few seconds starts a turn then, once, with the note as its message, sent by the
// conversation itself; cancelled, it starts none. The model's own come_back_later call is held across a
// continue-as-new and a SIGKILL of the worker: the turn starts once, when the next worker runs.

const TOOLS = path.join(__dirname, '..', 'support', 'event-tools.ts');

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
const workers: WorkerProcess[] = [];
beforeAll(async () => {
  h = await startHarness({ worker: false });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS });
});
afterAll(async () => {
  for (const w of workers) await w.stop('SIGKILL');
  await api?.stop();
  await h?.stop();
});

const call = apiCaller(() => api.url);
const start = async (): Promise<WorkerProcess> => {
  const worker = await startWorkerProcess(h.workerEnv({ AGENT_TOOLS_MODULE: TOOLS }));
  workers.push(worker);
  return worker;
};
const userMessages = async (id: string) =>
  (await h.client.transcript(id)).flatMap((m) => (m.message.role === 'user' ? [m.message.content] : []));

describe('coming back later', () => {
  it('through the API: the turn starts at its time, once, sent by the conversation; a cancelled one never', async () => {
    if (workers.length === 0) await start();
    const id = h.newConversationId('come-back');
    h.model.enqueue({ content: 'Hello.' });
    const first = await h.client.sendMessage(id, 'Start', { sentBy: 'alice@example.com' });
    expect((await h.client.waitForTurn(id, first)).outcome).toBe('answered');

    const at = new Date(Date.now() + 10_000).toISOString();
    const asked = await call('POST', `/v1/conversations/${id}/come-backs`, token('a'), {
      note: 'Check whether the parcel arrived.',
      at,
    });
    expect(asked.status).toBe(202);
    expect(asked.json).toMatchObject({ conversationId: id, at, requestedBy: 'alice@example.com' });
    const cancelled = await call('POST', `/v1/conversations/${id}/come-backs`, token('a'), {
      note: 'This one is cancelled.',
      inMinutes: 0.05,
    });
    expect(cancelled.status).toBe(202);
    await expect.poll(async () => (await h.client.state(id)).comeBacks?.length ?? 0).toBe(2);
    const cancel = await call(
      'POST',
      `/v1/conversations/${id}/come-backs/${cancelled.json.comeBackId}/cancel`,
      token('a'),
    );
    expect(cancel.status).toBe(202);
    await expect
      .poll(async () => (await h.client.state(id)).comeBacks?.map((c) => c.note))
      .toEqual(['Check whether the parcel arrived.']);
    // The inbox's page of the conversation says when it comes back, and why.
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.goto(`${api.url}/inbox`);
      await page.fill('input[name=token]', token('c'));
      await page.click('button:has-text("Sign in")');
      await page.waitForSelector('[data-testid=subject]');
      await page.goto(`${api.url}/inbox/conversations/${encodeURIComponent(id)}`);
      expect(await page.textContent('[data-testid=come-back]')).toBe(
        `${at.replace('T', ' ').slice(0, 19)} UTC · Check whether the parcel arrived. (asked by alice@example.com)`,
      );
    } finally {
      await browser.close();
    }

    h.model.enqueue({ content: 'The parcel arrived.' });
    await expect.poll(async () => (await h.client.state(id)).recentTurns.length, { timeout: 30_000 }).toBe(2);
    const state = await h.client.state(id);
    expect(state.comeBacks).toBeUndefined();
    expect(state.recentTurns[1]).toMatchObject({ outcome: 'answered', requestedBy: [`conversation:${id}`] });
    expect(await userMessages(id)).toEqual(['Start', '[come back] Check whether the parcel arrived.']);
    // Neither the cancelled one nor a second start of the first comes later.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect((await h.client.state(id)).recentTurns).toHaveLength(2);
    await exportHistoryFixture(h.temporal, id, 'come-back');

    // Bad requests: both times, none, a time past, an unknown conversation, a token of the wrong role.
    const bad = async (body: unknown, who = token('a'), conversation = id) =>
      call('POST', `/v1/conversations/${conversation}/come-backs`, who, body);
    expect((await bad({ note: 'x', at, inMinutes: 1 })).json.error.message).toContain('exactly one of at');
    expect((await bad({ note: 'x' })).status).toBe(400);
    expect((await bad({ note: 'x', at: '2020-01-01T00:00:00Z' })).json.error.message).toContain('has passed');
    expect((await bad({ note: 'x', inMinutes: 1 }, token('a'), 'no-such-conversation')).status).toBe(404);
    expect((await bad({ note: 'x', inMinutes: 1 }, token('b'))).status).toBe(403);
    h.expectOnlyValidModelRequests();
  });

  it("the model's come_back_later is held across a continue-as-new and a worker killed before it is due; its turn starts once", async () => {
    if (workers.length === 0) await start();
    const id = h.newConversationId('come-back-model');
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_later', name: 'come_back_later', arguments: { note: 'Chase the refund.', in_minutes: 0.15 } },
        ],
      },
      { content: 'I will come back to it.' },
    );
    const first = await h.client.sendMessage(id, 'Remind yourself to chase the refund', {
      input: { continueAsNewAfterEvents: 10 },
    });
    expect((await h.client.waitForTurn(id, first)).outcome).toBe('answered');
    const tool = (await h.client.transcript(id)).find((m) => m.message.role === 'tool')!;
    expect(JSON.parse(tool.message.content as string)).toMatchObject({
      kind: 'come_back_scheduled',
      note: 'Chase the refund.',
    });
    // The run continued as new after the turn; the come-back went with it.
    await expect.poll(async () => (await h.client.state(id)).runs, { timeout: 30_000 }).toBe(2);
    const [held] = (await h.client.state(id)).comeBacks!;
    expect(held).toMatchObject({ note: 'Chase the refund.', requestedBy: 'model' });

    for (const w of workers.splice(0)) await w.stop('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(held.at) - Date.now() + 1_000)));
    h.model.enqueue({ content: 'Chased it.' });
    await start();
    await expect
      .poll(async () => (await userMessages(id)).filter((m) => m.startsWith('[come back]')), { timeout: 30_000 })
      .toEqual(['[come back] Chase the refund.']);
    await expect.poll(async () => (await h.client.state(id)).status, { timeout: 30_000 }).toBe('idle');
    expect((await h.client.state(id)).comeBacks).toBeUndefined();
    h.expectOnlyValidModelRequests();
  });
});
