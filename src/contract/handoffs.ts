/**
 * What a handoff made with `handoff(agent, options)` carries through the
 * workflow: its input filter (plain data, so applying it is deterministic)
 * and the record of what its options did when the model call's activity
 * planned it. Workflow-safe: types and pure functions only.
 */

/**
 * What the new agent is sent of the conversation before the handoff, as
 * data (the OpenAI Agents SDK takes a function; a durable conversation needs
 * something it can apply again on every model call and replay):
 *
 * - `dropToolCalls`: leaves out tool calls and their results (the handoff's
 *   own included), as the SDK's `removeAllTools` does; an answer that also
 *   had text keeps its text.
 * - `keepLast`: keeps only the last N messages before the handoff (after
 *   `dropToolCalls`, when both are set); a tool result whose call was cut is
 *   left out with it. The system message is the new agent's instructions
 *   either way.
 *
 * Messages written after the handoff are always sent.
 */
export interface HandoffInputFilter {
  dropToolCalls?: boolean;
  keepLast?: number;
}

/** The most messages `keepLast` may name. */
export const HANDOFF_KEEP_LAST_MAX = 10_000;

/**
 * What the options of a handoff did when its call was planned, in the
 * call's plan (workflow history) and, for `input` and `inputFilter`, in the
 * handoff's result in the transcript.
 */
export interface HandoffRecord {
  /** The tool the model called (its current name, or an older one a running conversation still uses). */
  toolName: string;
  /** The arguments, parsed and checked against the handoff's `inputType`, when it has one. */
  input?: unknown;
  /** What `onHandoff` returned (as JSON; `{ truncated: <bytes> }` past 4 KB), or the message of what it threw. */
  onHandoff?: { returned?: unknown } | { threw: string };
  /** The filter the new agent's model calls apply to the conversation before the handoff. */
  inputFilter?: HandoffInputFilter;
}

/**
 * The result of a taken handoff, as the transcript keeps it and the model
 * reads it: `{"assistant": "<agent>"}` as in the OpenAI Agents SDK, with the
 * checked input and the input filter when the handoff has them.
 */
export function handoffResultContent(agent: string, record?: HandoffRecord): string {
  return JSON.stringify({
    assistant: agent,
    ...(record?.input !== undefined ? { input: record.input } : {}),
    ...(record?.inputFilter ? { inputFilter: record.inputFilter } : {}),
  });
}
