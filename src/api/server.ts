/**
 * The HTTP API for requesters, approvers and operators, on Fastify with
 * zod-validated requests and an OpenAPI document at `GET /openapi.json`.
 * Every `/v1` route needs a bearer token (see `tokens.ts`); a decision is
 * recorded under the token's subject, never a name the caller sends.
 * Listens on 127.0.0.1 unless told otherwise.
 */
import fastifySwagger from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { NoWorkerAnsweredError, type AgentClient } from '../client/client';
import { ConfigError, ConversationClosedError, DecisionRefusedError, EncryptedPayloadError, InvalidConversationInputError, MessageTooLargeError } from '../errors';
import { decideCalls, DecisionProblem, type DecisionPolicy } from './decisions';
import { codecRoutes, type CodecOptions } from './codec';
import { inboxRoutes } from './inbox';
import { BrowserSessions } from './sessions';
import { TokenVerifier, type ApiPrincipal, type ApiRole, type ApiTokenConfig } from './tokens';
import { followTurn } from './turn-events';

/** Stable codes of the API's refusals, in `{"error": {"code", "message"}}`. */
export const API_ERROR_CODES = {
  unauthorized: 401,
  forbidden: 403,
  four_eyes: 403,
  invalid_request: 400,
  message_too_large: 413,
  not_found: 404,
  conversation_closed: 409,
  decision_refused: 409,
  identity_provider_unavailable: 503,
  no_worker: 503,
  payload_undecodable: 422,
  codec_off: 501,
} as const;
/** One of {@link API_ERROR_CODES}. */
export type ApiErrorCode = keyof typeof API_ERROR_CODES;

/** The largest request body the API reads (the codec routes read more: `CODEC_BODY_LIMIT_BYTES`). */
const API_BODY_LIMIT_BYTES = 2 * 1024 * 1024;

/** A refusal with its stable code; the status comes from {@link API_ERROR_CODES}. */
export class ApiError extends Error {
  constructor(
    readonly code: ApiErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Options of {@link buildApiServer}. */
export interface ApiServerOptions {
  client: AgentClient;
  /** Static bearer tokens. */
  tokens: readonly ApiTokenConfig[];
  /**
   * Another way to authenticate a bearer token (e.g. OIDC/JWT, `createJwtVerifier`),
   * asked when no static token matches. May reject with an error whose
   * `name` is `IdentityProviderUnavailableError` (answered 503).
   */
  authenticate?: (token: string) => Promise<ApiPrincipal | undefined>;
  /** Four eyes and the key decisions are signed with. */
  decisions?: DecisionPolicy;
  /**
   * Serve the approval inbox page at `/inbox` (`inbox.ts`): approvers sign in
   * with their token once and decide in a browser. Default true.
   */
  inbox?: boolean;
  /**
   * Serve the codec server at `/codec` (`codec.ts`) for the Temporal UI and
   * CLI: operators decode encrypted payloads. Unset: no codec routes.
   */
  codec?: CodecOptions;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: ApiPrincipal;
  }
}

const conversationParams = z.object({ id: z.string().min(1).max(200).describe('The conversation id (its workflow id).') });

/** Builds the API (not listening yet). Throws a `ConfigError` for a bad token configuration. */
export async function buildApiServer(options: ApiServerOptions): Promise<FastifyInstance> {
  const verifier = new TokenVerifier(options.tokens);
  const { client } = options;
  const policy = options.decisions ?? {};
  /** The principal of a bearer token: a static token, else the other authenticator. */
  const authenticate = async (token: string): Promise<ApiPrincipal | undefined> => {
    const found = verifier.verify(token);
    if (found || !options.authenticate) return found;
    try {
      return await options.authenticate(token);
    } catch (err) {
      if ((err as Error).name === 'IdentityProviderUnavailableError') throw new ApiError('identity_provider_unavailable', (err as Error).message);
      throw err;
    }
  };
  const app = Fastify({ logger: false, bodyLimit: API_BODY_LIMIT_BYTES }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  await app.register(fastifySwagger, {
    openapi: {
      info: { title: 'Durable agent worker API', version: '1' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
    transform: jsonSchemaTransform,
  });

  app.setErrorHandler((err: unknown, request, reply) => {
    const e = err as { validation?: unknown; statusCode?: number; message?: string };
    if (err instanceof ApiError) return send(reply, err.code, err.message);
    if (err instanceof DecisionProblem) return send(reply, err.code, err.message);
    if (e.validation) return send(reply, 'invalid_request', `The request is not valid: ${e.message}`);
    if (e.statusCode === 413) return send(reply, 'message_too_large', `The request body is over ${request.routeOptions.bodyLimit ?? API_BODY_LIMIT_BYTES} bytes.`);
    if (err instanceof MessageTooLargeError) return send(reply, 'message_too_large', err.message);
    if (err instanceof InvalidConversationInputError) return send(reply, 'invalid_request', err.message);
    if (err instanceof ConversationClosedError) return send(reply, 'conversation_closed', err.message);
    if (err instanceof DecisionRefusedError) return send(reply, 'decision_refused', err.message);
    if ((err as { name?: string }).name === 'WorkflowNotFoundError') return send(reply, 'not_found', 'No such conversation.');
    if (err instanceof NoWorkerAnsweredError) return send(reply, 'no_worker', err.message);
    if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) return send(reply, 'invalid_request', e.message ?? 'Bad request.');
    if (err instanceof EncryptedPayloadError) {
      request.log.error({ err }, err.message);
      return reply.status(500).send({ error: { code: 'payloads_unreadable', message: err.message } });
    }
    reply.status(500).send({ error: { code: 'internal', message: 'The request failed inside the server; see its log.' } });
  });
  app.setNotFoundHandler((request, reply) => send(reply, 'not_found', `No route ${request.method} ${request.url.split('?')[0]}.`));

  /** The onRequest hook of a `/v1` route (before validation, so a caller without a token learns nothing about the request's shape): a valid bearer token with one of `roles`. */
  const allow =
    (...roles: ApiRole[]) =>
    async (request: FastifyRequest): Promise<void> => {
      const header = request.headers.authorization ?? '';
      const match = /^Bearer (\S+)$/i.exec(header);
      if (!match) throw new ApiError('unauthorized', 'Send a token: "Authorization: Bearer <token>".');
      const principal = await authenticate(match[1]);
      if (!principal) throw new ApiError('unauthorized', 'The token is not valid (unknown, expired, or not for this API).');
      if (!roles.some((r) => principal.roles.has(r))) {
        throw new ApiError('forbidden', `This needs one of the roles ${roles.join(', ')}; the token of ${principal.subject} has ${[...principal.roles].join(', ')}.`);
      }
      request.principal = principal;
    };
  const security = [{ bearer: [] }];

  app.get('/healthz', { schema: { hide: true } }, async () => ({ ok: true }));
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  app.post(
    '/v1/conversations/:id/messages',
    {
      onRequest: allow('requester'),
      schema: {
        summary: 'Send a message; starts the conversation when it does not run yet.',
        security,
        params: conversationParams,
        body: z.object({
          text: z.string().refine((text) => text.trim() !== '', 'A message needs some text.'),
          messageId: z.string().min(1).max(200).optional().describe('For deduplication; a random one when absent.'),
          input: z.record(z.string(), z.unknown()).optional().describe('ConversationInput, used when this message starts the conversation.'),
        }),
      },
    },
    async (request, reply) => {
      const { text, messageId, input } = request.body;
      const id = await client.sendMessage(request.params.id, text, { messageId, input, sentBy: request.principal!.subject });
      reply.status(202);
      return { conversationId: request.params.id, messageId: id };
    },
  );

  app.get(
    '/v1/conversations/:id',
    { onRequest: allow('requester', 'approver', 'operator'), schema: { summary: "The conversation's state.", security, params: conversationParams } },
    async (request) => client.state(request.params.id),
  );

  app.get(
    '/v1/conversations/:id/transcript',
    {
      onRequest: allow('requester', 'approver', 'operator'),
      schema: {
        summary: "The conversation's stored messages, in pages.",
        security,
        params: conversationParams,
        querystring: z.object({
          after: z.coerce.number().int().min(-1).default(-1).describe('Seq after which the page starts.'),
          limit: z.coerce.number().int().min(1).max(500).default(100),
        }),
      },
    },
    async (request) => {
      const { after, limit } = request.query;
      const page = await client.transcriptPage(request.params.id, after, limit);
      return { messages: page, next: page.length === limit ? page[page.length - 1].seq : null };
    },
  );

  const filterValue = z.string().min(1).max(256).regex(/^[^'"\\]*$/, 'may not contain quotes or backslashes');
  app.get(
    '/v1/approvals',
    {
      onRequest: allow('approver', 'operator'),
      schema: {
        summary: 'Tool calls waiting for a decision across conversations, oldest first (Temporal visibility and PostgreSQL; no query per conversation).',
        security,
        querystring: z.object({
          conversationId: filterValue.optional().describe('Only calls of this conversation.'),
          tool: filterValue.optional().describe('Only calls of this tool.'),
          requester: filterValue.optional().describe('Only calls of turns this subject started.'),
          minAgeSeconds: z.coerce.number().int().min(0).optional().describe('Only calls waiting at least this long.'),
        }),
      },
    },
    async (request) => {
      const { conversationId, tool, requester, minAgeSeconds } = request.query;
      const approvals = await client.pendingApprovals({ conversationId, tool, requester, minAgeMs: minAgeSeconds === undefined ? undefined : minAgeSeconds * 1000 });
      return { approvals: approvals.map((a) => ({ ...a, requestedAt: a.requestedAt.toISOString() })) };
    },
  );

  app.post(
    '/v1/conversations/:id/decisions',
    {
      onRequest: allow('approver'),
      schema: {
        summary:
          'Approve or reject the named tool calls. Each call is named: a call that appeared after the approver looked is never decided by accident. ' +
          'Answers 200 when the conversation\'s worker applied the decisions, 202 with queued: true when no worker answered in time (3 s by default): the signed decisions then wait in the conversation\'s history and apply when a worker runs, if the calls still wait.',
        security,
        params: conversationParams,
        // Strict: a field such as decidedBy is refused, never used (the decider is the token's subject).
        body: z.strictObject({
          decision: z.enum(['approve', 'reject']),
          toolCallIds: z.array(z.string().min(1)).min(1).max(128).optional().describe('The calls, by tool-call id.'),
          callKeys: z.array(z.string().min(1)).min(1).max(128).optional().describe('Or the calls as listed by GET /v1/approvals (their callKey): the version the approver saw.'),
          reason: z.string().max(2000).optional(),
        }),
      },
    },
    async (request, reply) => {
      const outcome = await decideCalls(client, request.principal!, request.params.id, request.body, policy);
      // Accepted, not applied: no worker answered, the signed decisions wait in the conversation's history.
      if (outcome.queued) reply.status(202);
      return outcome;
    },
  );

  app.get(
    '/v1/conversations/:id/events',
    {
      onRequest: allow('requester', 'approver', 'operator'),
      schema: {
        summary:
          'Follow a turn as server-sent events: delta (model text), tool_call, approval, status, and last turn (its outcome and answer). ' +
          'Follows the turn that takes messageId, or the next turn to finish.',
        security,
        params: conversationParams,
        querystring: z.object({ messageId: z.string().min(1).max(200).optional() }),
      },
    },
    async (request, reply) => {
      const conversationId = request.params.id;
      await client.state(conversationId); // a conversation that does not exist answers 404 before the stream starts
      const stop = new AbortController();
      request.raw.on('close', () => stop.abort());
      reply.hijack();
      reply.raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
      try {
        await followTurn(client, conversationId, { messageId: request.query.messageId, signal: stop.signal }, ({ event, data }) => {
          reply.raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
        });
      } catch (err) {
        reply.raw.write(`event: error\ndata: ${JSON.stringify({ code: 'internal', message: (err as Error).message })}\n\n`);
      }
      reply.raw.end();
    },
  );

  app.post(
    '/v1/conversations/:id/cancel',
    {
      onRequest: allow('requester', 'operator'),
      schema: { summary: 'Cancel the running turn.', security, params: conversationParams, body: z.object({ reason: z.string().max(2000).optional() }).optional() },
    },
    async (request, reply) => {
      await client.cancelTurn(request.params.id, request.body?.reason);
      reply.status(202);
      return { cancelled: true };
    },
  );

  const sessions = options.inbox !== false ? new BrowserSessions() : undefined;
  if (sessions) await app.register(inboxRoutes, { client, authenticate, policy, sessions });
  if (options.codec) {
    await codecRoutes(app, {
      ...options.codec,
      authenticate,
      sessions,
      refusal: (code, message) => new ApiError(code, message),
    });
  }

  return app;
}

function send(reply: FastifyReply, code: ApiErrorCode, message: string): FastifyReply {
  return reply.status(API_ERROR_CODES[code]).send({ error: { code, message } });
}

/** Options of {@link startApiServer}. */
export interface StartApiOptions extends ApiServerOptions {
  /** Default 127.0.0.1: nothing listens beyond this machine unless configured. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
}

/** Builds the API and listens; returns its base URL and a stop function. */
export async function startApiServer(options: StartApiOptions): Promise<{ url: string; app: FastifyInstance; stop: () => Promise<void> }> {
  const app = await buildApiServer(options);
  const host = options.host ?? '127.0.0.1';
  try {
    await app.listen({ host, port: options.port ?? 0 });
  } catch (err) {
    await app.close().catch(() => undefined);
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new ConfigError(`The HTTP API cannot listen on ${host}:${options.port}: the port is in use. Set AGENT_API_PORT to another port (0 for any free one), or to "off".`);
    }
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, app, stop: () => app.close() };
}
