import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { findUnstorableCharacter, toStorableText } from '../../src/contract/text';
import { UnstorableTextError } from '../../src/common/errors';
import { tool } from '../../src/tools/tool';
import { startHarness, type Harness } from '../support/harness';
import { startHttpMcpServer, type HttpMcpServer } from '../support/mcp-server';

// Every path text takes into a conversation, with characters that are hard to
// store: U+0000, unpaired surrogates (which may pair up with their neighbours),
// U+FFFE/U+FFFF, bidirectional overrides, four-byte characters, control
// characters, quotes and backslashes. Against the real database and model
// server, whatever the text: a person's text is taken exactly or refused
// naming its first such character; a tool's, a model's or an MCP server's is
// stored exactly where it can be and with U+FFFD where it cannot; the model
// never sees an invalid transcript; the conversation answers the next message.

const HARD = [
  'a',
  'Z',
  ' ',
  '\u0000',
  '\u0001',
  '\ud800',
  '\udbff',
  '\udc00',
  '\udfff',
  '\ud83d\ude00',
  '\u{1D11E}',
  '\ufffe',
  '\uffff',
  '\u202e',
  '\u202d',
  'é',
  '"',
  '\\',
  '\n',
];
const text = fc.array(fc.constantFrom(...HARD), { maxLength: 12 }).map((parts) => parts.join(''));

const echo = tool({
  name: 'echo_text',
  description: 'Answers with the text it is given.',
  parameters: z.object({ text: z.string() }),
  async execute({ text }) {
    return `echo: ${text}`;
  },
});
const guardedEcho = tool({
  name: 'guarded_echo',
  description: 'Answers with the text it is given, once a person agrees.',
  parameters: z.object({ text: z.string() }),
  needsApproval: true,
  async execute({ text }) {
    return `guarded: ${text}`;
  },
});

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'unstorable-property-'));
let h: Harness;
let crm: HttpMcpServer;
beforeAll(async () => {
  crm = await startHttpMcpServer({ name: 'crm', logFile: path.join(dir, 'calls.jsonl'), echo: true });
  h = await startHarness({
    tools: [echo, guardedEcho],
    mcpServers: { crm: { url: crm.url, headers: { Authorization: `Bearer ${crm.token}` } } },
  });
});
afterAll(async () => {
  await h?.stop();
  await crm?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

type Stored = {
  role: string;
  content: string | null;
  reasoning_content?: string;
  tool_call_id?: string;
  tool_calls?: { id: string; function: { arguments: string } }[];
};

/** A person's text: taken when storable; refused naming its first unstorable character, then sent without it. */
async function sendAsPerson<T>(
  value: string,
  send: (value: string) => Promise<T>,
): Promise<{ sent: string; result: T }> {
  const found = findUnstorableCharacter(value);
  if (!found) return { sent: value, result: await send(value) };
  await expect(send(value)).rejects.toThrow(UnstorableTextError);
  await expect(send(value)).rejects.toThrow(`contains ${found.codePoint} (${found.name}) at offset ${found.index}`);
  const sent = toStorableText(value);
  return { sent, result: await send(sent) };
}

/**
 * What the echo tool's call with verbatim arguments reports: the echo when the stored arguments parse, else a failure.
 */
function expectedRawEcho(storedArguments: string): { echo: string } | { failed: true } {
  try {
    const parsed = JSON.parse(storedArguments) as { text?: unknown };
    return typeof parsed.text === 'string' ? { echo: toStorableText(`echo: ${parsed.text}`) } : { failed: true };
  } catch {
    return { failed: true };
  }
}

describe('hard text through every path (property, against the real database and model server)', () => {
  it('people are refused or taken exactly, machines stored exactly or with U+FFFD, and every conversation answers its next message', async () => {
    let runs = 0;
    let refusals = 0;
    let replaced = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          user: text,
          arg: text,
          raw: text,
          mcp: text,
          reason: text,
          answer: text,
          reasoning: text,
          stream: fc.boolean(),
        }),
        async (t) => {
          const id = h.newConversationId(`hard-${runs++}`);
          const rawArguments = `{"text":"${t.raw}"}`;
          h.model.enqueue(
            {
              toolCalls: [
                { id: 'call_echo', name: 'echo_text', arguments: { text: t.arg } },
                { id: 'call_raw', name: 'echo_text', arguments: rawArguments },
                { id: 'call_mcp', name: 'crm__echo_text', arguments: { text: t.mcp } },
                { id: 'call_guard', name: 'guarded_echo', arguments: { text: t.arg } },
              ],
              reasoningContent: `thinking ${t.reasoning}`,
            },
            { content: `done ${t.answer}` },
          );
          const input = { model: { stream: t.stream }, mcpServers: ['crm'] };
          const user = await sendAsPerson(`prop ${t.user}`, (value) => h.client.sendMessage(id, value, { input }));
          await expect
            .poll(async () => (await h.client.state(id)).pendingApprovals.length, { timeout: 20_000 })
            .toBe(1);
          const reason = await sendAsPerson(`why ${t.reason}`, (value) =>
            h.client.decide(id, { decision: 'reject', toolCallId: 'call_guard', reason: value }),
          );
          const turn = await h.client.waitForTurn(id, user.result, 30_000);
          expect(turn.outcome).toBe('answered');

          const stored = (await h.client.transcript(id)).map((m) => m.message as Stored);
          expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'tool', 'tool', 'assistant']);
          expect(stored[0].content).toBe(user.sent);
          const asked = stored[1];
          expect(asked.reasoning_content).toBe(toStorableText(`thinking ${t.reasoning}`));
          const args = new Map(asked.tool_calls?.map((c) => [c.id, c.function.arguments]));
          expect(args.get('call_echo')).toBe(JSON.stringify({ text: t.arg }));
          expect(args.get('call_raw')).toBe(toStorableText(rawArguments));
          const results = new Map(
            stored.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, m.content ?? '']),
          );
          expect(results.get('call_echo')).toBe(toStorableText(`echo: ${t.arg}`));
          const raw = expectedRawEcho(toStorableText(rawArguments));
          if ('echo' in raw) expect(results.get('call_raw')).toBe(raw.echo);
          else
            expect(JSON.parse(results.get('call_raw') ?? '')).toMatchObject({
              kind: 'tool_failed',
              reason: 'invalid_arguments',
            });
          expect(results.get('call_mcp')).toBe(toStorableText(`echo: ${t.mcp}`));
          expect(JSON.parse(results.get('call_guard') ?? '')).toMatchObject({ kind: 'rejected', reason: reason.sent });
          expect(stored[6].content).toBe(toStorableText(`done ${t.answer}`));
          const records = await h.pool.query(
            'SELECT reason FROM durable_agent.approval_decisions WHERE conversation_id = $1',
            [id],
          );
          expect(records.rows).toEqual([{ reason: reason.sent }]);

          if (user.sent !== `prop ${t.user}`) refusals++;
          if (reason.sent !== `why ${t.reason}`) refusals++;
          for (const machine of [
            `echo: ${t.arg}`,
            rawArguments,
            `echo: ${t.mcp}`,
            `done ${t.answer}`,
            `thinking ${t.reasoning}`,
          ]) {
            if (toStorableText(machine) !== machine) replaced++;
          }
          h.model.enqueue({ content: 'next answered' });
          const next = await h.client.ask(id, 'and the next message?');
          expect(next.answer).toBe('next answered');
        },
      ),
      { numRuns: 20, endOnFailure: true },
    );
    h.expectOnlyValidModelRequests();
    console.log(
      `hard text property: ${runs} conversations, ${refusals} person's texts refused, ${replaced} machine texts stored with U+FFFD, ${h.model.requests.length} model requests, all valid`,
    );
  });
});
