/**
 * The state a stream that follows a turn reads. While no worker can answer
 * (the only worker restarting, a server failing over), the stream is kept
 * open and the state asked for again, until it is answered or the stream
 * ends: a slow restart delays what the person sees, it does not break it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isWorkerOutage, type AgentClient } from '../client/client';
import type { ConversationState } from '../contract';

/** How long a follower waits before asking again after a worker outage. */
export const OUTAGE_RETRY_MS = 1_000;

/**
 * The conversation's state; through a worker outage ({@link isWorkerOutage})
 * asked again every {@link OUTAGE_RETRY_MS} until `signal` aborts (then the
 * last failure is thrown). Any other failure is thrown at once.
 */
export async function followedState(
  client: AgentClient,
  conversationId: string,
  signal: AbortSignal,
): Promise<ConversationState> {
  for (;;) {
    try {
      return await client.state(conversationId);
    } catch (err) {
      if (!isWorkerOutage(err) || signal.aborted) throw err;
      await sleep(OUTAGE_RETRY_MS, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) throw err;
    }
  }
}
