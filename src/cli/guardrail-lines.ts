/** What the guardrails of a conversation's recent turns said, as `show` prints it. */
import type { TurnRecord } from '../contract/turn-records';

/**
 * One block per recent turn whose guardrails ran: each guardrail's place, name, verdict, reason and `outputInfo` (or
 * why it is not kept). Empty when no guardrail ran in them.
 */
export function formatGuardrailResults(turns: readonly TurnRecord[]): string {
  const blocks = turns.flatMap((turn) => {
    if (!turn.guardrails?.length) return [];
    const lines = turn.guardrails.map((r) => {
      const verdict =
        r.on === 'tool'
          ? `${r.action === 'require_approval' ? 'asked for a person' : r.action === 'block' ? 'blocked' : 'allowed'} ${r.toolCallId}`
          : r.tripwire
            ? 'tripped'
            : 'passed';
      const reason = r.reason === undefined ? '' : ` (${r.reason})`;
      const info =
        r.outputInfo !== undefined
          ? `  outputInfo ${JSON.stringify(r.outputInfo)}`
          : r.outputInfoDropped !== undefined
            ? `  outputInfo not kept: ${r.outputInfoDropped}`
            : '';
      return `  ${r.on} ${r.guardrail}: ${verdict}${reason}${info}`;
    });
    return [`guardrails of the turn for ${turn.messageIds.join(', ')} (${turn.outcome}):`, ...lines].join('\n');
  });
  return blocks.join('\n');
}
