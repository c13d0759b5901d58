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

/**
 * One guardrail's verdict in a turn: the latest, when it ran more than once (an output guardrail on each answer).
 * A tool guardrail's, per call, when it blocked the call, asked for a person or reported an `outputInfo`.
 */
export interface GuardrailResult {
  /** Where it ran: the turn's input, a final answer, or a tool call (`toolCallId`). */
  on: 'input' | 'output' | 'tool';
  /** The call a tool guardrail checked. */
  toolCallId?: string;
  /** What a tool guardrail decided: `block` (its `tripwire`), `require_approval` or `allow`. */
  action?: 'allow' | 'block' | 'require_approval';
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

/**
 * `results` with `next` in: one per guardrail and place (and call, for a tool guardrail), the later verdict replacing
 * the earlier in its position.
 */
export function withGuardrailResults(
  results: readonly GuardrailResult[] | undefined,
  next: readonly GuardrailResult[],
): GuardrailResult[] {
  const merged = [...(results ?? [])];
  for (const r of next) {
    const at = merged.findIndex((m) => m.on === r.on && m.guardrail === r.guardrail && m.toolCallId === r.toolCallId);
    if (at === -1) merged.push(r);
    else merged[at] = r;
  }
  return merged;
}
