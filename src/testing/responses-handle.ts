/**
 * Answers one `POST /v1/responses` request on the scripted model server:
 * refuses an invalid request with OpenAI's 400 (`responses-validate.ts`),
 * holds the input to the context window, then plays the next scripted reply
 * as a Responses API answer, streamed or not. Misbehaviour comes from the
 * same {@link ScriptedReply} kinds as for Chat Completions: `http_error`
 * (a 429 with `retry-after`, a 500), `drop` (a broken stream), `hang`,
 * `delay`, and the server's tool call id scheme (repeated call ids).
 *
 * @packageDocumentation
 */

import { sendHttpError } from './deliver-reply';
import { DEFAULT_DROP_CONTENT } from './deliver-reply';
import type { Exchange, RequestContext } from './exchange';
import { errorBody } from './provider-errors';
import { RESPONSES_CONTEXT_EXCEEDED_MESSAGE } from './responses-errors';
import { countInputTokens, planResponse, responseObject, type ResponsesRequestBody } from './responses-plan';
import { writeResponsesStream } from './responses-stream';
import { validateResponsesRequest } from './responses-validate';
import type { ScriptedReply, ToolCallIdScheme } from './types';

/** The path the Responses API is served on. */
export const RESPONSES_PATH = '/v1/responses';

/** Validates the recorded request on `exchange` (body already parsed) and answers it. */
export async function handleResponsesRequest(exchange: Exchange, context: RequestContext): Promise<void> {
  const { record } = exchange;
  const failure = validateResponsesRequest(record.body);
  if (failure) {
    exchange.reject(failure.status, failure.body);
    return;
  }
  const body = record.body as ResponsesRequestBody;
  const contextWindow = context.currentContextWindow();
  if (contextWindow !== undefined) {
    record.promptTokens = countInputTokens(body);
    if (record.promptTokens > contextWindow) {
      exchange.reject(
        400,
        errorBody(RESPONSES_CONTEXT_EXCEEDED_MESSAGE, 'invalid_request_error', 'input', 'context_length_exceeded'),
      );
      return;
    }
  }
  const reply = await context.nextReply(record);
  record.reply = reply;
  // The scheme is fixed when the reply is chosen, so a later setToolCallIds does not affect a delayed reply.
  await deliverResponsesReply(
    reply,
    exchange,
    { ...body, promptTokens: record.promptTokens },
    context.currentToolCallIds(),
  );
}

async function deliverResponsesReply(
  reply: ScriptedReply,
  exchange: Exchange,
  request: ResponsesRequestBody,
  toolCallIds: ToolCallIdScheme,
): Promise<void> {
  if (exchange.isClosed) return;
  switch (reply.kind) {
    case 'delay':
      if (await exchange.wait(reply.ms)) await deliverResponsesReply(reply.then, exchange, request, toolCallIds);
      return;
    case 'hang':
      await exchange.closed;
      return;
    case 'http_error':
      sendHttpError(reply, exchange);
      return;
    case 'drop':
      if (request.stream === true) {
        const plan = planResponse({ content: reply.content ?? DEFAULT_DROP_CONTENT }, request, toolCallIds);
        await writeResponsesStream(exchange, plan, {}, true);
      } else {
        exchange.destroy();
      }
      return;
    default: {
      const plan = planResponse(reply, request, toolCallIds);
      if (request.stream === true) await writeResponsesStream(exchange, plan, reply.stream);
      else exchange.send(200, responseObject(plan));
    }
  }
}
