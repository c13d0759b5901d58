/**
 * The scripted OpenAI-compatible model server: plays the model over real
 * loopback HTTP, validates every request like a provider and records it.
 * Answering one request is `handle-request.ts`'s; playing a reply is
 * `deliver-reply.ts`'s.
 *
 * @packageDocumentation
 */

import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { serverError } from './deliver-reply';
import { Exchange } from './exchange';
import { handleRequest } from './handle-request';
import { checkToolCallIdScheme } from './ids';
import { errorBody } from './provider-errors';
import type {
  ModelServer,
  ModelServerDialect,
  ModelServerOptions,
  RecordedRequest,
  Responder,
  ScriptedReply,
  ToolCallIdScheme,
} from './types';

export { DEFAULT_DROP_CONTENT, DEFAULT_SERVER_ERROR_MESSAGE } from './deliver-reply';
export { SCRIPTED_MODEL_ID } from './handle-request';
export { KEEP_ALIVE_LINE } from './stream-writer';

/** Message of the 500 answered when neither the queue nor a responder supplies a reply. */
export const NO_SCRIPTED_REPLY_MESSAGE =
  'Scripted model server: no scripted reply left for this request (the queue is empty and no responder is set).';

/** Start of the message of the 500 answered when the responder throws; the error's message follows. */
export const RESPONDER_FAILED_PREFIX = 'Scripted model server: the responder threw: ';

const LOOPBACK_HOSTS = new Set(['localhost', '::1', '[::1]']);

/**
 * Starts a scripted model server on a loopback address.
 *
 * @param options - host, port, dialect, an optional responder and the tool call id scheme
 * @returns the running server; its {@link ModelServer.url} goes to the SDK's `baseURL`
 * @throws when `host` is not a loopback address or `toolCallIds` is not a known scheme
 */
export async function startModelServer(options: ModelServerOptions = {}): Promise<ModelServer> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopback(host))
    throw new Error(`The scripted model server only listens on loopback addresses, not '${host}'.`);
  const dialect: ModelServerDialect = options.dialect ?? 'openai';
  const requests: RecordedRequest[] = [];
  const queue: ScriptedReply[] = [];
  let responder: Responder | undefined = options.responder;
  let toolCallIds: ToolCallIdScheme = checkToolCallIdScheme(options.toolCallIds ?? 'unique');
  let contextWindow = checkContextWindow(options.contextWindow);
  let closing = false;
  let closed: Promise<void> | undefined;
  /** Exchanges whose connection has not closed yet, so `close()` can wait until each has recorded `closedAt`. */
  const open = new Set<Exchange>();

  const nextReply = async (record: RecordedRequest): Promise<ScriptedReply> => {
    const queued = queue.shift();
    if (queued) return withTextDeltaChars(queued, options.textDeltaChars);
    if (!responder) return serverError(NO_SCRIPTED_REPLY_MESSAGE, 'no_scripted_reply');
    try {
      return withTextDeltaChars(await responder(record), options.textDeltaChars);
    } catch (err) {
      return serverError(
        RESPONDER_FAILED_PREFIX + (err instanceof Error ? err.message : String(err)),
        'responder_failed',
      );
    }
  };
  const context = {
    dialect,
    nextReply,
    currentToolCallIds: () => toolCallIds,
    currentContextWindow: () => contextWindow,
  };

  const server = http.createServer((req, res) => {
    const record: RecordedRequest = {
      index: requests.length,
      receivedAt: Date.now(),
      method: req.method ?? 'GET',
      path: (req.url ?? '/').split('?')[0],
      body: undefined,
      valid: true,
      aborted: false,
    };
    requests.push(record);
    const exchange = new Exchange(res, record, () => closing);
    open.add(exchange);
    void exchange.closed.then(() => open.delete(exchange));
    handleRequest(req, exchange, context).catch((err: unknown) => {
      exchange.send(500, errorBody(`Scripted model server failed: ${String(err)}`, 'server_error'));
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;

  return {
    url: `http://${urlHost}:${port}/v1`,
    requests,
    invalidRequests: () => requests.filter((r) => !r.valid),
    enqueue: (...replies: ScriptedReply[]) => {
      queue.push(...replies);
    },
    setResponder: (next: Responder | undefined) => {
      responder = next;
    },
    setToolCallIds: (scheme: ToolCallIdScheme) => {
      toolCallIds = checkToolCallIdScheme(scheme);
    },
    setContextWindow: (tokens: number | undefined) => {
      contextWindow = checkContextWindow(tokens);
    },
    close: () => {
      if (!closed) {
        closing = true;
        const exchanges = [...open].map((exchange) => exchange.closed);
        closed = new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }).then(async () => {
          await Promise.all(exchanges);
        });
      }
      return closed;
    },
  };
}

/**
 * `reply` with the server's {@link ModelServerOptions.textDeltaChars}, unless its own stream script sets its deltas'
 * size or pacing (`chunkDelayMs`: a paced stream keeps the pieces its timing was written for).
 */
function withTextDeltaChars(reply: ScriptedReply, textDeltaChars: number | undefined): ScriptedReply {
  if (textDeltaChars === undefined) return reply;
  if (reply.kind === 'delay') return { ...reply, then: withTextDeltaChars(reply.then, textDeltaChars) };
  if (reply.kind !== undefined && reply.kind !== 'message') return reply;
  if (reply.stream?.textDeltaChars !== undefined || reply.stream?.chunkDelayMs !== undefined) return reply;
  return { ...reply, stream: { ...reply.stream, textDeltaChars } };
}

function checkContextWindow(tokens: number | undefined): number | undefined {
  if (tokens !== undefined && !(Number.isInteger(tokens) && tokens > 0)) {
    throw new Error(`contextWindow must be a positive integer number of tokens, got ${String(tokens)}.`);
  }
  return tokens;
}

function isLoopback(host: string): boolean {
  return LOOPBACK_HOSTS.has(host) || /^127(\.\d{1,3}){3}$/.test(host);
}
