/**
 * Answers one HTTP request to the scripted model server: lists the model,
 * refuses unknown URLs and invalid requests the way a provider does, holds
 * the prompt to the context window, then plays the next scripted reply.
 * `POST /v1/responses` (the Responses API) is `responses-handle.ts`'s.
 *
 * @packageDocumentation
 */

import type http from 'node:http';

import { nowSeconds, type ChatRequestBody } from './completion';
import { contextLengthExceededBody, countPromptTokens } from './context-window';
import { deliverReply } from './deliver-reply';
import { readBody, type Exchange, type RequestContext } from './exchange';
import { errorBody, INVALID_JSON_MESSAGE } from './provider-errors';
import { handleResponsesRequest, RESPONSES_PATH } from './responses-handle';
import { validateChatRequest } from './validate';

/** Model id listed by `GET /v1/models`. */
export const SCRIPTED_MODEL_ID = 'scripted-model';

/** The paths a model is called on: Chat Completions and the Responses API. */
const MODEL_PATHS = ['/v1/chat/completions', RESPONSES_PATH];

/** Reads the request on `exchange`, records its body and answers it. */
export async function handleRequest(
  req: http.IncomingMessage,
  exchange: Exchange,
  context: RequestContext,
): Promise<void> {
  const { record } = exchange;
  const raw = await readBody(req);
  if (raw === undefined) return;
  if (raw.length > 0) {
    try {
      record.body = JSON.parse(raw);
    } catch {
      record.body = raw;
      if (record.method === 'POST' && MODEL_PATHS.includes(record.path.replace(/\/+$/, ''))) {
        exchange.reject(400, errorBody(INVALID_JSON_MESSAGE, 'invalid_request_error'));
        return;
      }
    }
  }

  const path = record.path.replace(/\/+$/, '');
  if (record.method === 'GET' && path === '/v1/models') {
    exchange.send(200, {
      object: 'list',
      data: [{ id: SCRIPTED_MODEL_ID, object: 'model', created: nowSeconds(), owned_by: 'model-server' }],
    });
    return;
  }
  if (record.method === 'POST' && path === RESPONSES_PATH) {
    await handleResponsesRequest(exchange, context);
    return;
  }
  if (record.method !== 'POST' || path !== '/v1/chat/completions') {
    exchange.reject(
      404,
      errorBody(
        `Unknown request URL: ${record.method} ${record.path}. Please check the URL for typos, or see the docs at https://platform.openai.com/docs/api-reference/.`,
        'invalid_request_error',
        null,
        'unknown_url',
      ),
    );
    return;
  }

  const failure = validateChatRequest(record.body, context.dialect);
  if (failure) {
    exchange.reject(failure.status, failure.body);
    return;
  }
  const contextWindow = context.currentContextWindow();
  if (contextWindow !== undefined) {
    record.promptTokens = countPromptTokens(record.body as ChatRequestBody);
    if (record.promptTokens > contextWindow) {
      exchange.reject(400, contextLengthExceededBody(contextWindow, record.promptTokens));
      return;
    }
  }

  const reply = await context.nextReply(record);
  record.reply = reply;
  // The scheme is fixed when the reply is chosen, so a later setToolCallIds does not affect a delayed reply.
  await deliverReply(
    reply,
    exchange,
    { ...(record.body as ChatRequestBody), promptTokens: record.promptTokens },
    context.currentToolCallIds(),
  );
}
