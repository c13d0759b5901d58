/**
 * One request and its response on the scripted model server, tracking
 * whether and how the connection ended so the {@link RecordedRequest} can
 * say so (answered, aborted by the client, cut by the server), and what
 * answering it needs from the server ({@link RequestContext}).
 *
 * @packageDocumentation
 */

import type http from 'node:http';

import { randomAlphanumeric } from './ids';
import type { ModelServerDialect, RecordedRequest, ScriptedReply, ToolCallIdScheme } from './types';

/** What answering a request needs from the server; the settings are read when needed, since tests change them. */
export interface RequestContext {
  dialect: ModelServerDialect;
  /** The next scripted reply for the request (the queue's first, else the responder's). */
  nextReply: (record: RecordedRequest) => Promise<ScriptedReply>;
  currentToolCallIds: () => ToolCallIdScheme;
  currentContextWindow: () => number | undefined;
}

/** One request/response pair, tracking whether and how the connection ended. */
export class Exchange {
  /** Resolves when the response is finished or its connection is gone. */
  readonly closed: Promise<void>;
  private destroyedByServer = false;
  private done = false;
  private readonly requestId = `req_${randomAlphanumeric(24)}`;

  /**
   * @param res - the response to write
   * @param record - the request's record, updated as the exchange goes
   * @param serverClosing - whether the server is closing, so a connection it closes is not counted as aborted
   */
  constructor(
    private readonly res: http.ServerResponse,
    readonly record: RecordedRequest,
    serverClosing: () => boolean,
  ) {
    this.closed = new Promise<void>((resolve) => {
      res.once('close', () => {
        this.done = true;
        record.closedAt = Date.now();
        if (!res.writableFinished && !this.destroyedByServer && !serverClosing()) record.aborted = true;
        resolve();
      });
    });
  }

  /** Whether the response is finished or its connection gone: nothing more can be written. */
  get isClosed(): boolean {
    return this.done || this.res.destroyed;
  }

  /** Waits `ms` milliseconds; false when the connection closed first. */
  async wait(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const elapsed = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), ms);
    });
    const result = await Promise.race([elapsed, this.closed.then(() => false)]);
    clearTimeout(timer);
    return result && !this.isClosed;
  }

  /** Answers with an error the request itself caused, marking the record invalid. */
  reject(status: number, body: unknown): void {
    this.record.valid = false;
    this.record.error = { status, body };
    this.send(status, body);
  }

  /** Sends a complete response: strings verbatim, anything else as JSON. */
  send(status: number, body: unknown, headers: Record<string, string> = {}): void {
    if (this.isClosed || this.res.headersSent) return;
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    this.record.firstByteAt ??= Date.now();
    this.res.writeHead(status, {
      ...headers,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      'x-request-id': this.requestId,
    });
    this.res.end(text);
  }

  /** Starts a server-sent event stream: the headers go out at once. */
  startStream(): void {
    this.record.firstByteAt ??= Date.now();
    this.res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'x-request-id': this.requestId,
    });
    this.res.flushHeaders();
  }

  /** Writes part of a streamed response. */
  write(text: string): void {
    this.res.write(text);
  }

  /** Resolves once everything written so far has been handed to the socket. */
  flush(): Promise<void> {
    return new Promise((resolve) => {
      if (this.isClosed) resolve();
      else this.res.write('', () => resolve());
    });
  }

  /** Ends a streamed response normally. */
  end(): void {
    if (!this.isClosed) this.res.end();
  }

  /** Cuts the connection, as a provider that fails mid-answer does; not counted as aborted by the client. */
  destroy(): void {
    this.destroyedByServer = true;
    this.res.socket?.destroy();
    this.res.destroy();
  }
}

/** The request's body as text; undefined when the client went away while sending it. */
export async function readBody(req: http.IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of req) chunks.push(chunk as Buffer);
  } catch {
    return undefined;
  }
  return Buffer.concat(chunks).toString('utf8');
}
