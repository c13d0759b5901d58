/**
 * Signed webhook deliveries: the worker signs each delivery of a
 * notification with its endpoint's secret, and a receiver checks the
 * signature ({@link verifyWebhook}) before it trusts the body, as Stripe and
 * GitHub sign theirs.
 *
 * Headers of every delivery:
 * - `Agent-Webhook-Id`: the event's id (the body's `id`), the same in every
 *   delivery of it: deduplicate by it;
 * - `Agent-Webhook-Timestamp`: when this attempt was signed, in Unix seconds;
 * - `Agent-Webhook-Signature`: `t=<timestamp>,<keyId>=<hex>`, where hex is
 *   HMAC-SHA256 with the endpoint's secret over `<timestamp>.<body>` (the
 *   body's exact bytes), and keyId names the secret, so secrets can rotate.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The headers a delivery carries, lowercase as Node reads them. */
export const WEBHOOK_HEADERS = {
  id: 'agent-webhook-id',
  timestamp: 'agent-webhook-timestamp',
  signature: 'agent-webhook-signature',
} as const;

/** What a key id looks like: 1 to 64 letters, digits, `_`, `.` or `-`, not `t`. */
export const WEBHOOK_KEY_ID_PATTERN = /^(?!t$)[A-Za-z0-9_.-]{1,64}$/;

/** The shortest webhook secret accepted, in characters. */
export const MIN_WEBHOOK_SECRET_CHARS = 32;

/** How far a delivery's timestamp may be from the receiver's clock by default, in seconds. */
export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 300;

/** The hex HMAC-SHA256 of `<timestamp>.<body>` with `secret`. */
function signatureOf(secret: string, timestamp: number, body: string | Uint8Array): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

/** The signing headers of one delivery attempt of `body`, signed now (or at `at`). */
export function signWebhook(
  key: { keyId: string; secret: string },
  eventId: string,
  body: string,
  at: Date = new Date(),
): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    [WEBHOOK_HEADERS.id]: eventId,
    [WEBHOOK_HEADERS.timestamp]: String(timestamp),
    [WEBHOOK_HEADERS.signature]: `t=${timestamp},${key.keyId}=${signatureOf(key.secret, timestamp, body)}`,
  };
}

/** What {@link verifyWebhook} is given: the secrets it accepts, and the delivery as it arrived. */
export interface WebhookToVerify {
  /** The secrets the receiver accepts, by key id (two during a rotation): `{ k1: '…' }`. */
  secrets: Readonly<Record<string, string>>;
  /** The request body exactly as received (the bytes, or their text): never the JSON parsed and serialized again. */
  body: string | Uint8Array;
  /** The request's headers (Node's `request.headers`, or a fetch `Headers`). */
  headers: Headers | Readonly<Record<string, string | readonly string[] | undefined>>;
  /**
   * How far the signed timestamp may be from now, in seconds (default 300): a replay of an old delivery is refused.
   */
  toleranceSeconds?: number;
  /** The receiver's clock, for tests. Default now. */
  now?: Date;
}

/** What {@link verifyWebhook} found: the event, signed by one of the secrets, or why the delivery is refused. */
export type WebhookVerification =
  | {
      ok: true;
      /** The event's id (deduplicate by it: a delivery may come more than once). */
      eventId: string;
      /** The key id whose secret signed it. */
      keyId: string;
      /** The body, parsed. */
      event: unknown;
    }
  | { ok: false; problem: string };

/**
 * Checks a webhook delivery of the durable agent worker: its
 * `Agent-Webhook-Signature` must be HMAC-SHA256 over `<timestamp>.<body>`
 * with one of `secrets` (found by the key id it names), its timestamp within
 * `toleranceSeconds` of now, and its `Agent-Webhook-Id` the body's `id`.
 * Never throws: answers `{ ok: false, problem }` saying what was wrong (answer
 * such a request 400 and process nothing), or `{ ok: true, eventId, keyId,
 * event }`. Comparisons take the same time whatever the signature.
 */
export function verifyWebhook(delivery: WebhookToVerify): WebhookVerification {
  const header = (name: string): string | undefined => {
    const { headers } = delivery;
    // Node gives lowercase names; a record of someone else's may keep the sender's case.
    const record = headers as Record<string, string | readonly string[] | undefined>;
    const value =
      typeof (headers as Headers).get === 'function'
        ? ((headers as Headers).get(name) ?? undefined)
        : (record[name] ?? record[Object.keys(record).find((k) => k.toLowerCase() === name) ?? name]);
    return typeof value === 'string' ? value : Array.isArray(value) ? value[0] : undefined;
  };
  const signature = header(WEBHOOK_HEADERS.signature);
  if (!signature) return { ok: false, problem: `No ${WEBHOOK_HEADERS.signature} header: the delivery is not signed.` };
  const parts = new Map<string, string>();
  for (const part of signature.split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) parts.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const t = parts.get('t');
  if (!t || !/^\d{1,12}$/.test(t))
    return { ok: false, problem: `${WEBHOOK_HEADERS.signature} has no timestamp (t=<unix seconds>).` };
  const timestamp = Number(t);
  const tolerance = delivery.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS;
  const now = Math.floor((delivery.now ?? new Date()).getTime() / 1000);
  if (Math.abs(now - timestamp) > tolerance)
    return {
      ok: false,
      problem: `The delivery was signed at ${timestamp}, ${Math.abs(now - timestamp)} s from this clock (${now}); at most ${tolerance} s are accepted (a replay, or a clock that is off).`,
    };
  const named = [...parts.keys()].filter((k) => k !== 't');
  const keyId = named.find((k) => Object.hasOwn(delivery.secrets, k));
  if (keyId === undefined)
    return {
      ok: false,
      problem: `The delivery is signed with key ${named.join(', ') || '(none)'}, and this receiver holds ${Object.keys(delivery.secrets).join(', ') || 'no key'}.`,
    };
  const expected = Buffer.from(signatureOf(delivery.secrets[keyId], timestamp, delivery.body), 'hex');
  const given = Buffer.from(/^[0-9a-f]{64}$/i.test(parts.get(keyId)!) ? parts.get(keyId)! : '', 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return {
      ok: false,
      problem: `The signature of key ${keyId} does not match the body (a changed body, a body parsed and serialized again, or another secret).`,
    };
  let event: unknown;
  try {
    event = JSON.parse(typeof delivery.body === 'string' ? delivery.body : Buffer.from(delivery.body).toString('utf8'));
  } catch {
    return { ok: false, problem: 'The body is signed but is not JSON.' };
  }
  const eventId = (event as { id?: unknown } | null)?.id;
  if (typeof eventId !== 'string') return { ok: false, problem: 'The body has no id.' };
  const idHeader = header(WEBHOOK_HEADERS.id);
  if (idHeader !== undefined && idHeader !== eventId)
    return { ok: false, problem: `${WEBHOOK_HEADERS.id} (${idHeader}) is not the body's id (${eventId}).` };
  return { ok: true, eventId, keyId, event };
}
