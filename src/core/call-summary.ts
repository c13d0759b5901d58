/**
 * The summary of a started call's activity, its number in the turn and who
 * approved it read from the conversation's state: for a tool's run
 * (`calls.ts`) and, within its child conversation's summary, for an agent
 * called as a tool (`agents.ts`). The text is `summaries.ts`'s. Pure.
 */
import type { BatchCall } from './batch';
import type { CoreState } from './state';
import { toolCallSummary as describeToolCall, whoDecided } from './summaries';

/** The summary of a started call's activity: `issue_refund, call 2 of turn 5, approved by alice`. */
export function toolCallSummary(s: CoreState, call: BatchCall): string {
  const approvedBy = call.decision?.approved
    ? whoDecided(call.decision.decidedBy, call.decision.authenticated)
    : undefined;
  return describeToolCall(
    call.name,
    s.turn.callNumbers.get(call.id) ?? s.turn.callNumbers.size,
    s.kept.turns,
    approvedBy,
  );
}
