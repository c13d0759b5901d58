/**
 * Regenerate: the last turn answered again. A request is accepted while the
 * conversation is idle and its last turn has ended (answered, failed or
 * stopped); the turn it starts takes no new user message. At its start the
 * run's seq goes back to the first seq after the last turn's user messages,
 * every message stored from there on is superseded (one write, so readers
 * stop showing the old answer at once), and the model is asked again. The
 * regeneration counter goes up, so the calls of the new turn get keys of
 * their own: a call the model asks for again runs again once approved again.
 * Pure.
 */
import { describeBadRegenerateRequest, type RegenerateRequest, type RegenerateResult } from '../contract/regenerate';
import { refuse } from './problems';
import { noTurn, type CoreState } from './state';
import type { TurnStep } from './steps';

/** How a request was checked: refused (why), a resend of one already taken, or to apply. */
type Checked = { refusal: string } | { again: RegenerateResult } | { apply: RegenerateRequest };

/**
 * A regenerate request, by signal or update; `check` is an update's validator,
 * which throws why it is refused and changes nothing. Returns what the update
 * answers (undefined for a refused signal, which is kept as `lastError`).
 */
export function receive(
  s: CoreState,
  request: unknown,
  via: 'signal' | 'update' | 'check',
): RegenerateResult | undefined {
  const checked = check(s, request);
  if ('refusal' in checked) {
    if (via === 'signal') return void refuse(s, 'regenerate signal', checked.refusal);
    throw new Error(checked.refusal);
  }
  if ('again' in checked || via === 'check') return 'again' in checked ? checked.again : undefined;
  const requestId = checked.apply.requestId ?? s.env.newId();
  const sentBy = checked.apply.sentBy;
  s.inbox.remember(requestId);
  s.kept.regenerate = { requestId, ...(sentBy === undefined ? {} : { sentBy }) };
  return { requestId, fromSeq: s.kept.lastInput!.toSeq, started: true };
}

/** Why the conversation refuses a regeneration now; or the request to apply; or the answer to a resend. */
function check(s: CoreState, request: unknown): Checked {
  const bad = describeBadRegenerateRequest(request);
  if (bad) return { refusal: `Invalid regenerate request: ${bad}.` };
  const { requestId } = (request ?? {}) as RegenerateRequest;
  const k = s.kept;
  const caller = s.input.calledBy;
  if (caller) {
    return {
      refusal:
        `This conversation runs agent ${k.agent ?? ''} for tool call ${caller.toolName} of conversation ${caller.conversationId} ` +
        `and answers only that task; regenerate an answer of ${caller.rootConversationId} instead.`,
    };
  }
  if (requestId !== undefined && s.inbox.has(requestId)) {
    return { again: { requestId, fromSeq: k.lastInput?.toSeq ?? s.writes.nextSeq, started: false } };
  }
  if (k.phase === 'closed' || k.ending)
    return { refusal: 'The conversation is ending (or has ended): it takes no more turns, so nothing is regenerated.' };
  if (k.regenerate) {
    return {
      refusal: `A regeneration was already asked for (request ${k.regenerate.requestId}) and has not started yet: follow that turn.`,
    };
  }
  if (s.turn.active)
    return { refusal: 'A turn is running: wait until it ends (or cancel it), then ask for its answer again.' };
  if (s.inbox.length > 0) {
    return {
      refusal: `${s.inbox.length} message(s) wait for their turn, which answers them: regenerate once that turn has ended.`,
    };
  }
  if (!k.lastInput) {
    return {
      refusal:
        'Nothing to regenerate: the conversation has answered no message yet (or its last turn ran on a version without regenerate). Send a message instead.',
    };
  }
  if (!s.writes.allWritten)
    return { refusal: "The last turn's messages are still being written: ask again in a moment." };
  return { apply: (request ?? {}) as RegenerateRequest };
}

/** Takes an accepted request into a new turn (nothing stored yet; its first step supersedes). False: none waits. */
export function takeRegeneration(s: CoreState): boolean {
  const request = s.kept.regenerate;
  const input = s.kept.lastInput;
  if (!request || !input) return false;
  s.kept.regenerate = undefined;
  const requesters = [...(s.input.calledBy?.requestedBy ?? []), ...(request.sentBy ? [request.sentBy] : [])];
  s.turn = {
    ...noTurn(),
    active: true,
    messageIds: [request.requestId],
    firstSeq: input.fromSeq,
    requesters: [...new Set(requesters)],
    supersedeFrom: input.toSeq,
  };
  return true;
}

/**
 * The regenerated turn's first step, once: the run's seq goes back to the
 * first seq after the user messages, and every stored message from there on
 * is superseded (an empty write), before anything of the new turn is
 * written. A regenerated turn stopped before it began supersedes nothing.
 */
export function supersedeStep(s: CoreState): TurnStep | undefined {
  const fromSeq = s.turn.supersedeFrom;
  if (fromSeq === undefined) return undefined;
  s.turn.supersedeFrom = undefined;
  s.writes.rewind(fromSeq);
  for (let i = s.messages.length - 1; i >= 0 && s.messages[i].seq >= fromSeq; i--) s.messages.pop();
  for (const seq of [...s.notes]) if (seq >= fromSeq) s.notes.delete(seq);
  const k = s.kept;
  k.regenerations++;
  const last = k.recentTurns[k.recentTurns.length - 1];
  if (last) last.supersededBy = s.turn.messageIds[0];
  s.answerSeq = -1;
  s.lastAnswer = undefined;
  s.lastCalls = [];
  return {
    kind: 'supersede',
    input: { conversationId: s.id, messages: [], supersedeFrom: fromSeq },
    summary: `regenerate: supersede messages ${fromSeq} and after`,
  };
}
