/**
 * A webhook receiver for the notification tests: a real node:http server
 * that records every delivery as it arrived (headers, the exact body, the
 * status it got), and hands the ones it accepts to the example receiver's
 * handler (examples/webhook-receiver.ts), which verifies the signature and
 * handles each event once. It can refuse (answer 500) or hold deliveries
 * (never answer) while a test wants it down.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { webhookHandler } from '../../examples/webhook-receiver';
import type { NotificationEvent } from '../../src/contract/notifications';

/** One request the receiver got. */
export interface RecordedDelivery {
  headers: http.IncomingHttpHeaders;
  /** The body as it arrived. */
  body: string;
  /** The status it was answered (undefined while held). */
  status?: number;
}

/** How the receiver answers: `ok` hands deliveries to the example handler; `fail` answers 500; `hold` never answers. */
export type ReceiverMode = 'ok' | 'fail' | 'hold';

/** A running test receiver. */
export interface TestReceiver {
  url: string;
  /** Every request, in the order it arrived. */
  readonly deliveries: RecordedDelivery[];
  /** The events the example handler handled: each once, in the order handled. */
  readonly handled: NotificationEvent[];
  mode: ReceiverMode;
  /** Requests being held now. */
  held(): number;
  close(): Promise<void>;
}

/** Starts a receiver on a free port of 127.0.0.1 that accepts deliveries signed with `secrets`. */
export async function startTestReceiver(secrets: Record<string, string>): Promise<TestReceiver> {
  const deliveries: RecordedDelivery[] = [];
  const handled: NotificationEvent[] = [];
  const handler = webhookHandler({ secrets, onEvent: (event) => void handled.push(event) });
  const holding = new Set<http.ServerResponse>();
  const receiver = {
    mode: 'ok' as ReceiverMode,
  };
  const server = http.createServer((request, response) => {
    const recorded: RecordedDelivery = { headers: request.headers, body: '' };
    deliveries.push(recorded);
    // Read here and by the example's handler alike: both listen before the first chunk flows.
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => (recorded.body = Buffer.concat(chunks).toString('utf8')));
    response.on('finish', () => (recorded.status = response.statusCode));
    if (receiver.mode === 'hold') {
      holding.add(response);
      response.on('close', () => holding.delete(response));
      return;
    }
    if (receiver.mode === 'fail') {
      request.on('end', () => response.writeHead(500, { 'content-type': 'text/plain' }).end('down for the test\n'));
      return;
    }
    handler(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${port}/hooks`,
    deliveries,
    handled,
    held: () => holding.size,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
}
