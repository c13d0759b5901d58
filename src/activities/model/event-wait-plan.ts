/** What a call of a `waitForEvent()` tool waits for, made when the call is planned (its key from its arguments). */
import { eventProblem, type EventWaitPlan } from '../../contract/events';
import type { Tool } from '../../tools/tool';

/**
 * The event a call of `tool` waits for, or why it cannot wait (its key function threw, or made a key no event can
 * have); undefined for a tool that does not wait.
 */
export function planEventWait(tool: Tool, args: unknown): { wait: EventWaitPlan } | { problem: string } | undefined {
  const waitFor = tool.waitFor;
  if (!waitFor) return undefined;
  let key: unknown;
  try {
    key = waitFor.key(args);
  } catch (err) {
    return {
      problem: `The key of the event ${waitFor.event} could not be made from these arguments: ${String((err as Error)?.message ?? err)}`,
    };
  }
  const problem = eventProblem({ name: waitFor.event, key });
  if (problem) return { problem: `${tool.name} cannot wait with these arguments: ${problem}` };
  return { wait: { event: waitFor.event, key: key as string, timeoutMs: waitFor.timeoutMs } };
}
