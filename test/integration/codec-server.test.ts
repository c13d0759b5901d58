import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createOpenAIClient } from '../../src/activities/openai-client';
import { startApiServer } from '../../src/api/server';
import { AgentClient } from '../../src/client/client';
import { AesGcmPayloadCodec, encryptingDataConverter } from '../../src/codec';
import { freePort } from '../../src/common/free-port';
import { findTemporalCli, startDevServer, type DevServer } from '../../src/app/temporal-server';
import { createAgentWorker } from '../../src/worker/worker';
import { backofficeTools } from '../../src/demo/tools';
import { apiCaller, TEST_TOKENS, token } from '../support/api';
import { startHarness, type Harness } from '../support/harness';

// The codec server: with payloads encrypted, `temporal workflow show` and the
// Temporal UI show ciphertext, until they decode through the API's /codec
// routes as an operator (a bearer token for the CLI; the inbox's session
// cookie for the UI, sent because the UI includes credentials and the page's
// origin is allowed). Everyone else is refused, and says why.

const run = promisify(execFile);
const CHROMIUM = '/usr/bin/chromium';
const key = { id: 'k-codec', key: randomBytes(32) };
const SYSTEM_MARKER = 'SYSTEM-PROMPT-MARKER';
const QUESTION_MARKER = 'QUESTION-MARKER';
const ANSWER_MARKER = 'ANSWER-MARKER';

let dev: DevServer;
let h: Harness;
let connection: NativeConnection;
let worker: Worker;
let running: Promise<void>;
let encrypted: AgentClient;
let api: Awaited<ReturnType<typeof startApiServer>>;
let keyless: Awaited<ReturnType<typeof startApiServer>>;
let browser: Browser;
let uiUrl: string;
let conversationId: string;

beforeAll(async () => {
  const [apiPort, uiPort] = [await freePort(), await freePort()];
  uiUrl = `http://127.0.0.1:${uiPort}`;
  // A dev server of this file's own, with its web UI pointed at the API's codec server (npm start does the same).
  dev = await startDevServer({ uiPort, uiCodecEndpoint: `http://127.0.0.1:${apiPort}/codec` });
  h = await startHarness({ temporalAddress: dev.address, worker: false });
  connection = await NativeConnection.connect({ address: dev.address });
  worker = await createAgentWorker({
    connection,
    namespace: 'default',
    taskQueue: h.taskQueue,
    database: { pool: h.pool },
    model: { name: 'scripted-model', client: createOpenAIClient({ apiKey: 'test-key', baseUrl: h.model.url }) },
    tools: backofficeTools(),
    dataConverter: encryptingDataConverter([key]),
    workflowBundle: { codePath: inject('workflowBundlePath') },
  });
  running = worker.run();
  encrypted = await AgentClient.connect({
    temporalAddress: dev.address,
    taskQueue: h.taskQueue,
    databaseUrl: h.databaseUrl,
    dataConverter: encryptingDataConverter([key]),
  });
  const codec = { namespace: 'default', corsOrigins: [uiUrl] };
  api = await startApiServer({
    client: encrypted,
    tokens: TEST_TOKENS,
    port: apiPort,
    codec: { ...codec, codec: new AesGcmPayloadCodec([key]) },
  });
  keyless = await startApiServer({ client: encrypted, tokens: TEST_TOKENS, codec });

  conversationId = h.newConversationId('codec');
  h.model.enqueue(
    { toolCalls: [{ id: 'call_c1', name: 'find_customer', arguments: { query: 'Ada' } }] },
    { content: `${ANSWER_MARKER}: Ada Lovelace` },
  );
  const turn = await encrypted.ask(conversationId, `${QUESTION_MARKER}: find Ada`, {
    input: { systemPrompt: `${SYSTEM_MARKER}: you serve the back office.` },
  });
  expect(turn.answer).toContain(ANSWER_MARKER);

  if (!fs.existsSync(CHROMIUM))
    throw new Error(
      `This test drives Debian's Chromium at ${CHROMIUM}; install it (apt-get install chromium; .ci/run does).`,
    );
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await api?.stop();
  await keyless?.stop();
  worker?.shutdown();
  await running;
  await connection?.close();
  await encrypted?.close();
  await h?.stop();
  await dev?.stop();
});

const call = apiCaller(() => api.url);
const utf8 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
/** A payload as the codec protocol carries it (protobuf JSON: bytes in base64). */
const jsonPayload = (text: string) => ({
  metadata: { encoding: utf8('json/plain') },
  data: utf8(JSON.stringify(text)),
});

/** `temporal workflow show` of the conversation as JSON, with the codec settings in `codecEnv`. */
async function workflowShow(
  codecEnv: Record<string, string>,
): Promise<{ stdout: string; stderr: string; code: number }> {
  const cli = findTemporalCli();
  if (!cli) throw new Error('No temporal CLI: run scripts/ensure-temporal-cli.sh');
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...codecEnv };
  try {
    const { stdout, stderr } = await run(
      cli,
      [
        'workflow',
        'show',
        '--address',
        dev.address,
        '--namespace',
        'default',
        '--workflow-id',
        conversationId,
        '--output',
        'json',
      ],
      { env },
    );
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: number };
    return { stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: e.code ?? 1 };
  }
}

/** Every readable string in the CLI's JSON output, base64 payload data decoded. */
function readableHistory(json: string): string {
  const out: string[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === 'string') {
      out.push(value);
      if (/^[A-Za-z0-9+/]+={0,2}$/.test(value) && value.length % 4 === 0)
        out.push(Buffer.from(value, 'base64').toString('utf8'));
    } else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') Object.values(value).forEach(walk);
  };
  walk(JSON.parse(json));
  return out.join('\n');
}

describe('temporal workflow show', () => {
  it('prints no user text, system prompt or answer without the codec, and all of them through the codec server with an operator token', async () => {
    const plain = await workflowShow({});
    expect(plain.code, plain.stderr).toBe(0);
    const seenPlain = readableHistory(plain.stdout);
    // The history is there (the check reads what it should); its payloads are ciphertext.
    expect(seenPlain).toContain('binary/encrypted');
    for (const marker of [SYSTEM_MARKER, QUESTION_MARKER, ANSWER_MARKER, 'Lovelace'])
      expect(seenPlain, marker).not.toContain(marker);

    const decoded = await workflowShow({
      TEMPORAL_CODEC_ENDPOINT: `${api.url}/codec`,
      TEMPORAL_CODEC_AUTH: `Bearer ${token('c')}`,
    });
    expect(decoded.code, decoded.stderr).toBe(0);
    const seen = readableHistory(decoded.stdout);
    for (const marker of [SYSTEM_MARKER, QUESTION_MARKER, ANSWER_MARKER]) expect(seen, marker).toContain(marker);
    expect(seen).not.toContain('binary/encrypted');
  });

  it('fails, decoding nothing, for a token without the operator role', async () => {
    const refused = await workflowShow({
      TEMPORAL_CODEC_ENDPOINT: `${api.url}/codec`,
      TEMPORAL_CODEC_AUTH: `Bearer ${token('a')}`,
    });
    expect(refused.code).not.toBe(0);
    expect(`${refused.stdout}\n${refused.stderr}`).not.toContain(QUESTION_MARKER);
  });
});

describe('the codec routes', () => {
  it('round-trip payloads for an operator, and refuse everyone else with the reason', async () => {
    const encoded = await call('POST', '/codec/encode', token('c'), { payloads: [jsonPayload('round trip')] });
    expect(encoded.status).toBe(200);
    expect(Buffer.from(encoded.json.payloads[0].metadata.encoding, 'base64').toString()).toBe('binary/encrypted');
    expect(Buffer.from(encoded.json.payloads[0].data, 'base64').toString('latin1')).not.toContain('round trip');
    const decoded = await call('POST', '/codec/decode', token('c'), encoded.json);
    expect(decoded.status).toBe(200);
    expect(decoded.json.payloads).toEqual([jsonPayload('round trip')]);

    const anonymous = await call('POST', '/codec/decode', undefined, encoded.json);
    expect(anonymous.status).toBe(401);
    expect(anonymous.json.error.message).toContain('sign in at /inbox');
    const unknownToken = await call('POST', '/codec/decode', token('z'), encoded.json);
    expect(unknownToken.status).toBe(401);
    for (const who of ['a', 'b', 'd']) {
      const refused = await call('POST', '/codec/decode', token(who), encoded.json);
      expect(refused.status, who).toBe(403);
      expect(refused.json.error.message).toContain('needs the operator role');
    }
  });

  it('say what is wrong with a payload of another key, an altered one, another namespace, a malformed body, and an API without keys', async () => {
    const [otherKey] = await new AesGcmPayloadCodec([{ id: 'k-other', key: randomBytes(32) }]).encode([
      { metadata: { encoding: new TextEncoder().encode('json/plain') }, data: new TextEncoder().encode('"x"') },
    ]);
    const other = await call('POST', '/codec/decode', token('c'), {
      payloads: [
        {
          metadata: {
            encoding: Buffer.from(otherKey.metadata!.encoding!).toString('base64'),
            'encryption-key-id': utf8('k-other'),
          },
          data: Buffer.from(otherKey.data!).toString('base64'),
        },
      ],
    });
    expect(other.status).toBe(422);
    expect(other.json.error).toEqual({
      code: 'payload_undecodable',
      message: expect.stringContaining('encrypted with key "k-other", which this process does not hold'),
    });

    const sealed = (await call('POST', '/codec/encode', token('c'), { payloads: [jsonPayload('tamper')] })).json
      .payloads[0];
    const bytes = Buffer.from(sealed.data, 'base64');
    bytes[bytes.length - 1] ^= 1;
    const altered = await call('POST', '/codec/decode', token('c'), {
      payloads: [{ ...sealed, data: bytes.toString('base64') }],
    });
    expect(altered.status).toBe(422);
    expect(altered.json.error.message).toContain('failed authentication');

    const response = await fetch(`${api.url}/codec/decode`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token('c')}`, 'content-type': 'application/json', 'x-namespace': 'payments' },
      body: JSON.stringify({ payloads: [sealed] }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
      'This codec server serves namespace "default", not "payments".',
    );

    const malformed = await call('POST', '/codec/decode', token('c'), { payloads: [{ data: 'not base64!' }] });
    expect(malformed.status).toBe(400);
    expect(malformed.json.error.message).toContain('must be base64');

    const off = await fetch(`${keyless.url}/codec/decode`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token('c')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ payloads: [sealed] }),
    });
    expect(off.status).toBe(501);
    expect(((await off.json()) as { error: unknown }).error).toEqual({
      code: 'codec_off',
      message: expect.stringContaining('Set AGENT_PAYLOAD_KEYS'),
    });
  });

  it("answer the Temporal UI's preflight with credentials allowed, and give other origins no CORS headers", async () => {
    const preflight = (origin: string) =>
      fetch(`${api.url}/codec/decode`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,x-namespace',
        },
      });
    const allowed = await preflight(uiUrl);
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(uiUrl);
    expect(allowed.headers.get('access-control-allow-credentials')).toBe('true');
    expect(allowed.headers.get('access-control-allow-headers')).toContain('x-namespace');
    const other = await preflight('http://127.0.0.1:1');
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    // The /v1 API is no CORS endpoint at all.
    const v1 = await fetch(`${api.url}/v1/approvals`, {
      method: 'OPTIONS',
      headers: { origin: uiUrl, 'access-control-request-method': 'GET' },
    });
    expect(v1.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('the Temporal UI', () => {
  /**
   * A browser whose UI uses the codec server with credentials (what the UI's Codec Server settings store), optionally
   * signed in to the inbox with `secret`.
   */
  async function uiBrowser(secret?: string) {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    if (secret) {
      const page = await context.newPage();
      await page.goto(`${api.url}/inbox`);
      await page.fill('input[name=token]', secret);
      await page.click('button:has-text("Sign in")');
      await page.waitForSelector('[data-testid=subject]');
      await page.close();
    }
    // What the UI's Codec Server settings store ("use my browser setting", the endpoint, "include cross-origin
    // credentials").
    const settings = { overrideRemoteCodecConfiguration: true, endpoint: `${api.url}/codec`, includeCredentials: true };
    await context.addInitScript({
      content: `if (location.origin === ${JSON.stringify(uiUrl)}) for (const [k, v] of Object.entries(${JSON.stringify(settings)})) localStorage.setItem(k, JSON.stringify(v));`,
    });
    const page = await context.newPage();
    const decodes: number[] = [];
    // This machine's servers only.
    await context.route(
      (url) => url.hostname !== '127.0.0.1',
      (route) => route.abort(),
    );
    context.on('response', (r) => {
      if (new URL(r.url()).pathname === '/codec/decode') decodes.push(r.status());
    });
    await page.goto(`${uiUrl}/namespaces/default/workflows/${encodeURIComponent(conversationId)}`);
    return { context, page, decodes };
  }

  it('shows the conversation decoded to an operator signed in at the inbox, and ciphertext to a browser that is not', async () => {
    const operator = await uiBrowser(token('c'));
    try {
      await operator.page.getByText(SYSTEM_MARKER).first().waitFor({ timeout: 30_000 });
      expect(operator.decodes.length).toBeGreaterThan(0);
      expect(operator.decodes.every((status) => status === 200)).toBe(true);
      // The docs' picture with CODEC_SCREENSHOT=docs/codec-ui.png; otherwise rendered and dropped.
      const shot = await operator.page.screenshot(
        process.env.CODEC_SCREENSHOT ? { path: process.env.CODEC_SCREENSHOT } : {},
      );
      expect(shot.subarray(1, 4).toString()).toBe('PNG');
    } finally {
      await operator.context.close();
    }

    const stranger = await uiBrowser();
    try {
      await expect.poll(() => stranger.decodes.length, { timeout: 30_000 }).toBeGreaterThan(0);
      expect(stranger.decodes.every((status) => status === 401)).toBe(true);
      // The page has loaded the workflow (its id shows) without the prompt's text.
      await stranger.page.getByText(conversationId).first().waitFor({ timeout: 30_000 });
      expect(await stranger.page.content()).not.toContain(SYSTEM_MARKER);
    } finally {
      await stranger.context.close();
    }
  });
});
