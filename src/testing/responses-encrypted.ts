/**
 * The scripted model's `encrypted_content` for reasoning items: an opaque,
 * signed token (shaped like OpenAI's `gAAAAA...`) that carries the reasoning
 * and which item followed it in the output. Only a token this server issued,
 * byte for byte, opens; anything else is refused as OpenAI refuses it.
 *
 * The key is fixed, so a token stays valid across server restarts and test
 * processes, as a transcript kept for weeks needs.
 *
 * @packageDocumentation
 */

import { createHmac, timingSafeEqual } from 'node:crypto';

/** What a reasoning item's encrypted content remembers. */
export interface SealedReasoning {
  /** The reasoning item's id. */
  id: string;
  /** The scripted reasoning text. */
  text: string;
  /** The item that followed the reasoning in the output: an assistant message or the function call with this `call_id`. */
  next: { type: 'message' } | { type: 'function_call'; call_id: string };
}

const KEY = 'scripted-model-server/reasoning/v1';
const PREFIX = 'gAAAAA';
/** Length of an HMAC-SHA256 in unpadded base64url. */
const MAC_LENGTH = 43;

/** Seals `reasoning` into an `encrypted_content` token. */
export function sealReasoning(reasoning: SealedReasoning): string {
  const payload = Buffer.from(JSON.stringify(reasoning), 'utf8').toString('base64url');
  return PREFIX + payload + mac(payload);
}

/** Opens a token made by {@link sealReasoning}; undefined when it was not made here or was changed. */
export function openReasoning(token: unknown): SealedReasoning | undefined {
  if (typeof token !== 'string' || !token.startsWith(PREFIX) || token.length <= PREFIX.length + MAC_LENGTH)
    return undefined;
  const payload = token.slice(PREFIX.length, -MAC_LENGTH);
  const given = Buffer.from(token.slice(-MAC_LENGTH));
  const expected = Buffer.from(mac(payload));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as SealedReasoning;
    return typeof parsed.id === 'string' && typeof parsed.next?.type === 'string' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function mac(payload: string): string {
  return createHmac('sha256', KEY).update(payload).digest('base64url');
}
