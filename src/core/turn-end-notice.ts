/**
 * Announcing the end of a turn that waited for a person: the turn notes the
 * calls that waited as it asks for them, and its end hands them to the
 * `announceTurnEnd` activity, which writes a `turn.ended_after_wait`
 * notification. The announcement is a command runs begun before it never
 * issued, so it is made only where `turn-end-notification` is patched in.
 * Pure.
 */
import type { ApprovalRequest } from '../contract/activities';
import type { TurnEndNotice } from '../contract/turn-ends';
import type { TurnRecord } from '../contract/turn-records';
import type { CoreState } from './state';

/** The turn asks a person to decide these calls: its end will say so. */
export function noteWaiting(s: CoreState, waiting: readonly ApprovalRequest[]): void {
  if (waiting.length === 0) return;
  const waited = (s.turn.waited ??= []);
  for (const { callKey, toolCallId, toolName } of waiting) waited.push({ callKey, toolCallId, toolName });
}

/**
 * What `announceTurnEnd` is given at the end of a turn with calls that waited for a person, with the activity's
 * summary; undefined for a turn none of whose calls waited, and in runs begun before the announcement (the patch's
 * marker is written only for a turn that waited).
 */
export function turnEndNotice(
  s: CoreState,
  record: TurnRecord,
): { notice: TurnEndNotice; summary: string } | undefined {
  const waited = s.turn.waited;
  if (!waited?.length || !s.env.allows('turn-end-notification')) return undefined;
  const notice: TurnEndNotice = {
    conversationId: s.id,
    turnId: s.env.newId(),
    turn: s.kept.turns,
    outcome: record.outcome,
    ...(record.error !== undefined ? { error: record.error } : {}),
    ...(record.answerSeq !== undefined ? { answerSeq: record.answerSeq } : {}),
    ...(record.requestedBy?.length ? { requestedBy: record.requestedBy } : {}),
    waited: [...waited],
    endedAt: s.env.now(),
  };
  const calls = waited.length === 1 ? '1 call' : `${waited.length} calls`;
  return { notice, summary: `turn ${s.kept.turns} ${record.outcome} after ${calls} waited for a person` };
}
