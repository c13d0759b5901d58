/**
 * Retries a database operation while PostgreSQL cannot be reached, inside an
 * activity: the wait heartbeats (so the activity is not taken for dead) and
 * ends when the activity is cancelled. A database outage then delays a model
 * call instead of using up its attempts. Errors that are not about the
 * connection (a constraint, bad SQL) are thrown at once; of those, a value
 * PostgreSQL refuses (`isRefusedValue` in `errors.ts`) is one no retry can fix, which
 * the activities report as a `StoreRefused` failure.
 */
import { Context } from '@temporalio/activity';
import { beat } from './activity-context';
import { logger } from '../common/logger';
import { isConnectionError } from '../db/errors';

/** How long a database operation is retried before the error is thrown (the activity's own retry policy takes over). */
export const DATABASE_RETRY_FOR_MS = 2 * 60_000;

/**
 * Runs `operation`, retrying it (1 s, 2 s, … up to 5 s apart) while the
 * database is unreachable, for at most `retryForMs`. Call only inside an activity.
 */
export async function withDatabaseRetry<T>(
  what: string,
  operation: () => Promise<T>,
  retryForMs = DATABASE_RETRY_FOR_MS,
): Promise<T> {
  const context = Context.current();
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (err) {
      if (!isConnectionError(err) || Date.now() - started >= retryForMs) throw err;
      const waitMs = Math.min(1000 * attempt, 5000);
      if (attempt === 1)
        logger.warn({ what, error: (err as Error).message }, 'PostgreSQL is unreachable; retrying until it is back');
      beat(context);
      await context.sleep(waitMs); // throws when the activity is cancelled
      beat(context);
    }
  }
}
