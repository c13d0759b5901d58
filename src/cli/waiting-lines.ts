/** What a conversation waits for, as `show` prints it: people, events, a time to come back. */
import type { ConversationState } from '../contract';

/** One line per thing the conversation waits for, or none when it waits for nothing. */
export function formatWaiting(
  state: Pick<ConversationState, 'pendingApprovals' | 'waitingBelow' | 'eventWaits' | 'comeBacks'>,
): string[] {
  const lines: string[] = [];
  const people = state.pendingApprovals.length + (state.waitingBelow?.length ?? 0);
  if (people > 0) lines.push(`waiting for a person: ${people} call${people === 1 ? '' : 's'} (cli pending lists them)`);
  for (const w of state.eventWaits ?? [])
    lines.push(
      `waiting for the event ${w.event} with key ${w.key}: ${w.toolName} (${w.toolCallId}), since ${w.since}, until ${w.deadlineAt}`,
    );
  for (const c of state.comeBacks ?? [])
    lines.push(
      `coming back at ${c.at}: ${c.note.slice(0, 100)} (come-back ${c.comeBackId}${c.requestedBy ? `, asked by ${c.requestedBy}` : ''})`,
    );
  return lines;
}
