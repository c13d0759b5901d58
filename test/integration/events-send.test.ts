import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { EventDeliveryError, InvalidEventError } from '../../src/client/client';
import { EVENT_LIMITS, type DeliveredEvent } from '../../src/contract/events';
import { sendEvent } from '../../src/db/events';
import { apiCaller, TEST_TOKENS, token } from '../support/api';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';

// Sending events (docs/waiting-for-events.md, "Sending events") against the
// real stack: PostgreSQL with the events' tables, the dev server, a worker,
// the HTTP API and the CLI. An event no call waits for is kept; one a call
// waits for (a row of event_waits, written here as registerEventWait writes
// it) is recorded as delivered to that call and signalled to its
// conversation, whose history then holds the `event` signal with the
// payload. The event id makes a retry safe. Only the events role sends.

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  h = await startHarness();
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

const call = apiCaller(() => api.url);
const GATEWAY = token('g');
let keys = 0;
/** A key no other test uses. */
const freshKey = (prefix = 'ord') => `${prefix}-${process.pid}-${++keys}-${Date.now()}`;

/** The rows of `agent_events` for a key, oldest first. */
async function eventRows(key: string) {
  const { rows } = await h.pool.query(
    `SELECT event_id, name, key, payload, sent_by, sent_at, delivered_to, expires_at, taken_by
       FROM durable_agent.agent_events WHERE key = $1 ORDER BY sent_at, event_id`,
    [key],
  );
  return rows;
}

/** A conversation that runs (one answered turn; its workflow waits for the next message). */
async function runningConversation(prefix: string): Promise<string> {
  const id = h.newConversationId(prefix);
  h.model.enqueue({ content: 'Noted.' });
  const messageId = await h.client.sendMessage(id, 'Tell me when the payment settles.');
  expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
  return id;
}

/** Lists a call of `conversationId` as waiting for `name` and `key`, as `registerEventWait` does. */
async function insertWait(
  conversationId: string,
  name: string,
  key: string,
  deadline = "now() + interval '1 hour'",
): Promise<string> {
  const callKey = `${conversationId}/msg-1/call-0`;
  await h.pool.query(
    `INSERT INTO durable_agent.event_waits
       (conversation_id, call_key, tool_call_id, assistant_seq, tool_name, name, key, deadline_at)
     VALUES ($1, $2, 'call_wait', 1, 'wait_for_payment', $3, $4, ${deadline})`,
    [conversationId, callKey, name, key],
  );
  return callKey;
}

/** The `event` signals in the conversation's history, as sent. */
async function eventSignals(conversationId: string): Promise<DeliveredEvent[]> {
  const history = await h.temporal.workflow.getHandle(conversationId).fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const signaled = e.workflowExecutionSignaledEventAttributes;
    if (signaled?.signalName !== 'event') return [];
    return [defaultPayloadConverter.fromPayload<DeliveredEvent>(signaled.input!.payloads![0])];
  });
}

describe('sending events', () => {
  it('an event no call waits for is kept for the first wait, until keepMs from now; with keepMs 0 it is not kept', async () => {
    const key = freshKey();
    const sent = await call('POST', '/v1/events', GATEWAY, {
      name: 'payment.settled',
      key,
      payload: { amount: 1500 },
      keepMs: 60_000,
    });
    expect(sent.status).toBe(202);
    expect(sent.json).toEqual({
      eventId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      sentAt: expect.any(String),
      deliveredTo: [],
      kept: true,
      keptUntil: expect.any(String),
    });
    expect(Date.parse(sent.json.keptUntil) - Date.parse(sent.json.sentAt)).toBe(60_000);
    const [row] = await eventRows(key);
    expect(row).toMatchObject({
      event_id: sent.json.eventId,
      name: 'payment.settled',
      payload: { amount: 1500 },
      sent_by: 'gateway@example.com',
      delivered_to: null,
      taken_by: null,
    });
    expect(row.expires_at.toISOString()).toBe(sent.json.keptUntil);

    // Kept 24 hours unless the sender says otherwise.
    const byDefault = await call('POST', '/v1/events', GATEWAY, { name: 'payment.settled', key: freshKey() });
    expect(Date.parse(byDefault.json.keptUntil) - Date.parse(byDefault.json.sentAt)).toBe(EVENT_LIMITS.defaultKeepMs);

    const notKeptKey = freshKey();
    const notKept = await call('POST', '/v1/events', GATEWAY, { name: 'payment.settled', key: notKeptKey, keepMs: 0 });
    expect(notKept.status).toBe(202);
    expect(notKept.json).toEqual({
      eventId: expect.any(String),
      sentAt: expect.any(String),
      deliveredTo: [],
      kept: false,
    });
    expect(await eventRows(notKeptKey)).toEqual([
      expect.objectContaining({ delivered_to: [], expires_at: null, payload: null }),
    ]);
  });

  it('an event a call waits for is recorded as delivered to it and signalled to its conversation, payload and sender with it; a second one is kept for the next wait', async () => {
    const id = await runningConversation('event-routed');
    const key = freshKey();
    const callKey = await insertWait(id, 'payment.settled', key);
    const sent = await call('POST', '/v1/events', GATEWAY, {
      eventId: `evt-${key}`,
      name: 'payment.settled',
      key,
      payload: { amount: 1500, currency: 'EUR' },
    });
    expect(sent.status).toBe(202);
    expect(sent.json).toEqual({
      eventId: `evt-${key}`,
      sentAt: expect.any(String),
      deliveredTo: [{ conversationId: id, callKey }],
      kept: false,
    });
    expect(await eventRows(key)).toEqual([
      expect.objectContaining({ delivered_to: [{ conversationId: id, callKey }], expires_at: null }),
    ]);
    await expect
      .poll(() => eventSignals(id))
      .toEqual([
        {
          eventId: `evt-${key}`,
          name: 'payment.settled',
          key,
          payload: { amount: 1500, currency: 'EUR' },
          sentBy: 'gateway@example.com',
          sentAt: sent.json.sentAt,
          callKey,
        },
      ]);

    // The wait took an event already: the next one with its name and key waits for the next wait.
    const second = await call('POST', '/v1/events', GATEWAY, { name: 'payment.settled', key });
    expect(second.json).toMatchObject({ deliveredTo: [], kept: true });
    expect(await eventSignals(id)).toHaveLength(1);

    // A wait past its deadline takes nothing.
    const lateKey = freshKey();
    const late = await runningConversation('event-late');
    await insertWait(late, 'payment.settled', lateKey, "now() - interval '1 second'");
    expect((await call('POST', '/v1/events', GATEWAY, { name: 'payment.settled', key: lateKey })).json).toMatchObject({
      deliveredTo: [],
      kept: true,
    });
  });

  it('sending the same eventId again is a retry: nothing new is recorded, it is delivered again, and the answer is the same; another event under that id is refused', async () => {
    const id = await runningConversation('event-retry');
    const key = freshKey();
    const callKey = await insertWait(id, 'parcel.delivered', key);
    const body = { eventId: `retry-${key}`, name: 'parcel.delivered', key, payload: { signedBy: 'J. Doe' } };
    const first = await call('POST', '/v1/events', GATEWAY, body);
    expect(first.status).toBe(202);
    expect(first.json.deliveredTo).toEqual([{ conversationId: id, callKey }]);
    // The same JSON with its keys in another order is the same payload.
    const again = await call('POST', '/v1/events', GATEWAY, {
      payload: body.payload,
      key,
      name: body.name,
      eventId: body.eventId,
    });
    expect(again).toEqual(first);
    // So is a retry through the client, whoever sends it.
    expect(await h.client.sendEvent(body)).toEqual(first.json);
    expect(await eventRows(key)).toHaveLength(1);
    await expect
      .poll(async () => (await eventSignals(id)).map((e) => e.eventId))
      .toEqual([body.eventId, body.eventId, body.eventId]);

    const otherPayload = await call('POST', '/v1/events', GATEWAY, { ...body, payload: { signedBy: 'someone else' } });
    expect(otherPayload.status).toBe(409);
    expect(otherPayload.json.error.code).toBe('event_id_conflict');
    expect(otherPayload.json.error.message).toMatch(
      new RegExp(
        `^Event ${body.eventId} was sent at .* with another payload: an event id names one event\\..*Nothing was sent\\.$`,
      ),
    );
    const otherKey = await call('POST', '/v1/events', GATEWAY, { ...body, key: `${key}-2` });
    expect(otherKey.status).toBe(409);
    expect(otherKey.json.error.message).toContain(`the key "${key}" (not "${key}-2")`);
    expect(await eventRows(key)).toHaveLength(1);
    expect(await eventRows(`${key}-2`)).toHaveLength(0);

    // Sent twice at once: one row, one answer; under two keys at once (two locks): one is sent, the other refused.
    const twiceKey = freshKey();
    const twice = { eventId: `twice-${twiceKey}`, name: 'parcel.delivered', key: twiceKey };
    const [a, b] = await Promise.all([
      call('POST', '/v1/events', GATEWAY, twice),
      call('POST', '/v1/events', GATEWAY, twice),
    ]);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(a.json).toEqual(b.json);
    expect(await eventRows(twiceKey)).toHaveLength(1);
    const racing = await Promise.all(
      [1, 2].map((n) =>
        call('POST', '/v1/events', GATEWAY, { ...twice, eventId: `race-${twiceKey}`, key: `${twiceKey}-${n}` }),
      ),
    );
    expect(racing.map((r) => r.status).sort()).toEqual([202, 409]);
    expect(racing.find((r) => r.status === 409)!.json.error.code).toBe('event_id_conflict');
  });

  it('a call whose conversation no longer runs is skipped and reported; the others get the event', async () => {
    const id = await runningConversation('event-some');
    const key = freshKey();
    const running = await insertWait(id, 'payment.settled', key);
    const gone = await insertWait(h.newConversationId('event-gone'), 'payment.settled', key);
    const sent = await h.client.sendEvent({ name: 'payment.settled', key, payload: 'settled' });
    expect(sent.deliveredTo.map((t) => t.callKey)).toEqual([running, gone]);
    expect(sent.notRunning?.map((t) => t.callKey)).toEqual([gone]);
    await expect.poll(async () => (await eventSignals(id)).map((e) => e.payload)).toEqual(['settled']);
  });

  it('when a signal fails, the event stays recorded, the error says so, and sending it again with its id delivers it', async () => {
    const id = await runningConversation('event-unsignalled');
    const key = freshKey();
    const callKey = await insertWait(id, 'payment.settled', key);
    const event = { eventId: `flaky-${key}`, name: 'payment.settled', key, payload: { amount: 7 } };
    const unreachable = async () => {
      throw new Error('14 UNAVAILABLE: connection refused');
    };
    const failed = await sendEvent(h.pool, unreachable, h.tables, event).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(EventDeliveryError);
    expect((failed as Error).message).toBe(
      `Event ${event.eventId} is recorded and routed to 1 waiting call, but signalling conversation ${id} failed: ` +
        `14 UNAVAILABLE: connection refused. Send it again with the same eventId (${event.eventId}) to deliver it: a retry is safe, no call gets it twice.`,
    );
    expect((failed as EventDeliveryError).failed).toEqual([{ conversationId: id, callKey }]);
    expect(await eventRows(key)).toEqual([
      expect.objectContaining({ delivered_to: [{ conversationId: id, callKey }] }),
    ]);
    expect(await eventSignals(id)).toEqual([]);

    expect((await h.client.sendEvent(event)).deliveredTo).toEqual([{ conversationId: id, callKey }]);
    await expect.poll(async () => (await eventSignals(id)).map((e) => e.payload)).toEqual([{ amount: 7 }]);
  });

  it('only the events role sends events: 401 without a token, 403 for requesters, approvers and operators', async () => {
    const key = freshKey();
    const body = { name: 'payment.settled', key };
    const none = await call('POST', '/v1/events', undefined, body);
    expect(none.status).toBe(401);
    expect(none.json.error.code).toBe('unauthorized');
    for (const [who, subject] of [
      [token('a'), 'alice@example.com'],
      [token('b'), 'bob@example.com'],
      [token('c'), 'carol@example.com'],
    ]) {
      const refused = await call('POST', '/v1/events', who, body);
      expect(refused.status).toBe(403);
      expect(refused.json.error).toEqual({
        code: 'forbidden',
        message: expect.stringMatching(new RegExp(`^This needs one of the roles events; the token of ${subject} has `)),
      });
    }
    expect(await eventRows(key)).toEqual([]);
  });

  it('an event that cannot be sent is refused with 400 saying what is wrong and the limit, and nothing is recorded', async () => {
    const key = freshKey();
    const refusals: [body: Record<string, unknown>, message: RegExp][] = [
      [{ name: 'payment settled', key }, /name may hold letters, digits and \. _ : - only/],
      [{ name: 'n'.repeat(201), key }, /name must be at most 200 characters/],
      [{ name: 'payment.settled' }, /key/],
      [{ name: 'payment.settled', key: 'k'.repeat(501) }, /key must be 1 to 500 characters long, got 501/],
      [{ name: 'payment.settled', key: 'ord\u00001' }, /key contains U\+0000 \(NUL\) at offset 3/],
      [
        { name: 'payment.settled', key, payload: { blob: 'x'.repeat(70_000) } },
        /The event's payload is 70011 bytes as JSON; at most 65536\. Send a reference to larger data instead\. Nothing was sent\./,
      ],
      [{ name: 'payment.settled', key, keepMs: EVENT_LIMITS.maxKeepMs + 1 }, /keepMs must be from 0 to 2592000000/],
      [{ name: 'payment.settled', key, keepMs: -1 }, /keepMs must be from 0 to 2592000000/],
      [{ name: 'payment.settled', key, keepMs: 1.5 }, /keepMs must be a whole number of milliseconds/],
      [{ name: 'payment.settled', key, eventId: 'e'.repeat(201) }, /eventId must be 1 to 200 characters long, got 201/],
      [{ name: 'payment.settled', key, sentBy: 'mallory' }, /sentBy/],
    ];
    for (const [body, message] of refusals) {
      const refused = await call('POST', '/v1/events', GATEWAY, body);
      expect(refused.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(refused.json.error.code).toBe('invalid_request');
      expect(refused.json.error.message).toMatch(message);
    }
    expect(await eventRows(key)).toEqual([]);

    // The client says the same, keepMs included.
    await expect(
      h.client.sendEvent({ name: 'payment.settled', key }, { keepMs: EVENT_LIMITS.maxKeepMs + 1 }),
    ).rejects.toThrow(
      new InvalidEventError(
        'keepMs must be a whole number of milliseconds from 0 (not kept) to 2592000000 (30 days); got 2592000001. Nothing was sent.',
      ),
    );
    // What PostgreSQL cannot store in a payload becomes U+FFFD, as in tool results.
    const stored = await call('POST', '/v1/events', GATEWAY, {
      name: 'payment.settled',
      key,
      payload: { note: 'a\u0000b' },
    });
    expect(stored.status).toBe(202);
    expect((await eventRows(key))[0].payload).toEqual({ note: 'a\uFFFDb' });
  });

  it('the CLI sends events through the API with an events token, and directly with the client without one', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'events-cli-'));
    const direct = {
      ...h.temporalEnv,
      TEMPORAL_NAMESPACE: h.namespace,
      TEMPORAL_TASK_QUEUE: h.taskQueue,
      DATABASE_URL: h.databaseUrl,
      AGENT_DATA_DIR: dataDir,
    };
    const throughApi = { ...direct, AGENT_API_URL: api.url, AGENT_API_TOKEN: GATEWAY };
    const id = await runningConversation('event-cli');
    const key = freshKey();
    const callKey = await insertWait(id, 'payment.settled', key);

    const routed = await runCli(
      ['events', 'send', 'payment.settled', key, '{"amount": 1500}', '--id', `cli-${key}`],
      throughApi,
    );
    expect(routed.stdout).toBe(
      `Event cli-${key} (payment.settled ${key}) delivered to ${callKey} in conversation ${id}.\n`,
    );
    expect(await eventRows(key)).toEqual([
      expect.objectContaining({ event_id: `cli-${key}`, sent_by: 'gateway@example.com', payload: { amount: 1500 } }),
    ]);
    await expect.poll(async () => (await eventSignals(id)).map((e) => e.payload)).toEqual([{ amount: 1500 }]);

    const keptKey = freshKey();
    const kept = await runCli(['events', 'send', 'payment.settled', keptKey, '--keep', '60000'], throughApi);
    const [keptRow] = await eventRows(keptKey);
    expect(kept.stdout).toBe(
      `Event ${keptRow.event_id} (payment.settled ${keptKey}) is kept until ${keptRow.expires_at.toISOString()}: no call waits for it yet; the first one to wait for it takes it.\n`,
    );

    const directKey = freshKey();
    const sentDirectly = await runCli(
      ['events', 'send', 'payment.settled', directKey, '"settled"', '--keep', '0'],
      direct,
    );
    expect(sentDirectly.stdout).toMatch(/reached no call: none waits for it, and it is not kept \(--keep 0\)\.\n$/);
    expect(await eventRows(directKey)).toEqual([expect.objectContaining({ payload: 'settled', sent_by: null })]);

    const failure = (err: unknown) => (err as { stderr: string }).stderr;
    const badJson = await runCli(['events', 'send', 'payment.settled', freshKey(), '{amount'], direct).catch(failure);
    expect(badJson).toMatch(/^error: The payload must be JSON, e.g\. '\{"amount": 1500\}'/);
    const requester = await runCli(['events', 'send', 'payment.settled', freshKey()], {
      ...throughApi,
      AGENT_API_TOKEN: token('a'),
    }).catch(failure);
    expect(requester).toMatch(
      /This needs one of the roles events; the token of alice@example\.com has requester\. \(forbidden\)/,
    );
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
});
