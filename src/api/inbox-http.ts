/**
 * What the inbox's routes share: reading a form field, a refusal rendered as
 * a page, sending a page with its security headers, and the messages shown
 * beside a conversation's waiting calls.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { AgentClient } from '../client/client';
import { parseCallInstanceKey } from '../core/effect-keys';
import type { ShownCall, ShownMessage } from './inbox-page';

/** Messages shown with each conversation. */
export const RECENT_MESSAGES = 6;

/** One form field as a string (a field sent twice, or absent, is undefined). */
export const field = (body: unknown, name: string): string | undefined => {
  const value = body && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
  return typeof value === 'string' ? value : undefined;
};

/** Refusals of the page, rendered as HTML with their status. */
export class PageRefusal extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Sends a page with its security headers: a CSP whose nonce admits the page's inline style and script, no caching,
 * no framing. `build` makes the page with the nonce.
 */
export function sendHtml(reply: FastifyReply, status: number, build: (nonce: string) => string): FastifyReply {
  const nonce = randomBytes(16).toString('base64');
  return reply
    .status(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header(
      'content-security-policy',
      `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    )
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'same-origin')
    .header('cache-control', 'no-store')
    .send(build(nonce));
}

/**
 * The messages that led to a conversation's waiting calls: the last few up to
 * the newest message that asked (its seq is in the call's key, `…/msg-N/call-I`),
 * else the conversation's last few.
 */
export async function messagesBefore(
  client: AgentClient,
  conversationId: string,
  calls: readonly ShownCall[],
): Promise<ShownMessage[]> {
  const seqs = calls.map((c) => parseCallInstanceKey(c.callKey)?.assistantSeq ?? NaN);
  const through = seqs.every((s) => Number.isInteger(s))
    ? Math.max(...seqs)
    : (await client.state(conversationId)).messageCount - 1;
  return client.transcriptPage(conversationId, Math.max(-1, through - RECENT_MESSAGES), RECENT_MESSAGES);
}
