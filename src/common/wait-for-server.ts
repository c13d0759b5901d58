/**
 * Waiting at start-up for a server that does not answer yet (PostgreSQL,
 * Temporal): one restarting (a deploy, a failover, a maintenance window)
 * delays a worker's start instead of failing it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { logger } from './logger';

/**
 * Runs `attempt` until it succeeds. While it fails in a way `unreachable`
 * recognises, it tries again (every 0.25 s, growing to 2 s) for at most
 * `forMs`, logging once; then, or at once for any other failure, it throws
 * the last error (its message saying how long it waited, when it did).
 */
export async function waitForServer<T>(what: string, attempt: () => Promise<T>, unreachable: (err: unknown) => boolean, forMs: number): Promise<T> {
  const started = Date.now();
  let warned = false;
  for (let tries = 1; ; tries++) {
    try {
      const result = await attempt();
      if (warned) logger.info({ waitedMs: Date.now() - started }, `${what} is reachable again`);
      return result;
    } catch (err) {
      if (!unreachable(err) || Date.now() - started >= forMs) {
        if (warned && err instanceof Error) err.message = `${err.message} (after waiting ${Math.round((Date.now() - started) / 1000)} s for ${what})`;
        throw err;
      }
      if (!warned) logger.warn({ error: (err as Error).message, waitUpToMs: forMs }, `${what} does not answer; waiting for it before starting`);
      warned = true;
      await sleep(Math.min(250 * tries, 2_000));
    }
  }
}
