import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server';
import { GUARDRAIL_OUTPUT_INFO_MAX_CHARS } from '../../src/contract/guardrail-results';
import { agent } from '../../src/tools/agents';
import { guardrail } from '../../src/tools/guardrails';
import { apiCaller, TEST_TOKENS, token } from '../support/api';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';
import { readTurnEvents } from '../support/stream-bodies';

// Guardrail results in the turn's record on the real stack: every input and output guardrail's verdict, in our shape
// or the OpenAI Agents SDK's ({tripwireTriggered, outputInfo}), and a tool guardrail's per call, with its outputInfo
// (bounded), readable from the client, the API (state and the turn event) and the CLI's show.

/** The Agents SDK's shape: a topic classifier that reports what it found. */
const topic = guardrail({
  name: 'topic',
  on: 'input',
  check: ({ messages }) => {
    const weather = messages.some((m) => m.includes('weather'));
    return {
      tripwireTriggered: weather,
      outputInfo: { topic: weather ? 'weather' : 'orders', checked: messages.length },
    };
  },
});
/** Reports far more than a record keeps. */
const verbose = guardrail({
  name: 'verbose',
  on: 'input',
  check: () => ({ tripwire: false, outputInfo: { dump: 'x'.repeat(GUARDRAIL_OUTPUT_INFO_MAX_CHARS) } }),
});
/** Ours, with outputInfo: an output scan. */
const secrets = guardrail({
  name: 'secrets',
  on: 'output',
  check: ({ text }) => {
    const matches = text.split('SECRET-').length - 1;
    return matches > 0
      ? { tripwire: true, reason: 'The answer named a secret.', outputInfo: { matches } }
      : { tripwire: false, outputInfo: { matches, length: text.length } };
  },
});
/** A tool guardrail that allows each call and reports what it looked at. */
const lookups = guardrail({
  name: 'lookups',
  on: 'tool',
  check: ({ arguments: args }) => ({ action: 'allow', outputInfo: { query: (args as { query?: string }).query } }),
});
const desk = agent({ name: 'desk', instructions: 'GOI desk.', tools: ['find_customer'], guardrails: [secrets] });

let h: Harness;
let api: Awaited<ReturnType<typeof startApiServer>>;
let scratch: string;
beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'guardrail-info-'));
  h = await startHarness({ textDeltaChars: 2, agents: [desk], guardrails: [topic, verbose, lookups] });
  api = await startApiServer({ client: h.client, tokens: TEST_TOKENS });
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

const call = apiCaller(() => api.url);
const dropped = expect.stringMatching(
  new RegExp(
    `^outputInfo is \\d+ characters of JSON, over the ${GUARDRAIL_OUTPUT_INFO_MAX_CHARS} a turn's record keeps`,
  ),
);

/** The `turn` event of the API's stream of the turn that took `messageId`. */
async function turnEvent(id: string, messageId: string): Promise<Record<string, unknown>> {
  const response = await fetch(
    `${api.url}/v1/conversations/${encodeURIComponent(id)}/events?messageId=${encodeURIComponent(messageId)}`,
    { headers: { authorization: `Bearer ${token('a')}` } },
  );
  const turn = (await readTurnEvents(response.body!)).find((e) => e.event === 'turn');
  return turn!.data as Record<string, unknown>;
}

describe("guardrails' outputInfo", () => {
  it('every guardrail of a turn with a tool step is in its record, in the API and in show', async () => {
    const id = h.newConversationId('goi-pass');
    h.model.enqueue(
      { toolCalls: [{ id: 'call_find', name: 'find_customer', arguments: { query: 'Ada' } }] },
      { content: 'GOI-1 Ada is cus_ada.' },
    );
    const { turn, answer } = await h.client.ask(id, 'GOI-1 who is Ada?', { input: { agent: 'desk' } });
    expect(answer).toBe('GOI-1 Ada is cus_ada.');
    expect(turn.outcome).toBe('answered');
    const expected = [
      { on: 'input', guardrail: 'topic', tripwire: false, outputInfo: { topic: 'orders', checked: 1 } },
      { on: 'input', guardrail: 'verbose', tripwire: false, outputInfoDropped: dropped },
      {
        on: 'tool',
        guardrail: 'lookups',
        toolCallId: 'call_find',
        action: 'allow',
        tripwire: false,
        outputInfo: { query: 'Ada' },
      },
      { on: 'output', guardrail: 'secrets', tripwire: false, outputInfo: { matches: 0, length: 21 } },
    ];
    expect(turn.guardrails).toEqual(expected);

    const state = await call('GET', `/v1/conversations/${encodeURIComponent(id)}`, token('c'));
    expect(state.status).toBe(200);
    expect(state.json.recentTurns.at(-1).guardrails).toEqual(expected);
    expect((await turnEvent(id, turn.messageIds[0])).guardrails).toEqual(expected);

    const env = {
      TEMPORAL_ADDRESS: h.temporalAddress,
      DATABASE_URL: h.databaseUrl,
      TEMPORAL_TASK_QUEUE: h.taskQueue,
      AGENT_DATA_DIR: scratch,
    };
    const shown = (await runCli(['show', id], env)).stdout;
    expect(shown).toContain(`guardrails of the turn for ${turn.messageIds[0]} (answered):`);
    expect(shown).toContain('  input topic: passed  outputInfo {"topic":"orders","checked":1}');
    expect(shown).toMatch(/ {2}input verbose: passed {2}outputInfo not kept: outputInfo is \d+ characters of JSON/);
    expect(shown).toContain('  tool lookups: allowed call_find  outputInfo {"query":"Ada"}');
    expect(shown).toContain('  output secrets: passed  outputInfo {"matches":0,"length":21}');
    const remote = (
      await runCli(['show', id], { AGENT_API_URL: api.url, AGENT_API_TOKEN: token('c'), AGENT_DATA_DIR: scratch })
    ).stdout;
    expect(remote).toContain('  input topic: passed  outputInfo {"topic":"orders","checked":1}');
  });

  it("an input guardrail in the Agents SDK's shape trips the turn; its outputInfo is recorded", async () => {
    const id = h.newConversationId('goi-input');
    const before = h.model.requests.length;
    const { turn } = await h.client.ask(id, 'GOI-2 what is the weather?', { input: { agent: 'desk' } });
    expect(h.model.requests.length).toBe(before);
    expect(turn).toMatchObject({
      outcome: 'guardrail_tripped',
      guardrail: { on: 'input', guardrail: 'topic', reason: 'no reason given' },
      guardrails: [
        { on: 'input', guardrail: 'topic', tripwire: true, outputInfo: { topic: 'weather', checked: 1 } },
        { on: 'input', guardrail: 'verbose', tripwire: false, outputInfoDropped: dropped },
      ],
    });
    expect(turn.guardrails).toHaveLength(2);
  });

  it('an output guardrail that withholds the answer records its outputInfo with the input guardrails', async () => {
    const id = h.newConversationId('goi-output');
    h.model.enqueue({ content: 'GOI-3 the code is SECRET-42.' });
    const { turn, answer } = await h.client.ask(id, 'GOI-3 the code?', { input: { agent: 'desk' } });
    expect(answer).toBe('[guardrail secrets] The answer was withheld: The answer named a secret.');
    expect(turn.guardrails).toEqual([
      { on: 'input', guardrail: 'topic', tripwire: false, outputInfo: { topic: 'orders', checked: 1 } },
      { on: 'input', guardrail: 'verbose', tripwire: false, outputInfoDropped: dropped },
      {
        on: 'output',
        guardrail: 'secrets',
        tripwire: true,
        reason: 'The answer named a secret.',
        outputInfo: { matches: 1 },
      },
    ]);
    const state = await call('GET', `/v1/conversations/${encodeURIComponent(id)}`, token('c'));
    expect(state.json.recentTurns.at(-1)).toMatchObject({ outcome: 'guardrail_tripped', guardrails: turn.guardrails });
  });
});
