import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ScheduleAlreadyRunning, ScheduleNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { ScheduleOptionsError } from '../../src/schedules/options';
import type { ScriptedReply } from '../../src/testing';
import { apiCaller, TEST_DECISION_KEY, TEST_TOKENS, token } from '../support/api';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';

// Conversations on a schedule, against the real dev server, worker, PostgreSQL and HTTP API: each run of a schedule
// is a conversation of its own that takes the schedule's message, sent by schedule:<id>, answers it and ends; paused,
// nothing runs; under overlap skip, no run starts while a run's call waits for a person, and the schedule runs again
// once that conversation ends. Timings are never asserted: everything is polled with generous timeouts.

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let env: Record<string, string>;
const call = apiCaller(() => api.url);
const created: string[] = [];

beforeAll(async () => {
  h = await startHarness({ decisionTrust: { keys: [TEST_DECISION_KEY] } });
  // A message that asks for a refund gets a call of issue_refund over the approval limit (100.00; ord_1001 has 129.00
  // left to refund); every other is answered.
  h.model.setResponder((request): ScriptedReply => {
    const messages = (request.body as { messages?: { role: string; content?: unknown }[] }).messages ?? [];
    const last = messages.at(-1);
    if (last?.role === 'user' && typeof last.content === 'string' && last.content.includes('refund'))
      return {
        toolCalls: [
          { name: 'issue_refund', arguments: { order_id: 'ord_1001', amount_cents: 11_000, reason: 'scheduled' } },
        ],
      };
    return { content: last?.role === 'tool' ? 'Refund done.' : 'Report sent.' };
  });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS, decisions: { signingKey: TEST_DECISION_KEY } });
  env = {
    TEMPORAL_ADDRESS: h.temporalAddress,
    DATABASE_URL: h.databaseUrl,
    TEMPORAL_TASK_QUEUE: h.taskQueue,
    AGENT_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'schedules-')),
  };
});
afterAll(async () => {
  for (const id of created) await h?.client.schedules.delete(id).catch(() => undefined);
  await api?.stop();
  await h?.stop();
});

/** A fresh schedule id, deleted after the file. */
function scheduleId(prefix: string): string {
  const id = h.newConversationId(prefix);
  created.push(id);
  return id;
}

/** The conversations the schedule has started so far (its recent runs). */
async function runsOf(id: string): Promise<string[]> {
  return (await h.client.schedules.describe(id)).recentRuns.map((r) => r.conversationId);
}

/** Whether the conversation's workflow has completed. */
async function completed(conversationId: string): Promise<boolean> {
  return (await h.temporal.workflow.getHandle(conversationId).describe()).status.name === 'COMPLETED';
}

/** Expects the conversation to have answered the schedule's message, sent by the schedule, and ended. */
async function expectAnsweredRun(id: string, conversationId: string, text: string): Promise<void> {
  await expect.poll(() => completed(conversationId), { timeout: 30_000, interval: 250 }).toBe(true);
  const state = await h.client.state(conversationId);
  expect(state.recentTurns.map((t) => [t.outcome, t.requestedBy])).toEqual([['answered', [`schedule:${id}`]]]);
  const user = (await h.client.transcript(conversationId)).map((m) => m.message).filter((m) => m.role === 'user');
  expect(user.map((m) => m.content)).toEqual([text]);
}

describe('a schedule', () => {
  it('every 5 s runs three turns: three conversations, each with its message sent by schedule:<id>, answered and ended', async () => {
    const id = scheduleId('every5');
    const details = await h.client.schedules.create({ scheduleId: id, text: 'Send the daily report', every: '5s' });
    expect(details).toMatchObject({ scheduleId: id, overlap: 'skip', paused: false, timezone: 'UTC' });
    expect(details.intervals).toEqual([{ everyMs: 5_000, offsetMs: 0 }]);
    await expect
      .poll(async () => (await runsOf(id)).length, { timeout: 60_000, interval: 500 })
      .toBeGreaterThanOrEqual(3);
    await h.client.schedules.pause(id, 'test over');
    const runs = (await runsOf(id)).slice(0, 3);
    expect(new Set(runs).size).toBe(3);
    for (const conversationId of runs) {
      expect(conversationId.startsWith(`${id}-`)).toBe(true);
      await expectAnsweredRun(id, conversationId, 'Send the daily report');
    }
  }, 120_000);

  it('paused, runs none; triggered, runs once; resumed, runs on its own', async () => {
    const id = scheduleId('paused');
    const details = await h.client.schedules.create({
      scheduleId: id,
      text: 'Check the queue',
      every: 2_000,
      paused: true,
      note: 'not yet',
    });
    expect(details).toMatchObject({ paused: true, note: 'not yet' });
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    expect(await runsOf(id)).toEqual([]);

    await h.client.schedules.trigger(id);
    await expect.poll(async () => (await runsOf(id)).length, { timeout: 30_000, interval: 250 }).toBe(1);
    await expectAnsweredRun(id, (await runsOf(id))[0], 'Check the queue');
    expect((await h.client.schedules.describe(id)).paused).toBe(true);

    await h.client.schedules.resume(id);
    expect((await h.client.schedules.describe(id)).paused).toBe(false);
    await expect.poll(async () => (await runsOf(id)).length, { timeout: 30_000, interval: 250 }).toBeGreaterThan(1);
    await h.client.schedules.delete(id);
    await expect(h.client.schedules.describe(id)).rejects.toBeInstanceOf(ScheduleNotFoundError);
  }, 120_000);

  it('under overlap skip, no run starts while a run waits for approval; approved, it completes and the schedule runs again', async () => {
    const id = scheduleId('overlap');
    await h.client.schedules.create({ scheduleId: id, text: 'Please refund ord_1001', every: '2s' });
    await expect.poll(async () => (await runsOf(id)).length, { timeout: 30_000, interval: 250 }).toBe(1);
    const [first] = await runsOf(id);
    await expect
      .poll(async () => (await h.client.waitingCalls({ conversationId: first })).calls, { timeout: 30_000 })
      .toHaveLength(1);
    const [waiting] = (await h.client.waitingCalls({ conversationId: first })).calls;
    expect(waiting).toMatchObject({ toolName: 'issue_refund', requestedBy: [`schedule:${id}`] });

    // Runs fall due every 2 s meanwhile: each is skipped, and no second conversation starts.
    await expect
      .poll(async () => (await h.client.schedules.describe(id)).runsSkippedForOverlap, { timeout: 30_000 })
      .toBeGreaterThanOrEqual(2);
    const during = await h.client.schedules.describe(id);
    expect(during.recentRuns.map((r) => [r.conversationId, r.running])).toEqual([[first, true]]);
    expect(during.runningConversations).toEqual([first]);

    // Any approver may decide it: the schedule, not a person, asked for it (here bob, through the API).
    const decided = await call('POST', `/v1/conversations/${encodeURIComponent(first)}/decisions`, token('b'), {
      decision: 'approve',
      callKeys: [waiting.callKey],
    });
    expect(decided.status).toBe(200);
    await expect.poll(() => completed(first), { timeout: 30_000, interval: 250 }).toBe(true);
    const tool = (await h.client.transcript(first)).map((m) => m.message).find((m) => m.role === 'tool');
    expect(JSON.parse(String(tool?.content))).toMatchObject({ order_id: 'ord_1001' });
    await expect.poll(async () => (await runsOf(id)).length, { timeout: 30_000, interval: 250 }).toBeGreaterThan(1);
    await h.client.schedules.pause(id);
  }, 120_000);

  it('the client refuses a bad cron, an unknown time zone, a taken id and an unknown schedule, each saying which', async () => {
    const id = scheduleId('errors');
    await expect(h.client.schedules.create({ scheduleId: id, text: 'x', cron: '61 * * * *' })).rejects.toThrow(
      ScheduleOptionsError,
    );
    await expect(h.client.schedules.create({ scheduleId: id, text: 'x', cron: '61 * * * *' })).rejects.toThrow(
      /Minute is not in range/,
    );
    await expect(
      h.client.schedules.create({ scheduleId: id, text: 'x', cron: '0 9 * * *', timezone: 'Mars/Olympus' }),
    ).rejects.toThrow(/unknown time zone/);
    await expect(h.client.schedules.create({ scheduleId: id, text: 'x' })).rejects.toThrow(/cron.*or an interval/);
    await expect(
      h.client.schedules.create({ scheduleId: id, text: 'x', every: '1s', input: { maxSteps: -1 } }),
    ).rejects.toThrow(/maxSteps/);
    await h.client.schedules.create({
      scheduleId: id,
      text: 'x',
      cron: '0 9 * * MON-FRI',
      timezone: 'Europe/Berlin',
      paused: true,
    });
    await expect(h.client.schedules.create({ scheduleId: id, text: 'x', every: '1h' })).rejects.toBeInstanceOf(
      ScheduleAlreadyRunning,
    );
    await expect(h.client.schedules.pause('no-such-schedule')).rejects.toBeInstanceOf(ScheduleNotFoundError);
  });
});

describe('the HTTP API and the CLI', () => {
  it('an operator creates, lists, shows, pauses, triggers and deletes a schedule; a requester is refused', async () => {
    const id = scheduleId('api');
    const body = { scheduleId: id, text: 'Weekly digest', cron: ['0 9 * * MON'], timezone: 'Europe/Berlin' };
    expect((await call('POST', '/v1/schedules', token('a'), body)).status).toBe(403);
    expect((await call('POST', '/v1/schedules', token('b'), body)).status).toBe(403);
    const made = await call('POST', '/v1/schedules', token('c'), body);
    expect(made.status).toBe(201);
    expect(made.json).toMatchObject({
      scheduleId: id,
      cron: ['0 9 * * MON'],
      timezone: 'Europe/Berlin',
      overlap: 'skip',
    });
    expect(made.json.nextRuns.length).toBeGreaterThan(0);

    expect((await call('POST', '/v1/schedules', token('c'), body)).json.error.code).toBe('schedule_exists');
    const badCron = await call('POST', '/v1/schedules', token('c'), {
      ...body,
      scheduleId: `${id}-b`,
      cron: ['61 * * * *'],
    });
    expect([badCron.status, badCron.json.error.message]).toEqual([
      400,
      expect.stringMatching(/Minute is not in range/),
    ]);
    const badZone = await call('POST', '/v1/schedules', token('c'), {
      ...body,
      scheduleId: `${id}-z`,
      timezone: 'Mars/Olympus',
    });
    expect([badZone.status, badZone.json.error.message]).toEqual([400, expect.stringMatching(/unknown time zone/)]);
    expect((await call('GET', '/v1/schedules/no-such-schedule', token('c'))).status).toBe(404);
    expect((await call('GET', `/v1/schedules/${id}`, token('a'))).status).toBe(403);

    await expect
      .poll(
        async () =>
          (await call('GET', '/v1/schedules', token('c'))).json.schedules.map(
            (s: { scheduleId: string }) => s.scheduleId,
          ),
        {
          timeout: 20_000,
        },
      )
      .toContain(id);
    const paused = await call('POST', `/v1/schedules/${id}/pause`, token('c'), { note: 'holidays' });
    expect(paused.json).toMatchObject({ paused: true, note: 'Paused by carol@example.com: holidays' });
    expect((await call('POST', `/v1/schedules/${id}/trigger`, token('c'), {})).status).toBe(202);
    await expect
      .poll(async () => (await call('GET', `/v1/schedules/${id}`, token('c'))).json.recentRuns.length, {
        timeout: 30_000,
      })
      .toBe(1);
    expect((await call('DELETE', `/v1/schedules/${id}`, token('c'))).json).toEqual({ scheduleId: id, deleted: true });
    expect((await call('GET', `/v1/schedules/${id}`, token('c'))).status).toBe(404);
  }, 60_000);

  it('the CLI creates, lists, shows, pauses, triggers and deletes, directly and through the API, and says what is wrong', async () => {
    const id = scheduleId('cli');
    const made = await runCli(['schedules', 'create', id, 'Nightly', 'check', '--cron', '0 2 * * *', '--paused'], env);
    expect(made.stdout).toContain(`${id}: cron "0 2 * * *" in UTC`);
    await expect.poll(async () => (await runCli(['schedules', 'list'], env)).stdout, { timeout: 20_000 }).toContain(id);
    expect((await runCli(['schedules', 'show', id], env)).stdout).toContain('message: Nightly check');

    const through = { ...env, AGENT_API_URL: api.url, AGENT_API_TOKEN: token('c') };
    await runCli(['schedules', 'pause', id, '--note', 'quiet'], through);
    expect((await runCli(['schedules', 'show', id], through)).stdout).toContain(
      'paused (Paused by carol@example.com: quiet)',
    );
    await runCli(['schedules', 'trigger', id], through);
    await expect
      .poll(async () => (await runCli(['schedules', 'show', id], env)).stdout, { timeout: 30_000 })
      .toContain(`run ${id}-`);
    await expect(runCli(['schedules', 'create', id, 'again', '--every', '1h'], through)).rejects.toMatchObject({
      stderr: expect.stringContaining('schedule_exists'),
    });
    await expect(
      runCli(['schedules', 'create', `${id}-tz`, 'x', '--cron', '0 9 * * *', '--timezone', 'Nowhere/City'], env),
    ).rejects.toMatchObject({ stderr: expect.stringContaining('unknown time zone') });
    await expect(runCli(['schedules', 'show', id], { ...through, AGENT_API_TOKEN: token('a') })).rejects.toMatchObject({
      stderr: expect.stringContaining('forbidden'),
    });
    await runCli(['schedules', 'delete', id], through);
    await expect(runCli(['schedules', 'show', id], env)).rejects.toMatchObject({
      stderr: expect.stringContaining(`No schedule ${id}`),
    });
  }, 120_000);
});
