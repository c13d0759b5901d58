/** The pairing rules over a stored transcript, as tests check it. */
import type { ChatMessage } from '../../src/contract/messages';
import { findPairingProblems, type PairingItem, type PairingProblem } from '../../src/core/pairing';

/** What breaks the pairing rules in `messages` (none for a transcript a provider accepts). */
export function pairingProblemsOf(messages: readonly ChatMessage[]): PairingProblem[] {
  const items: PairingItem[] = messages.map((m) =>
    m.role === 'assistant'
      ? { role: m.role, callIds: m.tool_calls?.map((c) => c.id) }
      : m.role === 'tool'
        ? { role: m.role, answers: m.tool_call_id }
        : { role: m.role },
  );
  return findPairingProblems(items);
}
