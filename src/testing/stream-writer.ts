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

/** Streams `plan` on `exchange`; resolves when the stream ended, stalled until the connection closed, or was cut. */
export async function writeChatStream(
  exchange: Exchange,
  plan: CompletionPlan,
  options: StreamOptions = {},
): Promise<void> {
  const { fault, script = {} } = options;
  const events = streamEvents(plan, script);
  const delayMs = Math.max(0, script.chunkDelayMs ?? 0);
  const keepAlive = Math.max(0, Math.floor(script.keepAlive ?? 0));
  const stallAfter =
    script.stallAfterChunks === undefined ? undefined : Math.max(0, Math.floor(script.stallAfterChunks));

  exchange.startStream();
  let writes = 0;
  /** Paces writes; false when the connection closed meanwhile. */
  const beforeWrite = async (): Promise<boolean> => {
    if (writes++ > 0) {
      if (delayMs > 0) return exchange.wait(delayMs);
      await new Promise((resolve) => setImmediate(resolve));
    }
    return !exchange.isClosed;
  };
  const stall = async (): Promise<void> => {
    await exchange.flush();
    await exchange.closed;
  };

  for (let i = 0; i < keepAlive; i++) {
    if (!(await beforeWrite())) return;
    exchange.write(KEEP_ALIVE_LINE);
  }
  let dataChunks = 0;
  let contentPieces = 0;
  for (const event of events) {
    if (stallAfter !== undefined && dataChunks >= stallAfter) return stall();
    if (!(await beforeWrite())) return;
    if (fault?.kind === 'drop' && event.part !== 'role' && contentPieces >= fault.afterContentPieces) {
      await exchange.flush();
      exchange.destroy();
      return;
    }
    exchange.write(`data: ${event.data}\n\n`);
    dataChunks++;
    if (event.part === 'content') contentPieces++;
    if (event.cutAfter) {
      await exchange.flush();
      exchange.destroy();
      return;
    }
  }
  if (stallAfter !== undefined && dataChunks >= stallAfter) return stall();
  await new Promise((resolve) => setImmediate(resolve));
  exchange.end();
}
