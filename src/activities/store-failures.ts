/**
 * A write PostgreSQL refused, as the failure the workflow reads. Retrying a
 * refused value cannot help, so it fails at once as `StoreRefused` (never
 * retried, whatever the activity's retry policy), and the workflow settles
 * what it was writing instead of waiting on it forever.
 */
import { ApplicationFailure } from '@temporalio/common';
import { describeRefusal, isRefusedValue, ValuesRefusedError } from '../db/errors';
import { DisplacedRunError } from '../db/transcript-store';
import { ActivityErrorType, type StoreRefusedDetails } from '../contract/activities';

/**
 * `err` as a non-retryable `StoreRefused` failure when it is a value PostgreSQL refused, as `RunDisplaced` when the
 * writing run was displaced; any other error as it is.
 */
export function asStoreFailure(err: unknown): unknown {
  if (err instanceof DisplacedRunError)
    return ApplicationFailure.nonRetryable(err.message, ActivityErrorType.RunDisplaced);
  if (!isRefusedValue(err)) return err;
  const details: StoreRefusedDetails = { refusedSeqs: err instanceof ValuesRefusedError ? err.refusedSeqs : [] };
  const message =
    err instanceof ValuesRefusedError ? err.message : `PostgreSQL refused a value: ${describeRefusal(err)}`;
  return ApplicationFailure.create({
    message: `${message} (retrying cannot help)`,
    type: ActivityErrorType.StoreRefused,
    nonRetryable: true,
    details: [details],
  });
}

/**
 * Runs a store operation of an activity; a value PostgreSQL refuses fails it as `StoreRefused` ({@link
 * asStoreFailure}).
 */
export async function failOnRefusal<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (err) {
    throw asStoreFailure(err);
  }
}
