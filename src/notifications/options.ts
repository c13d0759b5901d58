/**
 * What a worker delivers notifications with: its webhook endpoints and how
 * it retries (the plugin's `notifications` option), checked before anything
 * starts, each problem named with its limit and the way out.
 */
import { NOTIFICATION_TYPES, type NotificationType } from '../contract/notifications';
import { MIN_WEBHOOK_SECRET_CHARS, WEBHOOK_KEY_ID_PATTERN } from '../common/webhook-signature';

/** A webhook endpoint notifications are posted to. */
export interface WebhookEndpoint {
  /**
   * Names the endpoint in deliveries, metrics and the CLI: 1 to 64 letters, digits, `_`, `.` or `-`. Its deliveries
   * are kept under it: rename it and the new name starts with the events written from then on.
   */
  name: string;
  /** Where to POST: `https://…`, or `http://` to this machine (`localhost`, `127.0.0.1`, `::1`) unless `allowHttp`. */
  url: string;
  /** Names the secret in each signature (`t=…,<keyId>=…`), so a receiver can hold two during a rotation. */
  keyId: string;
  /** The HMAC-SHA256 secret, at least 32 characters. */
  secret: string;
  /** The types of events it wants (docs/notifications.md). Default: all. */
  events?: readonly NotificationType[];
  /** Allow plain `http://` to a host other than this machine (the body and signature travel unencrypted). */
  allowHttp?: boolean;
}

/** The plugin's `notifications` option. */
export interface NotificationOptions {
  /** Where to deliver. Every worker of a task queue should have the same endpoints. */
  endpoints: readonly WebhookEndpoint[];
  /** How long an attempt may take before it counts as failed, ms. Default 10 000. */
  timeoutMs?: number;
  /** The longest wait between two attempts of an event, ms (waits double from 1 s, with jitter). Default 300 000. */
  maxBackoffMs?: number;
  /** After this many failed attempts an event counts as failing (it is still tried, forever). Default 5. */
  failingAfterAttempts?: number;
  /** Events delivered at once to one endpoint (each of a different call). Default 4. */
  concurrency?: number;
  /** How often a worker looks for due events besides being woken by new ones, ms. Default 2 000. */
  pollEveryMs?: number;
  /** How long delivered events are kept before they are deleted, in days. Default 7. */
  keepDeliveredDays?: number;
}

/** The options with every default filled in. */
export type ResolvedNotificationOptions = Required<Omit<NotificationOptions, 'endpoints'>> &
  Pick<NotificationOptions, 'endpoints'>;

/** What an endpoint name looks like. */
export const ENDPOINT_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/** Hosts plain http may reach without `allowHttp`. */
const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The numeric options: their default and bounds. */
const NUMBERS = {
  timeoutMs: { default: 10_000, min: 100, max: 120_000 },
  maxBackoffMs: { default: 300_000, min: 1_000, max: 86_400_000 },
  failingAfterAttempts: { default: 5, min: 1, max: 1_000 },
  concurrency: { default: 4, min: 1, max: 64 },
  pollEveryMs: { default: 2_000, min: 50, max: 60_000 },
  keepDeliveredDays: { default: 7, min: 1, max: 3_650 },
} as const;

/** The options with their defaults. Call {@link describeBadNotificationOptions} first. */
export function resolveNotificationOptions(options: NotificationOptions): ResolvedNotificationOptions {
  const resolved = { endpoints: options.endpoints } as ResolvedNotificationOptions;
  for (const [key, spec] of Object.entries(NUMBERS) as [keyof typeof NUMBERS, { default: number }][])
    resolved[key] = options[key] ?? spec.default;
  return resolved;
}

/**
 * What is wrong with `options`, one sentence per problem (empty when nothing is): `where` names them (e.g.
 * `notifications`, or the file they came from). Secrets are never quoted.
 */
export function describeBadNotificationOptions(options: unknown, where: string): string[] {
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    return [`${where} must be an object such as { endpoints: [{ name, url, keyId, secret }] }`];
  const o = options as Record<string, unknown>;
  const problems: string[] = [];
  const known = ['endpoints', ...Object.keys(NUMBERS)];
  for (const key of Object.keys(o))
    if (!known.includes(key)) problems.push(`${where} has unknown field "${key}" (known: ${known.join(', ')})`);
  for (const [key, spec] of Object.entries(NUMBERS)) {
    const value = o[key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < spec.min || value > spec.max)
      problems.push(`${where}.${key} must be a whole number from ${spec.min} to ${spec.max} (default ${spec.default})`);
  }
  if (!Array.isArray(o.endpoints)) {
    problems.push(`${where}.endpoints must be a list of endpoints, each { name, url, keyId, secret }`);
    return problems;
  }
  const names = new Set<string>();
  o.endpoints.forEach((endpoint: unknown, i) => {
    const at = `${where}.endpoints[${i}]`;
    if (typeof endpoint !== 'object' || endpoint === null || Array.isArray(endpoint)) {
      problems.push(`${at} must be an object { name, url, keyId, secret }`);
      return;
    }
    problems.push(...describeBadEndpoint(endpoint as Record<string, unknown>, at, names));
  });
  return problems;
}

/** The problems of one endpoint; `names` collects the names seen so far, to refuse a second of one name. */
function describeBadEndpoint(e: Record<string, unknown>, at: string, names: Set<string>): string[] {
  const problems: string[] = [];
  const fields = ['name', 'url', 'keyId', 'secret', 'events', 'allowHttp'];
  for (const key of Object.keys(e))
    if (!fields.includes(key)) problems.push(`${at} has unknown field "${key}" (known: ${fields.join(', ')})`);
  const name = e.name;
  const label = typeof name === 'string' ? `${at} ("${name}")` : at;
  if (typeof name !== 'string' || !ENDPOINT_NAME_PATTERN.test(name))
    problems.push(`${at}.name must be 1 to 64 letters, digits, "_", "." or "-", such as "ops-slack"`);
  else if (names.has(name)) problems.push(`${label}: two endpoints are named "${name}"; give each its own name`);
  else names.add(name);
  problems.push(...describeBadUrl(e.url, e.allowHttp, label));
  if (typeof e.keyId !== 'string' || !WEBHOOK_KEY_ID_PATTERN.test(e.keyId))
    problems.push(
      `${label}.keyId must be 1 to 64 letters, digits, "_", "." or "-" (not "t"), such as "k1": it names the secret in each signature`,
    );
  if (typeof e.secret !== 'string' || e.secret.length < MIN_WEBHOOK_SECRET_CHARS)
    problems.push(
      `${label}.secret must be at least ${MIN_WEBHOOK_SECRET_CHARS} characters${typeof e.secret === 'string' ? ` (it has ${e.secret.length})` : ''}; make one with: openssl rand -hex 32`,
    );
  if (e.events !== undefined) {
    const events = e.events;
    if (!Array.isArray(events) || events.length === 0)
      problems.push(`${label}.events must be a non-empty list of event types (${NOTIFICATION_TYPES.join(', ')})`);
    else
      for (const type of events)
        if (!NOTIFICATION_TYPES.includes(type as NotificationType))
          problems.push(
            `${label}.events names ${JSON.stringify(type)}, not an event type (${NOTIFICATION_TYPES.join(', ')})`,
          );
  }
  if (e.allowHttp !== undefined && typeof e.allowHttp !== 'boolean')
    problems.push(`${label}.allowHttp must be true or false`);
  return problems;
}

/** The problems of an endpoint's URL. */
function describeBadUrl(value: unknown, allowHttp: unknown, label: string): string[] {
  if (typeof value !== 'string') return [`${label}.url must be an https:// URL`];
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return [`${label}.url is not a URL; write it whole, such as https://hooks.example.com/agent`];
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return [`${label}.url must be https:// (or http:// to this machine), not ${url.protocol}`];
  if (url.username || url.password)
    return [
      `${label}.url holds a user name or password, which fetch refuses to send; put a token in the path or query`,
    ];
  if (url.protocol === 'http:' && !LOCAL_HOSTS.has(url.hostname) && allowHttp !== true)
    return [
      `${label}.url is plain http:// to ${url.hostname}: the body and its signature would cross the network unencrypted. ` +
        'Use https://, or set allowHttp: true on the endpoint for a network you trust',
    ];
  return [];
}
