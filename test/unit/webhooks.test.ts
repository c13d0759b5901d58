import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/app/config';
import { readWebhookSettings } from '../../src/app/webhook-settings';
import { verifyWebhook } from '../../src/client';
import { signWebhook } from '../../src/common/webhook-signature';
import { NOTIFICATION_TYPES } from '../../src/contract/notifications';
import { describeBadNotificationOptions } from '../../src/notifications/options';
import { WEBHOOK_PAYLOAD_SCHEMA, webhookPayloadProblem } from '../support/webhook-schema';

// What a webhook receiver and a worker's configuration rest on, without
// servers: the signature (signed by the worker's signer, checked by the
// exported verifier, refused for every way it can be wrong), the payload's
// JSON Schema (strict, the types the code has, the examples the docs show),
// and the endpoints' checks (each problem named, no secret quoted).

const SECRET = 'a'.repeat(64);
const KEY = { keyId: 'k1', secret: SECRET };
const body = JSON.stringify({ id: '0b6c2a53-1f1e-4f2a-9a3e-2b7c1d0e9f10', type: 'call.waiting' });
const at = new Date('2026-03-01T12:00:00Z');

describe('the signature of a delivery', () => {
  const headers = signWebhook(KEY, '0b6c2a53-1f1e-4f2a-9a3e-2b7c1d0e9f10', body, at);

  it('is t=<seconds>,<keyId>=<hex HMAC-SHA256 of "<t>.<body>">, and the verifier accepts it', () => {
    expect(headers['agent-webhook-timestamp']).toBe(String(at.getTime() / 1000));
    expect(headers['agent-webhook-signature']).toMatch(new RegExp(`^t=${at.getTime() / 1000},k1=[0-9a-f]{64}$`));
    expect(verifyWebhook({ secrets: { k1: SECRET }, body, headers, now: at })).toEqual({
      ok: true,
      eventId: '0b6c2a53-1f1e-4f2a-9a3e-2b7c1d0e9f10',
      keyId: 'k1',
      event: JSON.parse(body),
    });
    // Bytes, a fetch Headers, a record in the sender's case: the same.
    expect(
      verifyWebhook({ secrets: { k1: SECRET }, body: Buffer.from(body), headers: new Headers(headers), now: at }).ok,
    ).toBe(true);
    const senderCase = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.replace(/(^|-)a/g, '$1A'), v]));
    expect(verifyWebhook({ secrets: { k1: SECRET }, body, headers: senderCase, now: at }).ok).toBe(true);
    // During a rotation the receiver holds both keys.
    expect(verifyWebhook({ secrets: { k0: 'b'.repeat(64), k1: SECRET }, body, headers, now: at }).ok).toBe(true);
  });

  it('is refused, saying why, for a changed body, another secret, an old timestamp, an unknown key, no signature', () => {
    const problem = (input: Partial<Parameters<typeof verifyWebhook>[0]>) => {
      const result = verifyWebhook({ secrets: { k1: SECRET }, body, headers, now: at, ...input });
      return result.ok ? 'accepted' : result.problem;
    };
    expect(problem({ body: body.replace('waiting', 'decided') })).toContain('does not match the body');
    expect(problem({ secrets: { k1: 'c'.repeat(64) } })).toContain('does not match the body');
    expect(problem({ now: new Date(at.getTime() + 301_000) })).toMatch(/301 s from this clock .* at most 300 s/);
    expect(problem({ now: new Date(at.getTime() + 301_000), toleranceSeconds: 600 })).toBe('accepted');
    expect(problem({ secrets: { k2: SECRET } })).toBe(
      'The delivery is signed with key k1, and this receiver holds k2.',
    );
    expect(problem({ headers: {} })).toContain('No agent-webhook-signature header');
    expect(problem({ headers: { ...headers, 'agent-webhook-signature': 'k1=00' } })).toContain('has no timestamp');
    expect(problem({ headers: { ...headers, 'agent-webhook-id': 'another' } })).toContain("is not the body's id");
  });
});

describe('the payload schema (docs/webhook-payload.schema.json)', () => {
  it('compiles in strict mode and lists the types the worker writes', () => {
    expect(WEBHOOK_PAYLOAD_SCHEMA.properties.type.enum).toEqual([...NOTIFICATION_TYPES]);
  });

  it('holds the examples of docs/notifications.md, and refuses a decision without its decision or with a field it does not know', () => {
    const page = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'notifications.md'), 'utf8');
    const examples = [...page.matchAll(/```json\n([\s\S]*?)```/g)]
      .map((m) => JSON.parse(m[1]) as { type?: string })
      .filter((e) => typeof e.type === 'string' && e.type.startsWith('call.'));
    expect(examples.map((e) => e.type)).toEqual(expect.arrayContaining(['call.waiting', 'call.decided']));
    for (const example of examples) expect(webhookPayloadProblem(example), JSON.stringify(example)).toBeUndefined();
    const decided = examples.find((e) => e.type === 'call.decided')!;
    expect(webhookPayloadProblem({ ...decided, decision: undefined })).toContain(
      "must have required property 'decision'",
    );
    expect(webhookPayloadProblem({ ...decided, extra: 1 })).toContain('must NOT have additional properties');
  });
});

describe('the webhook endpoints a worker is given', () => {
  const endpoint = { name: 'ops', url: 'https://hooks.example.com/agent', keyId: 'k1', secret: SECRET };

  it('accepts https anywhere, http to this machine, and names every problem of the others', () => {
    expect(describeBadNotificationOptions({ endpoints: [endpoint] }, 'notifications')).toEqual([]);
    expect(
      describeBadNotificationOptions({ endpoints: [{ ...endpoint, url: 'http://127.0.0.1:9000/' }] }, 'notifications'),
    ).toEqual([]);
    const problems = describeBadNotificationOptions(
      {
        endpoints: [
          { ...endpoint, url: 'http://hooks.example.com/agent', secret: 'short', events: ['call.waited'] },
          { ...endpoint, keyId: 't', url: 'ftp://x' },
        ],
        timeoutMs: 0,
        retries: 3,
      },
      'notifications',
    );
    expect(problems).toEqual([
      'notifications has unknown field "retries" (known: endpoints, timeoutMs, maxBackoffMs, failingAfterAttempts, concurrency, pollEveryMs, keepDeliveredDays)',
      'notifications.timeoutMs must be a whole number from 100 to 120000 (default 10000)',
      'notifications.endpoints[0] ("ops").url is plain http:// to hooks.example.com: the body and its signature would cross the network unencrypted. Use https://, or set allowHttp: true on the endpoint for a network you trust',
      'notifications.endpoints[0] ("ops").secret must be at least 32 characters (it has 5); make one with: openssl rand -hex 32',
      'notifications.endpoints[0] ("ops").events names "call.waited", not an event type (call.waiting, call.decided, call.timed_out, call.cancelled, call.escalated, turn.ended_after_wait)',
      'notifications.endpoints[1] ("ops"): two endpoints are named "ops"; give each its own name',
      'notifications.endpoints[1] ("ops").url must be https:// (or http:// to this machine), not ftp:',
      'notifications.endpoints[1] ("ops").keyId must be 1 to 64 letters, digits, "_", "." or "-" (not "t"), such as "k1": it names the secret in each signature',
    ]);
    expect(problems.join(' ')).not.toContain(SECRET);
  });
});

describe("npm start's webhook settings", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webhooks-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('reads a file of endpoints readable by its owner only, and refuses one others can read', () => {
    const file = path.join(dir, 'webhooks.json');
    fs.writeFileSync(
      file,
      JSON.stringify([{ name: 'ops', url: 'https://hooks.example.com/a', keyId: 'k1', secret: SECRET }]),
    );
    fs.chmodSync(file, 0o644);
    expect(() => readWebhookSettings({ file })).toThrow(/can be read by others \(mode 644\): run `chmod 600/);
    fs.chmodSync(file, 0o600);
    expect(readWebhookSettings({ file })?.endpoints.map((e) => e.name)).toEqual(['ops']);
    fs.writeFileSync(file, '{"endpoints": [');
    expect(() => readWebhookSettings({ file })).toThrow(/AGENT_WEBHOOKS_FILE=.*: the webhooks file is not valid JSON/);
  });

  it('makes one endpoint of AGENT_WEBHOOK_URL and AGENT_WEBHOOK_SECRET, naming the variable of each problem', () => {
    expect(readWebhookSettings({ url: 'https://hooks.example.com/a', secret: `k9:${SECRET}` })).toEqual({
      endpoints: [{ name: 'webhook', url: 'https://hooks.example.com/a', keyId: 'k9', secret: SECRET }],
    });
    expect(() => readWebhookSettings({ url: 'https://hooks.example.com/a', secret: SECRET })).toThrow(
      /AGENT_WEBHOOK_SECRET must be keyId:secret/,
    );
    expect(() => readWebhookSettings({ url: 'https://hooks.example.com/a', secret: 'k1:short' })).toThrow(
      'the secret of AGENT_WEBHOOK_SECRET (after ":") must be at least 32 characters (it has 5)',
    );
    expect(() => readWebhookSettings({ url: 'http://hooks.example.com/a', secret: `k1:${SECRET}` })).toThrow(
      /AGENT_WEBHOOK_URL is plain http:\/\/ to hooks\.example\.com.*give the endpoint in AGENT_WEBHOOKS_FILE with allowHttp: true/,
    );
    expect(readWebhookSettings({})).toBeUndefined();
  });

  it('refuses a file and a URL together, a URL without its secret, and a secret without its URL, naming the variable', () => {
    const url = 'https://hooks.example.com/a';
    expect(loadConfig({ AGENT_WEBHOOK_URL: url, AGENT_WEBHOOK_SECRET: `k1:${SECRET}` }).webhooks).toEqual({
      url,
      secret: `k1:${SECRET}`,
    });
    expect(() =>
      loadConfig({ AGENT_WEBHOOKS_FILE: 'w.json', AGENT_WEBHOOK_URL: url, AGENT_WEBHOOK_SECRET: 'k1:x' }),
    ).toThrow(/AGENT_WEBHOOK_URL: is set with AGENT_WEBHOOKS_FILE/);
    expect(() => loadConfig({ AGENT_WEBHOOK_URL: url })).toThrow(
      /AGENT_WEBHOOK_SECRET: must be set with AGENT_WEBHOOK_URL/,
    );
    expect(() => loadConfig({ AGENT_WEBHOOK_SECRET: 'k1:x' })).toThrow(
      /AGENT_WEBHOOK_SECRET: is set without AGENT_WEBHOOK_URL/,
    );
    expect(() => loadConfig({ AGENT_WEBHOOK_URL: 'hooks.example.com', AGENT_WEBHOOK_SECRET: 'k1:x' })).toThrow(
      /AGENT_WEBHOOK_URL: must be an http\(s\) URL/,
    );
  });
});
