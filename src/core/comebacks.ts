/**
 * Coming back later: the come-backs a conversation holds (kept across
 * continue-as-new), and the turn each starts when it is due, with its note
 * as the message, sent by the conversation itself. A come-back due while a
 * turn runs starts its turn after that one; a conversation that ends drops
 * those not yet due. Pure.
 */
import {
  COME_BACK_LIMITS,
  comeBackMessage,
  comeBackProblem,
  comeBackSender,
  type ComeBack,
  type ComeBackCancel,
  type ComeBackPlan,
  type ComeBackRequest,
  type ComeBackView,
} from '../contract/comebacks';
import { toStorableText } from '../contract/text';
import type { CoreState } from './state';
import type { BatchCall } from './batch';
import { toolFailedContent } from './outcomes';

/** A come-back was asked for (signal or the model's tool). Returns true when the conversation now holds it. */
export function requestComeBack(s: CoreState, request: unknown): boolean {
  const problem = comeBackProblem(request, s.env.now());
  const held = s.kept.comeBacks ?? [];
  const r = request as ComeBackRequest;
  const refusal =
    problem ??
    (held.some((c) => c.id === r.comeBackId)
      ? undefined
      : held.length >= COME_BACK_LIMITS.maxPending
        ? `the conversation holds ${held.length} come-backs already, the most it may (cancel one first)`
        : undefined);
  if (refusal) {
    s.env.log.warn('A come-back was refused', { conversationId: s.id, problem: refusal });
    return false;
  }
  if (held.some((c) => c.id === r.comeBackId)) return false;
  const comeBack: ComeBack = {
    id: r.comeBackId,
    at: Date.parse(r.at),
    note: toStorableText(r.note),
    ...(r.requestedBy !== undefined ? { requestedBy: r.requestedBy } : {}),
    requestedAt: s.env.now(),
  };
  s.kept.comeBacks = [...held, comeBack].sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1));
  s.comeBackVersion++;
  return true;
}

/** A come-back was cancelled. Returns true when the conversation held it. */
export function cancelComeBack(s: CoreState, cancel: unknown): boolean {
  const id = (cancel as Partial<ComeBackCancel> | null)?.comeBackId;
  const held = s.kept.comeBacks ?? [];
  if (typeof id !== 'string' || !held.some((c) => c.id === id)) {
    s.env.log.info('A cancel named no come-back this conversation holds; ignored', { conversationId: s.id });
    return false;
  }
  s.kept.comeBacks = held.filter((c) => c.id !== id);
  s.comeBackVersion++;
  return true;
}

/** Milliseconds until the next come-back is due (at least 1), or undefined when none is held. */
export function nextComeBackInMs(s: CoreState): number | undefined {
  const next = s.kept.comeBacks?.[0];
  return next === undefined ? undefined : Math.max(next.at - s.env.now(), 1);
}

/**
 * Come-backs now due become messages for the next turn, sent by the conversation itself; returns how many did. A
 * conversation that is ending takes none.
 */
export function takeDueComeBacks(s: CoreState): number {
  const held = s.kept.comeBacks ?? [];
  if (held.length === 0 || s.kept.ending) return 0;
  const now = s.env.now();
  const due = held.filter((c) => c.at <= now);
  if (due.length === 0) return 0;
  for (const c of due)
    s.inbox.receive({ text: comeBackMessage(c.note), messageId: `come-back-${c.id}`, sentBy: comeBackSender(s.id) });
  s.kept.comeBacks = held.filter((c) => c.at > now);
  s.comeBackVersion++;
  return due.length;
}

/** The come-backs as the state shows them. */
export function comeBackViews(s: CoreState): ComeBackView[] {
  return (s.kept.comeBacks ?? []).map((c) => ({
    comeBackId: c.id,
    at: new Date(c.at).toISOString(),
    note: c.note,
    ...(c.requestedBy !== undefined ? { requestedBy: c.requestedBy } : {}),
    requestedAt: new Date(c.requestedAt).toISOString(),
  }));
}

/** A call of the `comeBackLater()` tool starts: the conversation holds its come-back, and the call settles with it. */
export function settleComeBackCall(s: CoreState, call: BatchCall, plan: ComeBackPlan): void {
  const held = requestComeBack(s, { comeBackId: call.key, at: plan.at, note: plan.note, requestedBy: 'model' });
  const content = held
    ? JSON.stringify({ kind: 'come_back_scheduled', comeBackId: call.key, at: plan.at, note: plan.note })
    : toolFailedContent(
        `The conversation could not hold this come-back (it holds ${COME_BACK_LIMITS.maxPending} already, or the time is not valid); nothing was scheduled.`,
      );
  s.batch?.settle(call.id, held ? { kind: 'ok', content } : { kind: 'tool_failed', content });
}
