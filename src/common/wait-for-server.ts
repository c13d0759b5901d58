/**
 * Waiting at start-up for a server that does not answer yet (PostgreSQL,
 * Temporal): one restarting (a deploy, a failover, a maintenance window)
 * delays a worker's start instead of failing it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { logger } from './logger';

/** How long a starting worker waits for Temporal to answer, or to know its namespace. */
export const TEMPORAL_START_WAIT_MS = 60_000;

/**
 * True for a Temporal answer that means "not ready yet", not "no": the
 * namespace not found (a server that has just started, or whose database was
 * down, answers so until its namespace registry has loaded) or the service
 * unavailable (its database down: "GetNamespace operation failed … no usable
 * database connection found"). gRPC NOT_FOUND (5) and UNAVAILABLE (14).
 */
export function isTemporalNotReady(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (code === 14) return true;
  return code === 5 && err instanceof Error && /namespace/i.test(err.message);
}

/** Set by {@link endServerWaitsOn}: once aborted, no wait for a server goes on. */
let stopping: AbortSignal | undefined;

/**
 * Ends every wait for a server once `signal` aborts, those of this process's
 * start-up deep inside the worker's preparation too (PostgreSQL, search
 * attributes, the namespace): a worker stopped while it starts, whose servers
 * got the same Ctrl-C, would otherwise wait up to a minute for servers that
 * are gone. The waits then throw the signal's reason. `npm start` calls it
 * once; the library never does.
 */
export function endServerWaitsOn(signal: AbortSignal): void {
  stopping = signal;
}

/**
 * Runs `attempt` until it succeeds. While it fails in a way `unreachable`
 * recognises, it tries again (every 0.25 s, growing to 2 s) for at most
 * `forMs`, logging once; then, or at once for any other failure, it throws
 * the last error (its message saying how long it waited, when it did).
 * A stop ({@link endServerWaitsOn}) ends the wait with the stop's reason.
 */
export async function waitForServer<T>(
  what: string,
  attempt: () => Promise<T>,
  unreachable: (err: unknown) => boolean,
  forMs: number,
): Promise<T> {
  const started = Date.now();
  let warned = false;
  for (let tries = 1; ; tries++) {
    stopping?.throwIfAborted();
    try {
      const result = await attempt();
      if (warned) logger.info({ waitedMs: Date.now() - started }, `done waiting for ${what}`);
      return result;
    } catch (err) {
      if (!unreachable(err) || Date.now() - started >= forMs) {
        if (warned && err instanceof Error)
          err.message = `${err.message} (after waiting ${Math.round((Date.now() - started) / 1000)} s for ${what})`;
        throw err;
      }
      if (!warned)
        logger.warn(
          { error: (err as Error).message, waitUpToMs: forMs },
          `waiting for ${what} before starting: not ready yet`,
        );
      warned = true;
      // A stop during the pause ends it at once (the loop's next turn throws its reason).
      await sleep(Math.min(250 * tries, 2_000), undefined, stopping && { signal: stopping }).catch(() => undefined);
    }
  }
}
