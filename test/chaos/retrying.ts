/** Client calls of the chaos run, tried again while the faults it injects last. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { AgentClient } from '../../src/client/client';
import { ConversationClosedError, InvalidConversationInputError, MessageTooLargeError } from '../../src/common/errors';
import type { RunLog } from './run-log';

/** What a call tried again needs: the client, the run log (which counts the retries) and the run's hard stop. */
export interface RetryContext {
  client: AgentClient;
  runLog: RunLog;
  /** Aborted at the run's hard stop. */
  signal: AbortSignal;
}

/** Errors a retry cannot fix. */
function isPermanent(err: unknown): boolean {
  return (
    err instanceof TypeError ||
    err instanceof InvalidConversationInputError ||
    err instanceof ConversationClosedError ||
    err instanceof MessageTooLargeError
  );
}

/**
 * Runs `fn` (one client call) until it succeeds, with backoff, each attempt
 * with an RPC deadline. Throws the last error after `timeoutMs`.
 */
export async function retrying<T>(ctx: RetryContext, fn: () => Promise<T>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let delay = 200;
  for (;;) {
    try {
      return await ctx.client.temporal.connection.withDeadline(Date.now() + 10_000, fn);
    } catch (err) {
      if (isPermanent(err) || ctx.signal.aborted || Date.now() + delay > deadline) throw err;
      ctx.runLog.clientRetries++;
      await sleep(delay, undefined, { signal: ctx.signal }).catch(() => undefined);
      delay = Math.min(Math.round(delay * 1.6), 3_000);
    }
  }
}
