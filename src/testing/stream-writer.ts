/**
 * Writes one streamed reply to its connection: paced, with the keep-alive
 * lines, stalls and cuts a {@link StreamScript} or a built-in fault asks for.
 *
 * @packageDocumentation
 */

import type { CompletionPlan } from './completion';
import type { Exchange } from './exchange';
import { streamEvents } from './stream-events';
import type { StreamScript } from './types';

/** The SSE comment line a `keepAlive` stream script sends, as DeepSeek does while a request is queued. */
export const KEEP_ALIVE_LINE = ': keep-alive\n\n';

/**
 * A fault injected into a stream. `drop`: after the role chunk and the first
 * `afterContentPieces` content pieces, destroy the socket.
 */
export type StreamFault = { kind: 'drop'; afterContentPieces: number };

/** What shapes one streamed reply: a built-in fault (`drop`) or a reply's own stream script. */
export interface StreamOptions {
  fault?: StreamFault;
  script?: StreamScript;
}

/**
 * How a script paces a stream, for both APIs' streams: the keep-alive lines
 * first, `chunkDelayMs` between writes, a stall after `stallAfterChunks` data
 * chunks, and the ways it ends (whole, cut, or held open).
 */
export function pacedStream(exchange: Exchange, script: StreamScript) {
  const delayMs = Math.max(0, script.chunkDelayMs ?? 0);
  const stallAfter =
    script.stallAfterChunks === undefined ? undefined : Math.max(0, Math.floor(script.stallAfterChunks));
  let writes = 0;
  /** Paces writes; false when the connection closed meanwhile. */
  const beforeWrite = async (): Promise<boolean> => {
    if (writes++ > 0) {
      if (delayMs > 0) return exchange.wait(delayMs);
      await new Promise((resolve) => setImmediate(resolve));
    }
    return !exchange.isClosed;
  };
  return {
    beforeWrite,
    /** Starts the stream with the script's keep-alive lines; false when the connection closed meanwhile. */
    async start(): Promise<boolean> {
      exchange.startStream();
      for (let i = 0; i < Math.max(0, Math.floor(script.keepAlive ?? 0)); i++) {
        if (!(await beforeWrite())) return false;
        exchange.write(KEEP_ALIVE_LINE);
      }
      return true;
    },
    /** True when the script stalls once `sent` data chunks are out. */
    stallsAt: (sent: number): boolean => stallAfter !== undefined && sent >= stallAfter,
    /** Sends nothing more and holds the connection until the client closes it. */
    async stall(): Promise<void> {
      await exchange.flush();
      await exchange.closed;
    },
    /** Cuts the connection after what was written. */
    async cut(): Promise<void> {
      await exchange.flush();
      exchange.destroy();
    },
    /** Ends the stream whole. */
    async end(): Promise<void> {
      await new Promise((resolve) => setImmediate(resolve));
      exchange.end();
    },
  };
}

/** Streams `plan` on `exchange`; resolves when the stream ended, stalled until the connection closed, or was cut. */
export async function writeChatStream(
  exchange: Exchange,
  plan: CompletionPlan,
  options: StreamOptions = {},
): Promise<void> {
  const { fault, script = {} } = options;
  const events = streamEvents(plan, script);
  const pace = pacedStream(exchange, script);
  if (!(await pace.start())) return;
  let dataChunks = 0;
  let contentPieces = 0;
  for (const event of events) {
    if (pace.stallsAt(dataChunks)) return pace.stall();
    if (!(await pace.beforeWrite())) return;
    if (fault?.kind === 'drop' && event.part !== 'role' && contentPieces >= fault.afterContentPieces) return pace.cut();
    exchange.write(`data: ${event.data}\n\n`);
    dataChunks++;
    if (event.part === 'content') contentPieces++;
    if (event.cutAfter) return pace.cut();
  }
  if (pace.stallsAt(dataChunks)) return pace.stall();
  return pace.end();
}
