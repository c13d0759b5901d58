/**
 * Effect keys: the idempotency key of one tool call instance.
 *
 * The workflow mints the key where it makes the batch, from values it carries
 * across continue-as-new: the seq of the assistant message that asked for the
 * call and the call's position in it. Never from the provider's
 * `tool_call_id`: providers restart ids in every response
 * (`functions.issue_refund:0` in turn 1 and again in turn 2), and a key built
 * from them would hand the second call the first call's recorded result.
 * Provider ids only pair tool messages with their calls.
 *
 * Pure module: imported by workflow code and by activities.
 */
import type { ChatMessage } from './messages';

/** The key of the call at `index` of the assistant message stored at `assistantSeq`. */
export function callInstanceKey(conversationId: string, assistantSeq: number, index: number): string {
  return `${conversationId}/msg-${assistantSeq}/call-${index}`;
}

/**
 * The key calls scheduled before effect keys per call instance existed were
 * given (`${conversationId}/${toolCallId}`). Kept for those calls only, so an
 * upgrade never changes the key of a call that may already have run.
 */
export function legacyCallKey(conversationId: string, toolCallId: string): string {
  return `${conversationId}/${toolCallId}`;
}

/**
 * For a stored transcript, the effect key of the call each tool message
 * answers, by the tool message's seq. A tool message answers a call of the
 * nearest assistant message before it.
 */
export function toolMessageKeys(conversationId: string, messages: readonly { seq: number; message: ChatMessage }[]): Map<number, string> {
  const keys = new Map<number, string>();
  let open: { seq: number; ids: string[] } | undefined;
  for (const { seq, message } of messages) {
    if (message.role === 'assistant') open = { seq, ids: (message.tool_calls ?? []).map((c) => c.id) };
    else if (message.role === 'tool' && open) {
      const index = open.ids.indexOf(message.tool_call_id);
      if (index >= 0) keys.set(seq, callInstanceKey(conversationId, open.seq, index));
    } else open = undefined;
  }
  return keys;
}
