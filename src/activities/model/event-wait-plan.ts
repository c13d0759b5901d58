/**
 * What a call of a `waitForEvent()` tool waits for (its key from its arguments), and when a call of the
 * `comeBackLater()` tool comes back: made when the call is planned.
 */
import { eventProblem, type EventWaitPlan } from '../../contract/events';
import type { Tool } from '../../tools/tool';
import type { ComeBackPlan } from '../../contract/comebacks';

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

/**
 * When a call of the `comeBackLater()` tool comes back, from its arguments and the time now, or why it cannot (no time,
 * both times, a time past or beyond the tool's furthest); undefined for another tool.
 */
export function planComeBack(
  tool: Tool,
  args: unknown,
  now: number,
): { comeBack: ComeBackPlan } | { problem: string } | undefined {
  if (!tool.comeBack) return undefined;
  const { note, in_minutes: inMinutes, at } = args as { note: string; in_minutes?: number; at?: string };
  if ((inMinutes === undefined) === (at === undefined))
    return { problem: 'Give exactly one of in_minutes and at (an ISO 8601 time).' };
  const when = inMinutes !== undefined ? now + Math.round(inMinutes * 60_000) : Date.parse(at!);
  if (Number.isNaN(when))
    return { problem: `"at" must be an ISO 8601 time such as 2026-03-02T09:00:00Z; got "${at}".` };
  if (when <= now) return { problem: `That time has passed (${new Date(when).toISOString()}); give a time ahead.` };
  if (when - now > tool.comeBack.maxDelayMs)
    return {
      problem: `That is more than ${Math.round(tool.comeBack.maxDelayMs / 3_600_000)} hours ahead, the furthest this tool allows.`,
    };
  return { comeBack: { at: new Date(when).toISOString(), note } };
}
