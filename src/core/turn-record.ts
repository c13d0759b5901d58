/** A turn's record, made when its outcome is known, and kept until its end is written. Pure. */
import type { TurnRecord } from '../contract/turn-records';
import type { CoreState } from './state';

/** The turn's record as it ends now: its messages, outcome, steps, who asked, what its guardrails said, what it spent. */
export function record(
  s: CoreState,
  outcome: TurnRecord['outcome'],
  extra: Pick<TurnRecord, 'error' | 'answerSeq' | 'output' | 'outputInAnswer' | 'guardrail'>,
): TurnRecord {
  const t = s.turn;
  t.recorded = true;
  const requestedBy = t.requesters.length > 0 ? { requestedBy: [...t.requesters] } : {};
  const usage = t.usage ? { ...t.usage, ...(t.cost.unpriced === 0 ? { costUsd: t.cost.usd } : {}) } : undefined;
  return {
    messageIds: t.messageIds,
    firstSeq: t.firstSeq,
    outcome,
    steps: t.steps,
    ...requestedBy,
    ...extra,
    ...(t.guardrails?.length ? { guardrails: t.guardrails } : {}),
    ...(usage ? { usage } : {}),
  };
}

/** The turn ends with this record: the next step writes its end. */
export function finishWith(s: CoreState, turnRecord: TurnRecord): CoreState {
  s.turn.end = turnRecord;
  return s;
}
