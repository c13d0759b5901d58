/**
 * The webhooks of `npm start` (docs/notifications.md): endpoints from a JSON
 * file (`AGENT_WEBHOOKS_FILE`, readable by its owner only, since it holds
 * their secrets), or one endpoint from `AGENT_WEBHOOK_URL` and
 * `AGENT_WEBHOOK_SECRET` (`keyId:secret`). Read when the worker starts, so
 * the CLI and `npm run api` never open the file.
 */
import path from 'node:path';
import { ConfigError } from '../common/errors';
import { readPrivateFile } from '../common/private-file';
import { describeBadNotificationOptions, type NotificationOptions } from '../notifications/options';

/** Where the webhooks are: a file, or one endpoint's URL and secret (the configuration checked they go together). */
export interface WebhookSource {
  file?: string;
  url?: string;
  /** `keyId:secret`. */
  secret?: string;
}

/** The variable naming the webhooks file. */
const FILE_VARIABLE = 'AGENT_WEBHOOKS_FILE';

/** The name of the endpoint of `AGENT_WEBHOOK_URL`. */
export const SINGLE_ENDPOINT_NAME = 'webhook';

/**
 * The notification options of `source`, undefined when it names none. Throws a `ConfigError` saying what is wrong: a
 * file that is missing or readable by others, text that is not JSON, an endpoint or option that is not right (never
 * quoting a secret), a secret that is not `keyId:secret`.
 */
export function readWebhookSettings(source: WebhookSource): NotificationOptions | undefined {
  if (source.file !== undefined) {
    const where = `${FILE_VARIABLE}=${source.file}`;
    const text = readPrivateFile(path.resolve(source.file), `${where}: the webhooks file`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new ConfigError(`${where}: the webhooks file is not valid JSON: ${(err as Error).message}.`);
    }
    // A list of endpoints, or the options themselves ({"endpoints": [...], "maxBackoffMs": ...}).
    const options = Array.isArray(parsed) ? { endpoints: parsed } : parsed;
    return checked(options, where, 'the file');
  }
  if (source.url === undefined || source.secret === undefined) return undefined;
  const colon = source.secret.indexOf(':');
  if (colon <= 0)
    throw new ConfigError(
      'AGENT_WEBHOOK_SECRET must be keyId:secret, such as k1:<64 hex digits> (make one with: echo k1:$(openssl rand -hex 32)); the key id names the secret in each signature.',
    );
  const options = {
    endpoints: [
      {
        name: SINGLE_ENDPOINT_NAME,
        url: source.url,
        keyId: source.secret.slice(0, colon),
        secret: source.secret.slice(colon + 1),
      },
    ],
  };
  // Each problem named by the variable it comes from.
  const at = `endpoint.endpoints[0] ("${SINGLE_ENDPOINT_NAME}")`;
  const problems = describeBadNotificationOptions(options, 'endpoint').map((p) =>
    p
      .replace(`${at}.url`, 'AGENT_WEBHOOK_URL')
      .replace(`${at}.keyId`, 'the key id of AGENT_WEBHOOK_SECRET (before ":")')
      .replace(`${at}.secret`, 'the secret of AGENT_WEBHOOK_SECRET (after ":")')
      .replace('set allowHttp: true on the endpoint', 'give the endpoint in AGENT_WEBHOOKS_FILE with allowHttp: true'),
  );
  if (problems.length > 0) throw new ConfigError(`${problems.join('; ')}.`);
  return options;
}

/** `options`, or a `ConfigError` naming its problems and where they come from. */
function checked(options: unknown, where: string, what: string): NotificationOptions {
  const problems = describeBadNotificationOptions(options, what);
  if (problems.length > 0) throw new ConfigError(`${where}: ${problems.join('; ')}.`);
  return options as NotificationOptions;
}
