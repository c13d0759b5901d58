/**
 * What arrives from people between the steps of a turn: user messages (they
 * interrupt the turn or wait for the next one), a cancel, the end of the
 * conversation; and when a run hands over to the next. Pure.
 */
import { CARRIED_INBOX_MAX_BYTES } from '../contract/limits';
import {
  describeBadUserMessage,
  describeOversizedUserMessage,
  describeUnstorableCancel,
  describeUnstorableUserMessage,
  type CancelTurnRequest,
  type UserMessage,
} from '../contract/user-messages';
import { toStorableText } from '../contract/text';
import { scheduleSender } from '../contract/conversation-input';
import { STOP_REASONS } from './edge';
import { refuse } from './problems';
import type { CoreState } from './state';

/** An agent called as a tool answers its task in one turn, then ends: its task is its one message. */
export function receiveTask(s: CoreState): void {
  const caller = s.input.calledBy;
  if (!caller || s.input.carried) return;
  s.inbox.receive({ text: toStorableText(caller.task), messageId: `task-of-${caller.callKey}` });
  s.kept.ending = true;
}

/**
 * A conversation a schedule started: its first run takes the schedule's message, sent by the schedule, and the
 * conversation ends once it is answered (with any sent meanwhile).
 */
export function receiveScheduledMessage(s: CoreState): void {
  const run = s.input.scheduled;
  if (!run || s.input.carried) return;
  s.inbox.receive({
    text: toStorableText(run.text),
    messageId: `schedule-run-of-${s.id}`,
    sentBy: scheduleSender(run.scheduleId),
  });
  s.kept.ending = true;
}

/**
 * A user message arrived. Malformed and already-received messages change
 * nothing. Returns true when it stops the running turn (policy `interrupt`):
 * the edge then cancels the turn.
 */
export function receiveUserMessage(s: CoreState, message: unknown): boolean {
  const problem = describeBadUserMessage(message);
  if (problem) return refuse(s, 'userMessage signal', problem);
  const caller = s.input.calledBy;
  if (caller) {
    return refuse(
      s,
      'userMessage signal',
      `this conversation runs agent ${s.kept.agent ?? ''} for tool call ${caller.toolName} of conversation ${caller.conversationId}, ` +
        `and answers only that task; send messages to ${caller.rootConversationId}`,
    );
  }
  const { text, messageId: given, sentBy, files } = message as UserMessage;
  const oversized = describeOversizedUserMessage(text);
  if (oversized) return refuse(s, 'userMessage signal', oversized);
  const unstorable = describeUnstorableUserMessage(message as UserMessage);
  if (unstorable) return refuse(s, 'userMessage signal', unstorable);
  const messageId = given ?? s.env.newId();
  const queued = { text, messageId, ...(sentBy === undefined ? {} : { sentBy }), ...(files?.length ? { files } : {}) };
  if (!s.inbox.receive(queued)) {
    s.env.log.info('Ignored a user message already received', { conversationId: s.id, messageId });
    return false;
  }
  return s.limits.onNewMessage === 'interrupt' && stopTurn(s, STOP_REASONS.interruptedByMessage);
}

/**
 * The user asked to cancel the turn. Returns true when the running turn stops
 * (the edge cancels it). Messages received but not yet taken into a turn make
 * their turn start cancelled (also while a turn that already has its outcome
 * writes its end); with neither, nothing happens.
 */
export function cancelTurn(s: CoreState, request?: CancelTurnRequest): boolean {
  const unstorable = describeUnstorableCancel(request);
  if (unstorable) return refuse(s, 'cancelTurn signal', unstorable);
  const why = request?.reason ? `${STOP_REASONS.cancelledByUser} (${request.reason})` : STOP_REASONS.cancelledByUser;
  // A turn that has its record only writes its end: the cancel is for the turn of a message that waits, if any.
  if (
    s.turn.active &&
    s.turn.recorded &&
    s.inbox.length > 0 &&
    s.env.allows('cancel-while-turn-ends-stops-next-turn')
  ) {
    s.cancelNextTurn ??= why;
    return false;
  }
  if (s.turn.active) return stopTurn(s, why);
  if (s.inbox.length > 0 && !s.stopReason) s.stopReason = why;
  else s.env.log.info('cancelTurn received while no turn runs; nothing to cancel', { conversationId: s.id });
  return false;
}

/** Stops the turn taken (also one about to start). Returns true when the edge should cancel it now. */
function stopTurn(s: CoreState, why: string): boolean {
  if (!s.turn.active || s.stopReason) return false;
  s.stopReason = why;
  return true;
}

/**
 * Whether to continue as new now, between turns, given the run's history:
 * past `continueAsNewAfterEvents` events or when the server suggests it,
 * unless more queued messages wait than a run carries (they are answered first).
 */
export function shouldContinueAsNew(
  s: CoreState,
  history: { historyLength: number; continueAsNewSuggested: boolean },
): boolean {
  if (s.input.calledBy) return false; // it ends after its one turn, returning what a new run would not carry
  if (!(history.continueAsNewSuggested || history.historyLength >= s.limits.continueAsNewAfterEvents)) return false;
  return s.inbox.bytes() <= CARRIED_INBOX_MAX_BYTES;
}
