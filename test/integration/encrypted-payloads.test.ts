import { randomBytes } from 'node:crypto';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { createOpenAIClient } from '../../src/activities/openai-client';
import { AgentClient } from '../../src/client/client';
import { AesGcmPayloadCodec, ENCRYPTED_ENCODING, encryptingDataConverter, parsePayloadKeys } from '../../src/codec';
import { createAgentWorker } from '../../src/worker/worker';
import { backofficeTools } from '../../src/demo/tools';
import { tool, ToolError } from '../../src/tools/tool';
import { runCli } from '../support/cli';
import { startHarness, type Harness } from '../support/harness';

// Payloads encrypted with AES-256-GCM: with a key configured, Temporal's
// history holds no user text, tool arguments, results or error messages in
// the clear; a conversation begun before the key keeps working after it.

const key = { id: 'k2026', key: randomBytes(32) };
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe('the payload codec', () => {
  it('round-trips a payload, names its key, and passes plain payloads through', async () => {
    const codec = new AesGcmPayloadCodec([key]);
    const payload = {
      metadata: { encoding: new TextEncoder().encode('json/plain') },
      data: new TextEncoder().encode('"secret"'),
    };
    const [sealed] = await codec.encode([payload]);
    expect(text(sealed.metadata!.encoding!)).toBe(ENCRYPTED_ENCODING);
    expect(text(sealed.metadata!['encryption-key-id']!)).toBe('k2026');
    expect(Buffer.from(sealed.data!).includes('secret')).toBe(false);
    const [opened] = await codec.decode([sealed]);
    expect(text(opened.data!)).toBe('"secret"');
    expect(text(opened.metadata!.encoding!)).toBe('json/plain');
    expect(await codec.decode([payload])).toEqual([payload]);
  });

  it('decrypts with an older key after rotation, and says which key is missing or that a payload was altered', async () => {
    const older = { id: 'k2025', key: randomBytes(32) };
    const [sealedOld] = await new AesGcmPayloadCodec([older]).encode([
      { metadata: {}, data: new TextEncoder().encode('"old"') },
    ]);
    const rotated = new AesGcmPayloadCodec([key, older]);
    expect(text((await rotated.decode([sealedOld]))[0].data!)).toBe('"old"');
    await expect(new AesGcmPayloadCodec([key]).decode([sealedOld])).rejects.toThrow(
      'A payload is encrypted with key "k2025", which this process does not hold (it holds "k2026"). Add that key to AGENT_PAYLOAD_KEYS (after the current one) to read it.',
    );
    const tampered = { ...sealedOld, data: Uint8Array.from(sealedOld.data!, (b, i) => (i === 20 ? b ^ 1 : b)) };
    await expect(new AesGcmPayloadCodec([older]).decode([tampered])).rejects.toThrow(
      /failed authentication: it was altered/,
    );
  });

  it('reads keys as id:base64 and refuses anything else with the way to make one', () => {
    const keys = parsePayloadKeys(
      `new:${randomBytes(32).toString('base64')}, old:${randomBytes(32).toString('base64')}`,
    );
    expect(keys.map((k) => k.id)).toEqual(['new', 'old']);
    expect(() => parsePayloadKeys('k1:c2hvcnQ=')).toThrow(
      'AGENT_PAYLOAD_KEYS: key "k1" is 5 bytes; AES-256 needs 32 (openssl rand -base64 32).',
    );
    expect(() => parsePayloadKeys('justakey')).toThrow(/each key is id:base64/);
  });
});

let h: Harness;
let plainWorker: Worker | undefined;
let encryptedWorker: Worker | undefined;
let plainRun: Promise<void> | undefined;
let encryptedRun: Promise<void> | undefined;
let connection: NativeConnection;
let encrypted: AgentClient;

const failing = tool({
  name: 'check_ledger',
  description: 'Checks the ledger.',
  parameters: z.object({ account: z.string() }),
  async execute() {
    throw new ToolError('LEDGER-FAILURE-MARKER: the ledger is closed');
  },
});

beforeAll(async () => {
  h = await startHarness({ worker: false });
  connection = await NativeConnection.connect({ address: h.temporalAddress });
  encrypted = await AgentClient.connect({
    temporalAddress: h.temporalAddress,
    taskQueue: h.taskQueue,
    databaseUrl: h.databaseUrl,
    dataConverter: encryptingDataConverter([key]),
  });
});
afterAll(async () => {
  plainWorker?.shutdown();
  encryptedWorker?.shutdown();
  await Promise.all([plainRun, encryptedRun]);
  await encrypted?.close();
  await connection?.close();
  await h?.stop();
});

/** Every string and byte string in `value`, as text: what anyone reading the history without a key sees. */
function readable(value: unknown, out: string[] = []): string[] {
  if (value instanceof Uint8Array) out.push(text(value));
  else if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) readable(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) readable(v, out);
  return out;
}

describe('a conversation with encrypted payloads', () => {
  it('keeps no user text, arguments, results or error messages readable in history, and a conversation begun before the key goes on', async () => {
    const id = h.newConversationId('encrypted');
    const worker = (dataConverter?: ReturnType<typeof encryptingDataConverter>) =>
      createAgentWorker({
        connection,
        namespace: 'default',
        taskQueue: h.taskQueue,
        database: { pool: h.pool },
        model: { name: 'scripted-model', client: createOpenAIClient({ apiKey: 'test-key', baseUrl: h.model.url }) },
        tools: [...backofficeTools(), failing],
        // Without a key: the run's shared bundle. With one: bundled at start, with the failure converter.
        ...(dataConverter ? { dataConverter } : { workflowBundle: { codePath: inject('workflowBundlePath') } }),
      });

    // Before the key: a plain turn.
    plainWorker = await worker();
    plainRun = plainWorker.run();
    h.model.enqueue({ content: 'PLAIN-ANSWER-MARKER' });
    expect((await h.client.ask(id, 'PLAIN-QUESTION-MARKER')).answer).toBe('PLAIN-ANSWER-MARKER');
    plainWorker.shutdown();
    await plainRun;
    plainWorker = undefined;

    // With the key: the same conversation, a tool call with arguments, a result, a failure and an answer.
    encryptedWorker = await worker(encryptingDataConverter([key]));
    encryptedRun = encryptedWorker.run();
    h.model.enqueue(
      {
        toolCalls: [
          { id: 'call_e1', name: 'find_customer', arguments: { query: 'ARGUMENT-MARKER Ada' } },
          { id: 'call_e2', name: 'check_ledger', arguments: { account: 'ACCOUNT-MARKER' } },
        ],
      },
      { content: 'SECRET-ANSWER-MARKER' },
    );
    const turn = await encrypted.ask(id, 'SECRET-QUESTION-MARKER');
    expect(turn.turn.outcome).toBe('answered');
    expect(turn.answer).toBe('SECRET-ANSWER-MARKER');
    const tools = (await encrypted.transcript(id)).map((m) => m.message).filter((m) => m.role === 'tool');
    expect(tools.at(-1)).toMatchObject({ tool_call_id: 'call_e2' });
    expect(JSON.stringify(tools.at(-1))).toContain('LEDGER-FAILURE-MARKER');

    // Read as someone with access to the namespace and no key.
    const { events } = await h.temporal.workflow.getHandle(id).fetchHistory();
    const seen = readable(events).join('\n');
    // The check finds plaintext where there is some: the turn before the key.
    expect(seen).toContain('PLAIN-QUESTION-MARKER');
    for (const secret of [
      'SECRET-QUESTION-MARKER',
      'ARGUMENT-MARKER',
      'ACCOUNT-MARKER',
      'LEDGER-FAILURE-MARKER',
      'SECRET-ANSWER-MARKER',
    ]) {
      expect(seen, secret).not.toContain(secret);
    }
    // Nor the activities' summaries, which name tools and approvers: they are payloads too.
    expect(seen).not.toContain('call 1 of turn 2');
    expect(seen).not.toContain('check_ledger');
    // The encrypted client reads it all back; the CLI without the key says what is missing.
    const state = await encrypted.state(id);
    expect(state.recentTurns.map((t) => t.outcome)).toEqual(['answered', 'answered']);
    const env = {
      TEMPORAL_ADDRESS: h.temporalAddress,
      DATABASE_URL: h.databaseUrl,
      TEMPORAL_TASK_QUEUE: h.taskQueue,
      AGENT_PAYLOAD_KEYS: '',
    };
    const refused = await runCli(['state', id], env).catch((err: { stderr: string }) => err);
    expect((refused as { stderr: string }).stderr).toContain(
      "The conversation's payloads are encrypted, and this process has no key to read them. Set AGENT_PAYLOAD_KEYS to the workers' keys",
    );
    const read = await runCli(['state', id], { ...env, AGENT_PAYLOAD_KEYS: `${key.id}:${key.key.toString('base64')}` });
    expect(read.stdout).toContain('answered');
  });
});
