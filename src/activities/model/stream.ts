/**
 * Where a call's answer streams to people while the model speaks. With an
 * output guardrail the stream is held: nothing of the answer is sent until
 * it has passed.
 */
import { heartbeatWhileRunning } from '../activity-context';
import { DeltaPublisher } from '../deltas';
import type { ModelEnv, PreparedCall } from './prepare';

/** One attempt's stream of the answer. */
export interface AnswerStream {
  publisher: DeltaPublisher;
  /** True when the answer is held until the output guardrails have passed it. */
  held: boolean;
  /**
   * Ends the stream (`ok`: the answer stands), heartbeating while its last pieces are written (a long answer has many).
   */
  end(ok: boolean): Promise<void>;
}

/** Opens the stream of this attempt's answer, held when output guardrails check it. */
export function openAnswerStream({ deps, tables }: ModelEnv, call: PreparedCall): AnswerStream {
  const held = call.guards.output.length > 0;
  const { conversationId } = call.input;
  const publisher = new DeltaPublisher(
    deps.pool,
    tables,
    { conversationId, responseKey: call.responseKey, attempt: call.activity.info.attempt },
    held,
  );
  return {
    publisher,
    held,
    async end(ok) {
      const stopHeartbeats = heartbeatWhileRunning(call.activity);
      try {
        await publisher.end(ok);
      } finally {
        stopHeartbeats();
      }
    },
  };
}
