import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { verifyWebhook } from '../../src/client';
import { NOTIFICATION_TYPES, type NotificationEvent } from '../../src/contract/notifications';
import { enqueueNotification } from '../../src/db/outbox';
import { escalationPayload } from '../../src/db/escalations';
import { inTransaction } from '../../src/db/transaction';
import { backofficeTools } from '../../src/demo/tools';
import { approvalPolicy } from '../../src/policies/approval-policy';
import { tool } from '../../src/tools/tool';
import { apiCaller, TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';
import { startTestReceiver, type TestReceiver } from '../support/webhook-receiver';
import { webhookPayloadProblem } from '../support/webhook-schema';
import { exportHistoryFixture } from '../support/fixture-export';

// Webhooks about waiting calls against the real stack: a worker with two
// endpoints (real node:http receivers here), PostgreSQL with the outbox and
// its triggers, the HTTP API. A call that waits, is decided (by one person,
// or by two for an N-of-M rule), times out or is cancelled is announced,
// signed, in order per call, to each endpoint that wants the type; a
// receiver that refuses for a while gets everything once it recovers, in
// order, with failing deliveries listed meanwhile; an operator resends an
// event (API, CLI) and it comes again with its id. Every body matches
// docs/webhook-payload.schema.json.

const SECRET = randomBytes(32).toString('hex');
const AUDIT_SECRET = randomBytes(32).toString('hex');

/** A tool whose calls wait for two people (the rule below); it records whom it closed. */
const closed: string[] = [];
const closeAccount = tool({
  name: 'close_account',
  description: 'Close a customer account.',
  parameters: z.object({ customer_id: z.string() }),
  async execute({ customer_id }) {
    closed.push(customer_id);
    return { closed: customer_id };
  },
});

let ops: TestReceiver;
let audit: TestReceiver;
let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  ops = await startTestReceiver({ k1: SECRET });
  audit = await startTestReceiver({ a1: AUDIT_SECRET });
  h = await startHarness({
    tools: [...backofficeTools(), closeAccount],
    approvalPolicy: approvalPolicy([
      { name: 'close-needs-two', outcome: 'ask', tools: ['close_account'], approvals: 2 },
    ]),
    // Signed decisions for the rule's calls (through the API); unsigned ones (the client's) for the others.
    decisionTrust: { keys: [TEST_DECISION_KEY], requireSigned: false },
    notifications: {
      endpoints: [
        { name: 'ops', url: ops.url, keyId: 'k1', secret: SECRET },
        { name: 'audit', url: audit.url, keyId: 'a1', secret: AUDIT_SECRET, events: ['call.decided'] },
      ],
      // Test scale: retries within a second, failing after two attempts, a held request given up after 2 s.
      maxBackoffMs: 1_000,
      failingAfterAttempts: 2,
      pollEveryMs: 200,
      timeoutMs: 2_000,
    },
  });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS, decisions: { signingKey: TEST_DECISION_KEY } });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
  await ops?.close();
  await audit?.close();
});

const call = apiCaller(() => api.url);

/** The events `receiver` handled for the conversation `id`, in the order it handled them. */
const handledFor = (receiver: TestReceiver, id: string): NotificationEvent[] =>
  receiver.handled.filter((e) => e.conversationId === id);
/** Their types, each with the index of its call in the assistant message (`call-N`), or `turn N` for a turn's end. */
const typesFor = (receiver: TestReceiver, id: string): string[] =>
  handledFor(receiver, id).map((e) => `${e.type} ${e.call?.callKey.split('/').pop() ?? `turn ${e.turn?.number}`}`);

/** Every event written for the conversation, by call (a turn's end by its conversation), in the outbox's order. */
async function outboxOrder(id: string): Promise<Map<string, string[]>> {
  const { rows } = await h.pool.query<{ order_key: string; event_id: string }>(
    'SELECT order_key, event_id FROM durable_agent.notification_outbox WHERE conversation_id = $1 ORDER BY id',
    [id],
  );
  const byCall = new Map<string, string[]>();
  for (const r of rows) byCall.set(r.order_key, [...(byCall.get(r.order_key) ?? []), r.event_id]);
  return byCall;
}

/** Each call's events as `receiver` handled them, by call. */
function handledOrder(receiver: TestReceiver, id: string): Map<string, string[]> {
  const byCall = new Map<string, string[]>();
  for (const e of handledFor(receiver, id)) {
    const key = e.call?.callKey ?? e.conversationId;
    byCall.set(key, [...(byCall.get(key) ?? []), e.id]);
  }
  return byCall;
}

describe('webhooks about waiting calls', () => {
  it('a call that waits is announced, signed; its decision comes after it; an endpoint gets only the types it wants', async () => {
    const id = h.newConversationId('notify');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_refund',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 12_000, reason: 'broken' },
          },
        ],
      },
      { content: 'Refunded.' },
    );
    const messageId = await h.client.sendMessage(id, 'Refund Ada', { sentBy: 'alice@example.com' });
    await expect.poll(() => typesFor(ops, id)).toEqual(['call.waiting call-0']);
    const [waiting] = handledFor(ops, id);
    expect(waiting).toMatchObject({
      type: 'call.waiting',
      conversationId: id,
      rootConversationId: id,
      call: {
        callKey: `${id}/msg-1/call-0`,
        toolCallId: 'call_refund',
        toolName: 'issue_refund',
        arguments: { order_id: 'ord_1001', amount_cents: 12_000, reason: 'broken' },
        requestedBy: ['alice@example.com'],
        agentPath: [],
      },
    });

    // The delivery as it came: signed with k1 over the timestamp and the exact body, its id in a header.
    const delivery = ops.deliveries.find((d) => d.headers['agent-webhook-id'] === waiting.id)!;
    expect(delivery.headers['content-type']).toBe('application/json');
    const signature = String(delivery.headers['agent-webhook-signature']);
    expect(signature).toMatch(/^t=\d+,k1=[0-9a-f]{64}$/);
    expect(signature.startsWith(`t=${delivery.headers['agent-webhook-timestamp']},`)).toBe(true);
    expect(verifyWebhook({ secrets: { k1: SECRET }, body: delivery.body, headers: delivery.headers })).toMatchObject({
      ok: true,
      eventId: waiting.id,
      keyId: 'k1',
    });
    // Another secret, or a body changed by a byte, is refused.
    expect(verifyWebhook({ secrets: { k1: AUDIT_SECRET }, body: delivery.body, headers: delivery.headers })).toEqual({
      ok: false,
      problem: expect.stringContaining('does not match the body'),
    });
    expect(
      verifyWebhook({
        secrets: { k1: SECRET },
        body: delivery.body.replace('12000', '12001'),
        headers: delivery.headers,
      }).ok,
    ).toBe(false);

    await h.client.decide(id, { decision: 'approve', decidedBy: 'ops-lead', reason: 'checked the order' });
    expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
    await expect
      .poll(() => typesFor(ops, id))
      .toEqual(['call.waiting call-0', 'call.decided call-0', 'turn.ended_after_wait turn 1']);
    expect(handledFor(ops, id)[1]).toMatchObject({
      type: 'call.decided',
      call: { callKey: `${id}/msg-1/call-0`, toolName: 'issue_refund' },
      decision: {
        decision: 'approve',
        decidedBy: 'ops-lead',
        reason: 'checked the order',
        via: 'update',
        authenticated: false,
        callStillWaits: false,
      },
    });
    // The audit endpoint wants decisions only, signed with its own key.
    await expect.poll(() => typesFor(audit, id)).toEqual(['call.decided call-0']);
    expect(handledFor(audit, id)[0].id).toBe(handledFor(ops, id)[1].id);
    expect(String(audit.deliveries.find((d) => d.body.includes(id))!.headers['agent-webhook-signature'])).toMatch(
      /^t=\d+,a1=[0-9a-f]{64}$/,
    );

    // Operators see both delivered to ops, the decision to audit too.
    await expect
      .poll(async () => {
        const { json } = await call('GET', '/v1/notifications?status=delivered&limit=500', token('c'));
        return (json.notifications as any[])
          .filter((n) => n.conversationId === id)
          .map((n) => `${n.type} ${n.endpoint} ${n.status} ${n.attempts}`)
          .sort();
      })
      .toEqual([
        'call.decided audit delivered 1',
        'call.decided ops delivered 1',
        'call.waiting ops delivered 1',
        'turn.ended_after_wait ops delivered 1',
      ]);
    expect(await outboxOrder(id)).toEqual(handledOrder(ops, id));

    // The turn's end, after its call's events: what was decided on the call, and the start of the answer.
    const ended = handledFor(ops, id)[2];
    expect(ended.call).toBeUndefined();
    expect(ended.turn).toEqual({
      id: expect.any(String),
      number: 1,
      outcome: 'answered',
      requestedBy: ['alice@example.com'],
      answer: { seq: expect.any(Number), text: 'Refunded.', truncated: false },
      endedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      calls: [
        {
          callKey: `${id}/msg-1/call-0`,
          toolCallId: 'call_refund',
          toolName: 'issue_refund',
          decisions: [
            {
              decisionId: expect.any(String),
              decision: 'approve',
              decidedBy: 'ops-lead',
              decidedAt: handledFor(ops, id)[1].decision!.decidedAt,
              via: 'update',
            },
          ],
        },
      ],
    });
    const transcript = await h.client.transcript(id);
    expect(transcript.find((m) => m.seq === ended.turn!.answer!.seq)?.message).toMatchObject({
      role: 'assistant',
      content: 'Refunded.',
    });
    // A turn without a wait announces nothing.
    h.model.enqueue({ content: 'Nothing to approve.' });
    const plain = await h.client.sendMessage(id, 'Thanks');
    expect((await h.client.waitForTurn(id, plain)).outcome).toBe('answered');
    const { rows } = await h.pool.query(
      "SELECT count(*)::int AS n FROM durable_agent.notification_outbox WHERE conversation_id = $1 AND type = 'turn.ended_after_wait'",
      [id],
    );
    expect(rows[0].n).toBe(1);
    // One announcement in the history, in the turn that waited, under its patch.
    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    const announced = history.events!.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'durableAgent.announceTurnEnd',
    );
    expect(announced).toHaveLength(1);
    const patches = history.events!.flatMap((e) =>
      (e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads ?? []).map((p) =>
        Buffer.from(p.data ?? []).toString('utf8'),
      ),
    );
    expect(patches.filter((p) => p.includes('turn-end-notification'))).toHaveLength(1);
    await exportHistoryFixture(h.temporal, id, 'turn-ended-after-wait');
  });

  it('a receiver that refuses for a while gets every event once it recovers, each call in order; meanwhile they are listed failing', async () => {
    const id = h.newConversationId('notify-down');
    ops.mode = 'fail';
    try {
      h.model.enqueue(
        {
          toolCalls: [
            {
              id: 'call_a',
              name: 'issue_refund',
              arguments: { order_id: 'ord_2001', amount_cents: 11_000, reason: 'a' },
            },
            {
              id: 'call_b',
              name: 'issue_refund',
              arguments: { order_id: 'ord_2001', amount_cents: 16_000, reason: 'b' },
            },
          ],
        },
        { content: 'Both refunded.' },
      );
      const messageId = await h.client.sendMessage(id, 'Two refunds');
      await expect.poll(async () => (await h.client.state(id)).pendingApprovals.length).toBe(2);
      await h.client.decide(id, { decision: 'approve', toolCallId: 'call_a', decidedBy: 'ops-lead' });
      await h.client.decide(id, { decision: 'reject', toolCallId: 'call_b', decidedBy: 'ops-lead', reason: 'no' });
      expect((await h.client.waitForTurn(id, messageId)).outcome).toBe('answered');
      // Refused again and again: after two attempts each call's first event is listed failing, with the answer.
      await expect
        .poll(
          async () => {
            const { json } = await call('GET', '/v1/notifications?status=failing', token('c'));
            return (json.notifications as any[]).filter(
              (n) => n.conversationId === id && n.endpoint === 'ops' && n.type !== 'turn.ended_after_wait',
            );
          },
          { timeout: 30_000 },
        )
        .toEqual([
          expect.objectContaining({ type: 'call.waiting', status: 'failing', lastStatus: 500 }),
          expect.objectContaining({ type: 'call.waiting', status: 'failing', lastStatus: 500 }),
        ]);
      const failing = (await h.client.notifications({ status: 'failing' })).find((n) => n.conversationId === id)!;
      expect(failing.attempts).toBeGreaterThanOrEqual(2);
      expect(failing.lastError).toContain('answered 500: down for the test');
      expect(handledFor(ops, id)).toEqual([]);
    } finally {
      ops.mode = 'ok';
    }
    await expect.poll(() => handledFor(ops, id).length, { timeout: 30_000 }).toBe(5);
    // Each call's decision came after its wait, never before: a call's next event waits for the one before it.
    expect(await outboxOrder(id)).toEqual(handledOrder(ops, id));
    for (const callKey of [`${id}/msg-1/call-0`, `${id}/msg-1/call-1`]) {
      const attempts = ops.deliveries
        .map((d) => JSON.parse(d.body) as NotificationEvent)
        .filter((e) => e.call?.callKey === callKey);
      const firstDecided = attempts.findIndex((e) => e.type === 'call.decided');
      expect(attempts.slice(0, firstDecided).every((e) => e.type === 'call.waiting')).toBe(true);
    }
    expect(
      handledFor(ops, id).find((e) => e.type === 'call.decided' && e.call?.toolCallId === 'call_b')?.decision,
    ).toMatchObject({
      decision: 'reject',
      reason: 'no',
    });
    await expect
      .poll(async () => (await h.client.notifications({ status: 'pending' })).filter((n) => n.conversationId === id))
      .toEqual([]);
  });

  it('an operator resends an event through the API or the CLI: it comes again with its id, and is handled once', async () => {
    const id = h.newConversationId('notify-resend');
    h.model.enqueue({
      toolCalls: [
        { id: 'call_r', name: 'issue_refund', arguments: { order_id: 'ord_1001', amount_cents: 11_000, reason: 'r' } },
      ],
    });
    await h.client.sendMessage(id, 'Refund, to be resent');
    await expect.poll(() => typesFor(ops, id)).toEqual(['call.waiting call-0']);
    const [first] = handledFor(ops, id);
    const deliveriesOf = () => ops.deliveries.filter((d) => d.headers['agent-webhook-id'] === first.id);
    const before = deliveriesOf().length;

    const resent = await call('POST', `/v1/notifications/${first.id}/resend`, token('c'), { endpoint: 'ops' });
    expect(resent).toEqual({ status: 200, json: { eventId: first.id, endpoints: ['ops'] } });
    await expect.poll(() => deliveriesOf().length).toBe(before + 1);
    // The same body, id and all; the example receiver knows the id and does not handle it again.
    expect(deliveriesOf().at(-1)!.body).toBe(deliveriesOf()[0].body);
    await expect.poll(() => deliveriesOf().at(-1)!.status).toBe(200);
    expect(ops.handled.filter((e) => e.id === first.id)).toHaveLength(1);

    const unknown = await call('POST', '/v1/notifications/no-such-event/resend', token('c'), {});
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.message).toContain('No notification no-such-event is kept');
    expect((await call('POST', `/v1/notifications/${first.id}/resend`, token('b'), {})).status).toBe(403);

    const env = {
      TEMPORAL_ADDRESS: h.temporalAddress,
      DATABASE_URL: h.databaseUrl,
      TEMPORAL_TASK_QUEUE: h.taskQueue,
      AGENT_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'notify-cli-')),
    };
    const { stdout } = await runCli(['notifications', 'resend', first.id], env);
    expect(stdout).toContain(`Resent ${first.id} to ops: a running worker posts it again, with the same id.`);
    await expect.poll(() => deliveriesOf().length).toBe(before + 2);
    await expect
      .poll(async () => (await runCli(['notifications', '--status', 'delivered', '--limit', '500'], env)).stdout)
      .toContain(`${first.id}  call.waiting  ${first.call!.callKey}  to ops  delivered`);
    const missing = await runCli(['notifications', 'resend', 'no-such-event'], env).catch((e: { stderr: string }) => e);
    expect(missing.stderr).toContain('No notification no-such-event is kept');
  });

  it('a call that times out, and one whose turn is cancelled while it waits, are announced with how they ended', async () => {
    const timedOut = h.newConversationId('notify-timeout');
    h.model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_slow',
            name: 'issue_refund',
            arguments: { order_id: 'ord_1001', amount_cents: 20_000, reason: 'late' },
          },
        ],
      },
      { content: 'Nobody approved it in time.' },
    );
    const late = await h.client.sendMessage(timedOut, 'Refund, quickly', { input: { approvalTimeoutMs: 1_000 } });
    expect((await h.client.waitForTurn(timedOut, late)).outcome).toBe('answered');
    await expect
      .poll(() => typesFor(ops, timedOut))
      .toEqual(['call.waiting call-0', 'call.timed_out call-0', 'turn.ended_after_wait turn 1']);
    expect(handledFor(ops, timedOut)[1].outcome).toEqual({
      kind: 'approval_timeout',
      message: 'No decision arrived before the approval timeout; the call was not run.',
    });
    // The turn answered after its call timed out: the call had no decision.
    expect(handledFor(ops, timedOut)[2].turn).toMatchObject({
      outcome: 'answered',
      answer: { text: 'Nobody approved it in time.' },
      calls: [{ toolCallId: 'call_slow', toolName: 'issue_refund', decisions: [] }],
    });

    const cancelled = h.newConversationId('notify-cancel');
    h.model.enqueue({
      toolCalls: [
        {
          id: 'call_wait',
          name: 'issue_refund',
          arguments: { order_id: 'ord_2001', amount_cents: 30_000, reason: 'x' },
        },
      ],
    });
    const stopped = await h.client.sendMessage(cancelled, 'Refund, then never mind');
    await expect.poll(() => typesFor(ops, cancelled)).toEqual(['call.waiting call-0']);
    await h.client.cancelTurn(cancelled, 'never mind');
    expect((await h.client.waitForTurn(cancelled, stopped)).outcome).toBe('cancelled');
    await expect
      .poll(() => typesFor(ops, cancelled))
      .toEqual(['call.waiting call-0', 'call.cancelled call-0', 'turn.ended_after_wait turn 1']);
    expect(handledFor(ops, cancelled)[1].outcome).toMatchObject({ kind: 'cancelled' });
    // A stopped turn is announced too, with why it stopped and no answer.
    const stoppedTurn = handledFor(ops, cancelled)[2].turn!;
    expect(stoppedTurn).toMatchObject({ outcome: 'cancelled', error: expect.any(String), calls: [{ decisions: [] }] });
    expect(stoppedTurn.answer).toBeUndefined();
    expect(handledFor(audit, timedOut)).toEqual([]);
  });

  it('a call two people must approve: each approval is announced, the first with the call still waiting', async () => {
    const id = h.newConversationId('notify-two');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_close', name: 'close_account', arguments: { customer_id: 'cus_grace' } }] },
      { content: 'Closed after two approvals.' },
    );
    await call('POST', `/v1/conversations/${id}/messages`, token('a'), { text: 'Close Grace account' });
    await expect.poll(() => typesFor(ops, id)).toEqual(['call.waiting call-0']);
    expect(handledFor(ops, id)[0].call?.policy).toMatchObject({
      rule: 'close-needs-two',
      approvals: 2,
      approvedBy: [],
    });
    const callKey = handledFor(ops, id)[0].call!.callKey;
    const approve = (who: string) =>
      call('POST', `/v1/conversations/${id}/decisions`, who, { decision: 'approve', callKeys: [callKey] });
    expect((await approve(token('b'))).status).toBe(200);
    await expect.poll(() => typesFor(ops, id)).toEqual(['call.waiting call-0', 'call.decided call-0']);
    expect((await approve(token('d'))).status).toBe(200);
    await expect
      .poll(() => typesFor(ops, id))
      .toEqual(['call.waiting call-0', 'call.decided call-0', 'call.decided call-0', 'turn.ended_after_wait turn 1']);
    const [, firstApproval, secondApproval] = handledFor(ops, id);
    expect(firstApproval).toMatchObject({
      decision: { decidedBy: 'bob@example.com', callStillWaits: true, authenticated: true, rule: 'close-needs-two' },
      call: { policy: { approvedBy: ['bob@example.com'] } },
    });
    expect(secondApproval).toMatchObject({
      decision: { decidedBy: 'dave@example.com', callStillWaits: false, authenticated: true },
      call: { policy: { approvedBy: ['bob@example.com'] } },
    });
    await expect.poll(() => closed).toEqual(['cus_grace']);
    // The turn's end lists both approvals of its one call.
    expect(handledFor(ops, id)[3].turn?.calls).toEqual([
      expect.objectContaining({
        toolName: 'close_account',
        decisions: [
          expect.objectContaining({ decision: 'approve', decidedBy: 'bob@example.com', via: 'update' }),
          expect.objectContaining({ decision: 'approve', decidedBy: 'dave@example.com', via: 'update' }),
        ],
      }),
    ]);
  });

  it("an event an activity writes (an escalation's) is announced if its transaction commits, and never if it rolls back", async () => {
    const id = h.newConversationId('notify-escalate');
    h.model.enqueue({
      toolCalls: [
        { id: 'call_e', name: 'issue_refund', arguments: { order_id: 'ord_2001', amount_cents: 10_500, reason: 'e' } },
      ],
    });
    await h.client.sendMessage(id, 'Refund, escalated');
    await expect.poll(() => typesFor(ops, id)).toEqual(['call.waiting call-0']);
    const callKey = handledFor(ops, id)[0].call!.callKey;
    const escalate = (step: number) =>
      inTransaction(h.pool, async (client) => {
        await enqueueNotification(client, h.tables, {
          type: 'call.escalated',
          conversationId: id,
          callKey,
          payload: {
            escalation: escalationPayload({
              conversationId: id,
              callKey,
              toolCallId: 'call_e',
              toolName: 'issue_refund',
              rule: 'refunds',
              step,
              remind: false,
              addedGroups: ['leads'],
              groups: ['finance', 'leads'],
              escalatedAt: Date.now(),
              deadlineAt: Date.now() + 60_000,
            }),
          },
        });
        if (step === 1) throw new Error('the change it announces failed');
      });
    await expect(escalate(1)).rejects.toThrow('the change it announces failed');
    await escalate(2);
    await expect.poll(() => typesFor(ops, id)).toEqual(['call.waiting call-0', 'call.escalated call-0']);
    expect(handledFor(ops, id)[1]).toMatchObject({
      call: { callKey, toolName: 'issue_refund', requestedBy: [] },
      escalation: { step: 2, addedGroups: ['leads'] },
    });
    await expect(
      enqueueNotification(h.pool, h.tables, { type: 'call.escalated', conversationId: id, callKey, payload: {} }),
    ).rejects.toThrow('carries the step in payload.escalation');
  });

  it('every body any receiver got matches docs/webhook-payload.schema.json', () => {
    const bodies = [...ops.deliveries, ...audit.deliveries].map((d) => JSON.parse(d.body) as unknown);
    expect(bodies.length).toBeGreaterThan(10);
    expect(bodies.map(webhookPayloadProblem).filter(Boolean)).toEqual([]);
    // Every type the worker writes was delivered here at least once.
    expect(new Set(bodies.map((b) => (b as NotificationEvent).type))).toEqual(new Set(NOTIFICATION_TYPES));
  });
});
