/**
 * The result of a call of an agent as a tool whose agent tool has an output
 * extractor: the extractor ran in the activity of the agent's final model
 * call, which recorded what it made; here it becomes the answer's companion
 * and then the calling call's outcome. Pure.
 */
import type { ModelCallResult } from '../contract/activities';
import type { SubAgentTurn } from '../contract/conversation-state';
import type { CallOutcome } from './batch';
import { toolFailedContent } from './outcomes';

/** What the output extractor made of a final answer, kept with the answer for the caller. */
export function extractedOf(result: ModelCallResult): { extracted?: ModelCallResult['extracted'] } {
  return result.extracted ? { extracted: { ...result.extracted } } : {};
}

/**
 * The outcome of a call whose agent answered: the extracted result (by
 * reference to where the activity stored it), `tool_failed` when the
 * extractor failed, else the answer itself.
 */
export function answeredOutcome(
  answer: NonNullable<SubAgentTurn['answer']>,
  agent: string | undefined,
  toolName: string,
): CallOutcome {
  const extracted = answer.extracted;
  if (!extracted) return { kind: 'ok', content: answer.text, storedAnswerKey: answer.responseKey };
  if (extracted.ok) return { kind: 'ok', content: extracted.text, storedResultKey: extracted.key };
  return {
    kind: 'tool_failed',
    content: toolFailedContent(
      `The ${agent} agent answered, but the customOutputExtractor of ${toolName} failed on its answer: ${extracted.error}`,
    ),
  };
}
