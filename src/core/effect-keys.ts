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

/**
 * The key of the call at `index` of the assistant message stored at `assistantSeq`. After a regenerated turn
 * (`regenerations` > 0) the seqs of the superseded messages are given again, so the count of regenerations so far is in
 * the key (`<conversation>/regen-<n>/msg-<seq>/call-<index>`): a call the new answer asks for is a new call instance,
 * which runs again once approved again. Keys minted before any regeneration keep the first form.
 */
export function callInstanceKey(
  conversationId: string,
  assistantSeq: number,
  index: number,
  regenerations = 0,
): string {
  const generation = regenerations > 0 ? `/regen-${regenerations}` : '';
  return `${conversationId}${generation}/msg-${assistantSeq}/call-${index}`;
}

/**
 * What a key of {@link callInstanceKey} names: its conversation and the seq of the assistant message that asked for
 * the call; undefined for a string of another form.
 */
export function parseCallInstanceKey(key: string): { conversationId: string; assistantSeq: number } | undefined {
  const tail = /(?:\/regen-\d+)?\/msg-(\d+)\/call-\d+$/.exec(key);
  return tail ? { conversationId: key.slice(0, tail.index), assistantSeq: Number(tail[1]) } : undefined;
}
