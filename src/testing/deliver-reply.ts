/**
 * Plays one {@link ScriptedReply} on its exchange: a message (streamed or
 * not), a delay, a hang, a dropped connection or an HTTP error.
 *
 * @packageDocumentation
 */

import { completionObject, planCompletion, type ChatRequestBody } from './completion';
import type { Exchange } from './exchange';
import { errorBody } from './provider-errors';
import { writeChatStream } from './stream-writer';
import type { ScriptedHttpError, ScriptedReply, ToolCallIdScheme } from './types';

/** OpenAI's message for a 500. */
export const DEFAULT_SERVER_ERROR_MESSAGE = 'The server had an error while processing your request. Sorry about that!';

/** Content streamed before a `drop` when the reply gives none. */
export const DEFAULT_DROP_CONTENT = 'This answer is cut off before it is finished.';

/**
 * Answers `request` on `exchange` as `reply` says, unless the connection is
 * already closed.
 *
 * @param toolCallIds - the scheme of the tool call ids the server makes, fixed when the reply was chosen
 */
export async function deliverReply(
  reply: ScriptedReply,
  exchange: Exchange,
  request: ChatRequestBody,
  toolCallIds: ToolCallIdScheme,
): Promise<void> {
  if (exchange.isClosed) return;
  switch (reply.kind) {
    case 'delay':
      if (await exchange.wait(reply.ms)) await deliverReply(reply.then, exchange, request, toolCallIds);
      return;
    case 'hang':
      await exchange.closed;
      return;
    case 'drop':
      if (request.stream === true) {
        const plan = planCompletion({ content: reply.content ?? DEFAULT_DROP_CONTENT }, request, toolCallIds);
        await writeChatStream(exchange, plan, { fault: { kind: 'drop', afterContentPieces: 1 } });
      } else {
        exchange.destroy();
      }
      return;
    case 'http_error':
      sendHttpError(reply, exchange);
      return;
    default: {
      const plan = planCompletion(reply, request, toolCallIds);
      if (request.stream === true) await writeChatStream(exchange, plan, { script: reply.stream });
      else exchange.send(200, completionObject(plan));
    }
  }
}

/** Answers with a scripted HTTP error: its body (or OpenAI's default body for the status) and headers. */
export function sendHttpError(reply: ScriptedHttpError, exchange: Exchange): void {
  exchange.send(reply.status, reply.body === undefined ? defaultErrorBody(reply.status) : reply.body, reply.headers);
}

/** A scripted 500 with OpenAI's `server_error` type and the given `code`. */
export function serverError(message: string, code: string): ScriptedReply {
  return { kind: 'http_error', status: 500, body: errorBody(message, 'server_error', null, code) };
}

function defaultErrorBody(status: number): unknown {
  if (status >= 500) return errorBody(DEFAULT_SERVER_ERROR_MESSAGE, 'server_error');
  if (status === 429)
    return errorBody('Rate limit reached for requests (scripted).', 'requests', null, 'rate_limit_exceeded');
  return errorBody(`Scripted HTTP ${status} error.`, 'invalid_request_error');
}
