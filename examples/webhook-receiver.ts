/**
 * A receiver of the durable agent worker's webhooks (docs/notifications.md),
 * on node:http alone: it checks each delivery's signature, handles each
 * event once (deliveries come at least once: the same event may arrive
 * again, with the same id), and answers 2xx only once the event is handled,
 * so the worker retries anything that failed.
 *
 *   WEBHOOK_SECRETS=k1:<the endpoint's secret> PORT=8790 npx tsx examples/webhook-receiver.ts
 *
 * and give the worker the endpoint: AGENT_WEBHOOK_URL=http://127.0.0.1:8790/ AGENT_WEBHOOK_SECRET=k1:<secret>.
 * In a project of your own, import the check from the package: `import { verifyWebhook } from
 * 'durable-agent-worker/client'`. Here, in the checkout, it comes from the sources.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook } from '../src/client';
import type { NotificationEvent } from '../src/contract/notifications';

/** What the receiver needs: the secrets it accepts by key id, and what to do with each event. */
export interface WebhookReceiverOptions {
  /** `{ k1: '<secret>' }`; two during a rotation. */
  secrets: Record<string, string>;
  /** Handles one event; throwing makes the receiver answer 500, and the worker sends the event again later. */
  onEvent: (event: NotificationEvent) => void | Promise<void>;
  /**
   * The ids of the events handled so far. In memory here; a real receiver keeps them where it keeps what it does
   * (a table with the id as its key, written in the transaction that handles the event), so a restart remembers them.
   */
  handled?: Set<string>;
}

/** The largest body read, in bytes (events are far smaller). */
const MAX_BODY_BYTES = 1024 * 1024;

/** A request handler for node:http that verifies, deduplicates and hands each event to `onEvent` once. */
export function webhookHandler(options: WebhookReceiverOptions): http.RequestListener {
  const handled = options.handled ?? new Set<string>();
  return (request, response) => {
    const answer = (status: number, text: string): void => {
      response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(`${text}\n`);
    };
    if (request.method !== 'POST') return answer(405, 'POST only');
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    request.on('end', () => {
      if (size > MAX_BODY_BYTES) return answer(413, 'body too large');
      // The body's exact bytes: the signature covers them, not the JSON parsed and written again.
      const body = Buffer.concat(chunks);
      const verified = verifyWebhook({ secrets: options.secrets, body, headers: request.headers });
      if (!verified.ok) return answer(400, verified.problem);
      if (handled.has(verified.eventId)) return answer(200, 'already handled');
      handled.add(verified.eventId);
      Promise.resolve()
        .then(() => options.onEvent(verified.event as NotificationEvent))
        .then(
          () => answer(200, 'handled'),
          (err: unknown) => {
            handled.delete(verified.eventId); // not handled: the next delivery tries again
            answer(500, `could not handle it: ${(err as Error).message}`);
          },
        );
    });
  };
}

/** Starts a receiver on `port` (a free one by default) of 127.0.0.1; returns its URL and a way to stop it. */
export async function startWebhookReceiver(
  options: WebhookReceiverOptions & { port?: number; host?: string },
): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(webhookHandler(options));
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** `WEBHOOK_SECRETS=k1:secret[,k2:secret]` from the environment, as `{ k1: 'secret' }`. */
function secretsFromEnvironment(): Record<string, string> {
  const text = process.env.WEBHOOK_SECRETS ?? '';
  const secrets = Object.fromEntries(
    text
      .split(',')
      .filter((part) => part.includes(':'))
      .map((part) => [part.slice(0, part.indexOf(':')).trim(), part.slice(part.indexOf(':') + 1).trim()]),
  );
  if (Object.keys(secrets).length === 0)
    throw new Error("Set WEBHOOK_SECRETS to keyId:secret (the endpoint's keyId and secret), e.g. k1:<64 hex digits>.");
  return secrets;
}

if (require.main === module) {
  void startWebhookReceiver({
    secrets: secretsFromEnvironment(),
    port: Number(process.env.PORT ?? 8790),
    onEvent: (event) => {
      const call = event.call ? ` ${event.call.toolName} (${event.call.callKey})` : '';
      process.stdout.write(`${event.createdAt} ${event.type}${call} in ${event.conversationId}\n`);
    },
  }).then(({ url }) => process.stdout.write(`Receiving webhooks at ${url}\n`));
}
