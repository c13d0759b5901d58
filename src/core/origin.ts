/**
 * What the model calls of a turn are told about where it comes from, for the
 * worker's checks of its calls (`needsApproval`, tool guardrails) and, in the
 * child conversation of an agent called as a tool, for the agent tool's
 * output extractor. Pure.
 */
import type { TurnOrigin } from '../contract/activities';
import type { CoreState } from './state';

/** The turn's requesters and, in a child conversation, its caller; nothing when neither is known. */
export function turnOrigin(s: CoreState): { origin?: TurnOrigin } {
  const requesters = s.turn.requesters;
  const caller = s.input.calledBy;
  if (requesters.length === 0 && caller === undefined) return {};
  const callerAgent = caller?.callerAgent;
  return {
    origin: {
      ...(requesters.length > 0 ? { requestedBy: [...requesters] } : {}),
      ...(caller
        ? {
            rootConversationId: caller.rootConversationId,
            calledAs: {
              ...(callerAgent !== undefined ? { agent: callerAgent } : {}),
              toolName: caller.toolName,
              callKey: caller.callKey,
            },
          }
        : {}),
    },
  };
}
