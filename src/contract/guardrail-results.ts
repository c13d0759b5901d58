/**
 * What an input or output guardrail said in a turn, as the turn's record
 * keeps it: its tripwire, its reason and its `outputInfo` (the OpenAI Agents
 * SDK's name for what a guardrail found, for operators to read afterwards).
 * Pure; workflow-safe.
 */
/**
 * The longest `outputInfo`, as JSON text, that a turn's record keeps. A
 * longer one is left out of the record, and `outputInfoDropped` says so:
 * records travel in workflow history, in every state query and, the last
 * `RECENT_TURNS_KEPT` of them, into each run continued as new, so a
 * guardrail keeps its bulk elsewhere (a table, a log) and reports a summary.
 */
export const GUARDRAIL_OUTPUT_INFO_MAX_CHARS = 1024;

/** One guardrail's verdict in a turn: the latest, when it ran more than once (an output guardrail on each answer). */
export interface GuardrailResult {
  /** Where it ran: the turn's input, or a final answer. */
  on: 'input' | 'output';
  /** Its name. */
  guardrail: string;
  /** True when it stopped the turn (ours: `tripwire`; the Agents SDK's: `tripwireTriggered`). */
  tripwire: boolean;
  /** Its reason, when it gave one. */
  reason?: string;
  /** What it reported, as JSON (at most {@link GUARDRAIL_OUTPUT_INFO_MAX_CHARS} characters of it). */
  outputInfo?: unknown;
  /** Set when it reported an `outputInfo` the record cannot keep: why (too large, not JSON). */
  outputInfoDropped?: string;
}

/** `results` with `next` in: one per guardrail and place, the later verdict replacing the earlier in its position. */
export function withGuardrailResults(
  results: readonly GuardrailResult[] | undefined,
  next: readonly GuardrailResult[],
): GuardrailResult[] {
  const merged = [...(results ?? [])];
  for (const r of next) {
    const at = merged.findIndex((m) => m.on === r.on && m.guardrail === r.guardrail);
    if (at === -1) merged.push(r);
    else merged[at] = r;
  }
  return merged;
}
