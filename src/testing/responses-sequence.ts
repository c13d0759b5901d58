/**
 * The rules a Responses API `input` must keep across its items, as OpenAI
 * enforces them: every `function_call` answered by one `function_call_output`
 * of the same `call_id` (and no output without its call), and every reasoning
 * item sent back intact (its `encrypted_content` byte-identical) and followed
 * by the item that followed it in the model's output.
 *
 * @packageDocumentation
 */

import { openReasoning } from './responses-encrypted';
import {
  duplicateCallOutputMessage,
  encryptedContentNotVerifiedMessage,
  itemNotFoundMessage,
  itemNotPersistedMessage,
  noToolCallMessage,
  noToolOutputMessage,
  reasoningWithoutFollowingItemMessage,
} from './responses-errors';
import type { ValidationFailure } from './types';
import { fail } from './validate-fields';

/** An input item with its type resolved (a bare `{role, content}` is a `message`). */
export interface TypedItem {
  type: string;
  item: Record<string, unknown>;
}

/**
 * Checks the items of `input` in order.
 *
 * @param items - the request's input items, types resolved, shapes already checked
 * @param store - the request's `store` (true unless `false` was sent)
 * @returns the 400 for the first broken rule, or null
 */
export function checkItemSequence(items: readonly TypedItem[], store: boolean): ValidationFailure | null {
  const calls = new Map<string, number>();
  /** Per call id: how many outputs answered it, and where the last one is. */
  const answered = new Map<string, { count: number; at: number }>();
  for (let i = 0; i < items.length; i++) {
    const { type, item } = items[i];
    if (type === 'function_call') {
      calls.set(item.call_id as string, (calls.get(item.call_id as string) ?? 0) + 1);
    } else if (type === 'function_call_output') {
      const callId = item.call_id as string;
      if (!calls.has(callId)) return fail(noToolCallMessage(callId), 'input');
      const previous = answered.get(callId);
      // One output per call: an id a provider repeated across calls may be answered once per call.
      if (previous !== undefined && previous.count >= (calls.get(callId) ?? 0))
        return fail(duplicateCallOutputMessage(callId, previous.at, i), 'input', 'duplicate_call_output');
      answered.set(callId, { count: (previous?.count ?? 0) + 1, at: i });
    } else if (type === 'reasoning') {
      const failure = checkReasoning(items, i, store);
      if (failure) return failure;
    } else if (type === 'item_reference') {
      const id = String(item.id);
      return fail(store ? itemNotFoundMessage(id) : itemNotPersistedMessage(id), 'input');
    }
  }
  for (const callId of calls.keys()) {
    if (!answered.has(callId)) return fail(noToolOutputMessage(callId), 'input');
  }
  return null;
}

/**
 * A reasoning item: this server stores nothing, so it must carry the
 * `encrypted_content` it issued, unchanged, and be followed (past any other
 * reasoning items) by the item that followed it: the assistant message, or
 * the function call of the same `call_id`.
 */
function checkReasoning(items: readonly TypedItem[], at: number, store: boolean): ValidationFailure | null {
  const { item } = items[at];
  const id = String(item.id);
  const content = item.encrypted_content;
  if (content === undefined || content === null)
    return fail(store ? itemNotFoundMessage(id) : itemNotPersistedMessage(id), 'input');
  const sealed = openReasoning(content);
  if (!sealed) return fail(encryptedContentNotVerifiedMessage(String(content)), null, 'invalid_encrypted_content');
  // A model may write several reasoning items in a row before one message or call; they all lead to that item.
  let after = at + 1;
  while (items[after]?.type === 'reasoning') after++;
  const next = items[after];
  const follows =
    next !== undefined &&
    (sealed.next.type === 'message'
      ? next.type === 'message' && next.item.role === 'assistant'
      : next.type === 'function_call' && next.item.call_id === sealed.next.call_id);
  return follows ? null : fail(reasoningWithoutFollowingItemMessage(id), 'input');
}
