/**
 * What the conversation says went wrong without stopping: inputs it ignored
 * and what PostgreSQL refused to store. Kept as `lastError` in the state and
 * logged. Pure.
 */
import type { CoreState } from './state';

/** Ignores an input, saying why in `lastError` and the log. Returns false: nothing changed. */
export function refuse(s: CoreState, what: string, problem: string): false {
  s.kept.lastError = `Ignored a ${what}: ${problem}`;
  s.env.log.warn(s.kept.lastError, { conversationId: s.id });
  return false;
}

/**
 * Something PostgreSQL refused to store in the current turn: `lastError` says it, also when the turn goes on to answer.
 */
export function storeProblem(s: CoreState, problem: string): void {
  s.storeProblem = problem;
  s.kept.lastError = problem;
  s.env.log.warn(problem, { conversationId: s.id });
}
