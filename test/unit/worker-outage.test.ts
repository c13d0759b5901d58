import { describe, expect, it } from 'vitest';
import { ServiceError } from '@temporalio/client';
import { isWorkerOutage, NoWorkerAnsweredError } from '../../src/client/client';

// What a stream that follows a turn waits out (asking again) and what it
// reports: the query failures of a worker outage, as Temporal's client
// throws them, against failures of what was asked.

/** A gRPC failure as @grpc/grpc-js gives it, wrapped as the Temporal client wraps a failed query. */
function queryFailure(code: number, details: string): ServiceError {
  const grpc = Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
  return new ServiceError('Failed to query Workflow', { cause: grpc });
}

describe('a worker outage, as what waits for a turn (a stream, waitForTurn) tells it', () => {
  it('is no worker answering in time, a dropped or unavailable connection, or no poller on the task queue', () => {
    expect(isWorkerOutage(new NoWorkerAnsweredError('c-1', 'agent', 3_000))).toBe(true);
    expect(isWorkerOutage(queryFailure(14, 'UNAVAILABLE: No connection established'))).toBe(true);
    expect(isWorkerOutage(queryFailure(4, 'DEADLINE_EXCEEDED: context deadline exceeded'))).toBe(true);
    expect(isWorkerOutage(queryFailure(1, 'CANCELLED'))).toBe(true);
    expect(isWorkerOutage(queryFailure(9, 'no poller seen for task queue recently, worker may be down'))).toBe(true);
  });

  it('is not another failed precondition, a bad request, or an error of the workflow', () => {
    expect(isWorkerOutage(queryFailure(9, 'workflow execution already completed'))).toBe(false);
    expect(isWorkerOutage(queryFailure(3, 'INVALID_ARGUMENT: bad query'))).toBe(false);
    expect(isWorkerOutage(queryFailure(5, 'workflow not found for ID: c-1'))).toBe(false);
    expect(isWorkerOutage(new Error('Nondeterminism error'))).toBe(false);
    expect(isWorkerOutage(undefined)).toBe(false);
  });
});
