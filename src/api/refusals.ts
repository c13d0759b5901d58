/**
 * How the API refuses, always as `{"error": {"code", "message"}}` with a
 * status its OpenAPI document lists: its own refusals ({@link ApiError}), the
 * client's errors, and Fastify's (a body that is not JSON or not
 * application/json, too large, a path too long or not decodable, no such
 * route, a method the path does not take).
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { NoWorkerAnsweredError } from '../client/client';
import {
  ChildConversationError,
  ConversationClosedError,
  DecisionRefusedError,
  EncryptedPayloadError,
  GoingBackRefusedError,
  InvalidConversationInputError,
  MessageTooLargeError,
  UnstorableTextError,
} from '../common/errors';
import { DecisionProblem } from './decisions';
import { API_ERROR_CODES, type ApiErrorCode } from './replies';

/** A refusal with its stable code; the status comes from {@link API_ERROR_CODES}. */
export class ApiError extends Error {
  constructor(
    readonly code: ApiErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Sends a refusal. */
export function sendRefusal(reply: FastifyReply, code: ApiErrorCode, message: string): FastifyReply {
  return reply.status(API_ERROR_CODES[code]).send({ error: { code, message } });
}

/**
 * The longest path parameter the router reads (decoded, in UTF-16 code units): well over any documented id, so ids a
 * little too long get 400 naming the limit; past this, 414.
 */
export const MAX_PARAM_LENGTH = 2000;

/** The code of a Fastify error that carries an HTTP status, by that status. */
const FASTIFY_STATUS_CODES: Partial<Record<number, ApiErrorCode>> = {
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'message_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
};

/** The error handler of the API's routes. */
export function refuse(err: unknown, request: FastifyRequest, reply: FastifyReply, bodyLimit: number): FastifyReply {
  const e = err as Partial<FastifyError> & { validation?: unknown };
  if (err instanceof ApiError || err instanceof DecisionProblem) return sendRefusal(reply, err.code, err.message);
  if (e.validation) return sendRefusal(reply, 'invalid_request', `The request is not valid: ${e.message}`);
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return sendRefusal(
      reply,
      'message_too_large',
      `The request body is over ${request.routeOptions.bodyLimit ?? bodyLimit} bytes.`,
    );
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return sendRefusal(
      reply,
      'unsupported_media_type',
      `The body must be JSON: send it with "content-type: application/json", not ${JSON.stringify(request.headers['content-type'] ?? '')}.`,
    );
  }
  if (err instanceof MessageTooLargeError) return sendRefusal(reply, 'message_too_large', err.message);
  if (err instanceof InvalidConversationInputError || err instanceof UnstorableTextError)
    return sendRefusal(reply, 'invalid_request', err.message);
  if (err instanceof ConversationClosedError) return sendRefusal(reply, 'conversation_closed', err.message);
  if (err instanceof ChildConversationError) return sendRefusal(reply, 'child_conversation', err.message);
  if (err instanceof DecisionRefusedError) return sendRefusal(reply, 'decision_refused', err.message);
  // A fork point not (yet) in the transcript, a fork id in use, a regeneration refused: conflicts, with their own code.
  if (err instanceof GoingBackRefusedError) return sendRefusal(reply, err.code, err.message);
  if ((err as { name?: string }).name === 'WorkflowNotFoundError')
    return sendRefusal(reply, 'not_found', 'No such conversation.');
  if (err instanceof NoWorkerAnsweredError) return sendRefusal(reply, 'no_worker', err.message);
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    return sendRefusal(reply, FASTIFY_STATUS_CODES[e.statusCode] ?? 'invalid_request', e.message ?? 'Bad request.');
  }
  if (err instanceof EncryptedPayloadError) {
    request.log.error({ err }, err.message);
    return sendRefusal(reply, 'payloads_unreadable', err.message);
  }
  request.log.error({ err }, 'request failed');
  return sendRefusal(reply, 'internal', 'The request failed inside the server; see its log.');
}

/**
 * Fastify's `frameworkErrors`: refusals before any route is found (a path that cannot be decoded, a parameter too
 * long).
 */
export function refuseBeforeRouting(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = request.url.split('?')[0];
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return sendRefusal(
      reply,
      'uri_too_long',
      `A parameter of the path ${shorten(path)} is longer than ${MAX_PARAM_LENGTH} characters; ids are at most the length the API documents.`,
    );
  }
  if (err.code === 'FST_ERR_BAD_URL')
    return sendRefusal(
      reply,
      'invalid_request',
      `The path ${shorten(path)} is not a valid URL (its percent-encoding does not decode).`,
    );
  return sendRefusal(reply, 'internal', 'The request failed inside the server; see its log.');
}

/** The not-found handler: no route for this method and path. */
export function refuseUnknownRoute(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendRefusal(reply, 'not_found', `No route ${request.method} ${shorten(request.url.split('?')[0])}.`);
}

/**
 * Answers 405 with an `Allow` header for every method `path` does not take
 * (Fastify alone answers 404, as if the path did not exist). `methods` are
 * those it takes; a GET route takes HEAD too.
 */
export function refuseOtherMethods(app: FastifyInstance, path: string, methods: readonly string[]): void {
  const allowed = methods.includes('GET') ? [...methods, 'HEAD'] : [...methods];
  const others = app.supportedMethods.filter((m) => !allowed.includes(m) && m !== 'OPTIONS' && m !== 'CONNECT');
  app.route({
    method: [...others, 'OPTIONS'],
    url: path,
    schema: { hide: true },
    // Answered before the body is read: a QUERY or PROPFIND without a content type still gets 405.
    onRequest: async (request, reply) => {
      reply.header('allow', allowed.join(', '));
      if (request.method === 'OPTIONS') return reply.status(204).send();
      return sendRefusal(reply, 'method_not_allowed', `${path} takes ${allowed.join(', ')}, not ${request.method}.`);
    },
    handler: async () => undefined,
  });
}

/** A path as quoted in a message: at most 200 characters. */
function shorten(path: string): string {
  return path.length > 200 ? `${path.slice(0, 200)}…` : path;
}
