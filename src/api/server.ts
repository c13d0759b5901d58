/**
 * The HTTP API for requesters, approvers and operators, on Fastify with
 * zod-validated requests and an OpenAPI document at `GET /openapi.json`
 * (`openapi.ts`) that describes each request and answer exactly
 * (`schemas.ts`, `replies.ts`). Every `/v1` route needs a bearer token (see
 * `tokens.ts`); a decision is recorded under the token's subject, never a
 * name the caller sends. Every refusal is `{"error": {"code", "message"}}`
 * (`refusals.ts`). Listens on 127.0.0.1 unless told otherwise.
 */
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { isWorkerOutage, type AgentClient } from '../client/client';
import { SENT_BY_MAX_CHARS } from '../contract';
import { describeUnstorableText } from '../contract/text';
import { ConfigError } from '../common/errors';
import { auditRoutes } from './audit-routes';
import { decideCalls, type DecisionPolicy } from './decisions';
import { approvalListRoute, decideLink } from './approval-list-route';
import { chatRoutes } from './chat';
import { codecRoutes, type CodecOptions } from './codec';
import { eventRoutes } from './event-routes';
import { comeBackRoutes } from './come-back-routes';
import { forkRoutes } from './fork-routes';
import { grantRoutes } from './grant-routes';
import { notificationRoutes } from './notification-routes';
import { inboxRoutes } from './inbox';
import { registerOpenApi } from './openapi';
import { regenerateRoutes } from './regenerate-routes';
import { scheduleRoutes } from './schedule-routes';
import { FILES_BODY_LIMIT_BYTES, filesOfBody } from './message-parts';
import { messageWithFilesBody } from './message-files-schema';
import {
  ApiError,
  MAX_PARAM_LENGTH,
  refuse,
  refuseBeforeRouting,
  refuseOtherMethods,
  refuseUnknownRoute,
} from './refusals';
import {
  cancelAccepted,
  conversationStateReply,
  decisionOutcomeReply,
  messageAccepted,
  refusals,
  serverSentEvent,
  transcriptPageReply,
} from './replies';
import {
  cancelBody,
  conversationParams,
  decisionBody,
  EVENTS_WAIT_SECONDS,
  eventsQuery,
  transcriptQuery,
} from './schemas';
import { BrowserSessions } from './sessions';
import { TokenVerifier, type ApiPrincipal, type ApiRole, type ApiTokenConfig } from './tokens';
import { followTurn } from './turn-events';
import { uiHistoryRoutes } from './ui-history-route';

/** The largest request body the API reads (the codec routes read more: `CODEC_BODY_LIMIT_BYTES`). */
const API_BODY_LIMIT_BYTES = 2 * 1024 * 1024;

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
  /**
   * The chat endpoint (`POST /v1/chat`): how long after a turn ended a
   * reconnect still replays it (default 60 s); and the example chat page's
   * bundled script (`npm run build:chat-page`), served at `/chat` with the
   * inbox's sign-in (unset: no page).
   */
  chat?: { replayEndedTurnMs?: number; holdForDecisionMs?: number; pageBundle?: string };
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: ApiPrincipal;
  }
}

/** Builds the API (not listening yet). Throws a `ConfigError` for a bad token configuration. */
async function buildApiServer(options: ApiServerOptions): Promise<FastifyInstance> {
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
      if ((err as Error).name === 'IdentityProviderUnavailableError')
        throw new ApiError('identity_provider_unavailable', (err as Error).message);
      throw err;
    }
  };
  const app = Fastify({
    logger: false,
    bodyLimit: API_BODY_LIMIT_BYTES,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: refuseBeforeRouting,
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // Bodies are JSON (the inbox's forms add their own parser): text/plain is refused with 415 as the document says.
  app.removeContentTypeParser('text/plain');
  await registerOpenApi(app);
  app.setErrorHandler((err, request, reply) => refuse(err, request, reply, API_BODY_LIMIT_BYTES));
  app.setNotFoundHandler(refuseUnknownRoute);

  /**
   * The onRequest hook of a `/v1` route (before validation, so a caller without a token learns nothing about the
   * request's shape): a valid bearer token with one of `roles`.
   */
  const allow =
    (...roles: ApiRole[]) =>
    async (request: FastifyRequest): Promise<void> => {
      const header = request.headers.authorization ?? '';
      const match = /^Bearer (\S+)$/i.exec(header);
      if (!match) throw new ApiError('unauthorized', 'Send a token: "Authorization: Bearer <token>".');
      const principal = await authenticate(match[1]);
      if (!principal)
        throw new ApiError('unauthorized', 'The token is not valid (unknown, expired, or not for this API).');
      const unrecordable = describeUnrecordableSubject(principal.subject);
      if (unrecordable) throw new ApiError('unauthorized', `The token cannot be used here: ${unrecordable}.`);
      if (!roles.some((r) => principal.roles.has(r))) {
        throw new ApiError(
          'forbidden',
          `This needs one of the roles ${roles.join(', ')}; the token of ${principal.subject} has ${[...principal.roles].join(', ')}.`,
        );
      }
      request.principal = principal;
    };
  const security = [{ bearer: [] }];
  /**
   * The refusals every /v1 operation may answer: a bad request, no or a wrong token, a failure inside, no identity
   * provider or worker in time.
   */
  const always = [400, 401, 403, 500, 503] as const;
  /** And those of an operation with a body. */
  const withBody = [413, 415] as const;
  /** And those of an operation on one conversation. */
  const onConversation = [414] as const;
  /** The operations a conversation's links lead to, with the conversation's id. */
  const conversationLinks = (id: string) => ({
    getConversation: { operationId: 'getConversation', parameters: { id }, description: "The conversation's state." },
    getTranscript: {
      operationId: 'getTranscript',
      parameters: { id },
      description: "The conversation's stored messages.",
    },
    cancelTurn: { operationId: 'cancelTurn', parameters: { id }, description: 'Cancel its running turn.' },
  });

  app.get('/healthz', { schema: { hide: true } }, async () => ({ ok: true }));
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  app.post(
    '/v1/conversations/:id/messages',
    {
      onRequest: allow('requester'),
      bodyLimit: FILES_BODY_LIMIT_BYTES,
      schema: {
        operationId: 'sendMessage',
        summary: 'Send a message; starts the conversation when it does not run yet.',
        security,
        params: conversationParams,
        body: messageWithFilesBody,
        response: { 202: messageAccepted, ...refusals(...always, ...withBody, ...onConversation, 409) },
      },
      links: {
        202: {
          ...conversationLinks('$request.path.id'),
          followTurn: {
            operationId: 'followTurn',
            parameters: { id: '$request.path.id', messageId: '$response.body#/messageId' },
            description: 'Follow the turn that takes this message.',
          },
        },
      },
    },
    async (request, reply) => {
      const { text, messageId, input } = request.body;
      const id = await client.sendMessage(request.params.id, text, {
        messageId,
        input,
        sentBy: request.principal!.subject,
        ...(await filesOfBody(client, request.params.id, request.body.files)),
      });
      reply.status(202);
      return { conversationId: request.params.id, messageId: id };
    },
  );
  refuseOtherMethods(app, '/v1/conversations/:id/messages', ['POST']);

  app.get(
    '/v1/conversations/:id',
    {
      onRequest: allow('requester', 'approver', 'operator'),
      schema: {
        operationId: 'getConversation',
        summary: "The conversation's state.",
        security,
        params: conversationParams,
        response: { 200: conversationStateReply, ...refusals(...always, ...onConversation, 404) },
      },
      links: {
        200: {
          decide: decideLink(
            '$request.path.id',
            '$response.body#/pendingApprovals/0/callKey',
            'reject',
            'Reject the first call waiting for a decision.',
          ),
        },
      },
    },
    async (request) => client.state(request.params.id),
  );
  refuseOtherMethods(app, '/v1/conversations/:id', ['GET']);

  app.get(
    '/v1/conversations/:id/transcript',
    {
      onRequest: allow('requester', 'approver', 'operator'),
      schema: {
        operationId: 'getTranscript',
        summary: "The conversation's stored messages, in pages.",
        security,
        params: conversationParams,
        querystring: transcriptQuery,
        response: { 200: transcriptPageReply, ...refusals(...always, ...onConversation) },
      },
      links: {
        200: {
          nextPage: {
            operationId: 'getTranscript',
            parameters: { id: '$request.path.id', after: '$response.body#/next' },
            description: 'The next page.',
          },
        },
      },
    },
    async (request) => {
      const { after = -1, limit = 100 } = request.query;
      const page = await client.transcriptPage(request.params.id, after, limit);
      return { messages: page, next: page.length === limit ? page[page.length - 1].seq : null };
    },
  );
  refuseOtherMethods(app, '/v1/conversations/:id/transcript', ['GET']);

  approvalListRoute(app, { client, policy, allow }); // the calls waiting for a decision, the caller's first

  app.post(
    '/v1/conversations/:id/decisions',
    {
      onRequest: allow('approver'),
      schema: {
        operationId: 'decide',
        summary:
          'Approve or reject the named tool calls. Each call is named: a call that appeared after the approver looked is never decided by accident. ' +
          'The approval of one call may also give a standing grant (grant): later calls of its tool in the conversation, under the same approval policy rule, run without asking within its limits. ' +
          "Answers 200 when the conversation's worker applied the decisions, 202 with queued: true when no worker answered in time (3 s by default): the signed decisions then wait in the conversation's history and apply when a worker runs, if the calls still wait.",
        security,
        params: conversationParams,
        body: decisionBody,
        response: {
          200: decisionOutcomeReply.describe("Applied by the conversation's worker."),
          202: decisionOutcomeReply.describe('Queued: no worker answered in time.'),
          ...refusals(...always, ...withBody, ...onConversation, 404, 409),
        },
      },
      links: { 200: conversationLinks('$request.path.id'), 202: conversationLinks('$request.path.id') },
    },
    async (request, reply) => {
      const outcome = await decideCalls(client, request.principal!, request.params.id, request.body, policy);
      // Accepted, not applied: no worker answered, the signed decisions wait in the conversation's history.
      if (outcome.queued) reply.status(202);
      return outcome;
    },
  );
  refuseOtherMethods(app, '/v1/conversations/:id/decisions', ['POST']);

  app.get(
    '/v1/conversations/:id/events',
    {
      onRequest: allow('requester', 'approver', 'operator'),
      schema: {
        operationId: 'followTurn',
        summary:
          'Follow a turn as server-sent events: delta (model text), tool_call, approval, status, and last turn (its outcome and answer). ' +
          `Follows the turn that takes messageId, or the next turn to finish, for at most waitSeconds (default ${EVENTS_WAIT_SECONDS.default}): ` +
          'a turn not finished by then ends the stream with wait_ended.',
        security,
        params: conversationParams,
        querystring: eventsQuery,
        response: {
          200: {
            description: 'The events, as they happen.',
            content: { 'text/event-stream': { schema: serverSentEvent } },
          },
          ...refusals(...always, ...onConversation, 404),
        },
      },
    },
    async (request, reply) => {
      const conversationId = request.params.id;
      const { messageId, waitSeconds = EVENTS_WAIT_SECONDS.default } = request.query;
      await client.state(conversationId); // a conversation that does not exist answers 404 before the stream starts
      const stop = new AbortController();
      let waited = false;
      const timer = setTimeout(() => {
        waited = true;
        stop.abort();
      }, waitSeconds * 1000);
      request.raw.on('close', () => stop.abort());
      reply.hijack();
      reply.raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
      const write = (event: string, data: unknown) =>
        reply.raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      let finished = false;
      try {
        await followTurn(client, conversationId, { messageId, signal: stop.signal }, ({ event, data }) => {
          if (event === 'turn') finished = true;
          write(event, data);
        });
        if (!finished && waited)
          write('wait_ended', { waitSeconds, ...(messageId === undefined ? {} : { messageId }) });
      } catch (err) {
        if (!finished && waited && isWorkerOutage(err)) {
          // No worker answered until the wait ended (one restarting): the turn is not lost, only not followed further.
          write('wait_ended', { waitSeconds, ...(messageId === undefined ? {} : { messageId }) });
        } else {
          request.log.error({ err }, 'following a turn failed');
          write('error', { code: 'internal', message: 'Following the turn failed inside the server; see its log.' });
        }
      } finally {
        clearTimeout(timer);
      }
      reply.raw.end();
    },
  );
  refuseOtherMethods(app, '/v1/conversations/:id/events', ['GET']);

  app.post(
    '/v1/conversations/:id/cancel',
    {
      onRequest: allow('requester', 'operator'),
      schema: {
        operationId: 'cancelTurn',
        summary: 'Cancel the running turn.',
        security,
        params: conversationParams,
        body: cancelBody,
        response: { 202: cancelAccepted, ...refusals(...always, ...withBody, ...onConversation, 404) },
      },
      links: { 202: { getConversation: conversationLinks('$request.path.id').getConversation } },
    },
    async (request, reply) => {
      await client.cancelTurn(request.params.id, request.body?.reason);
      reply.status(202);
      return { cancelled: true as const };
    },
  );
  refuseOtherMethods(app, '/v1/conversations/:id/cancel', ['POST']);
  regenerateRoutes(app, { client, allow });

  forkRoutes(app, { client, allow });
  grantRoutes(app, { client, policy, allow }); // revoking a standing grant, for approvers
  notificationRoutes(app, { client, allow }); // webhook deliveries, for operators
  auditRoutes(app, { client, allow }); // decisions in a time range, as JSON Lines, for operators
  eventRoutes(app, { client, allow }); // events for the calls waiting for them, for the events role
  comeBackRoutes(app, { client, allow }); // a conversation asked to come back later
  scheduleRoutes(app, { client, allow }); // conversations on a schedule, for operators
  const sessions = options.inbox !== false ? new BrowserSessions() : undefined;
  // The AI SDK's chat transport (useChat): the turn as a UI message stream.
  chatRoutes(app, { ...options.chat, client, policy, allow, sessions });
  uiHistoryRoutes(app, { client, policy, allow, sessions }); // the history a chat page starts from
  refuseOtherMethods(app, '/v1/chat', ['POST']);
  refuseOtherMethods(app, '/v1/chat/:id/stream', ['GET']);

  if (sessions)
    await app.register(inboxRoutes, {
      client,
      authenticate,
      policy,
      sessions,
      chatPageBundle: options.chat?.pageBundle,
    });
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

/** Why a token's subject cannot be recorded as a message's sender or a decider; undefined when it can. */
function describeUnrecordableSubject(subject: string): string | undefined {
  if (subject.length > SENT_BY_MAX_CHARS)
    return `its subject is ${subject.length} characters long, and at most ${SENT_BY_MAX_CHARS} are recorded`;
  return describeUnstorableText('its subject', subject);
}

/** Options of {@link startApiServer}. */
export interface StartApiOptions extends ApiServerOptions {
  /** Default 127.0.0.1: nothing listens beyond this machine unless configured. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
}

/** Builds the API and listens; returns its base URL and a stop function. */
export async function startApiServer(
  options: StartApiOptions,
): Promise<{ url: string; app: FastifyInstance; stop: () => Promise<void> }> {
  const app = await buildApiServer(options);
  const host = options.host ?? '127.0.0.1';
  try {
    await app.listen({ host, port: options.port ?? 0 });
  } catch (err) {
    await app.close().catch(() => undefined);
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new ConfigError(
        `The HTTP API cannot listen on ${host}:${options.port}: the port is in use. Set AGENT_API_PORT to another port (0 for any free one), or to "off".`,
      );
    }
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, app, stop: () => app.close() };
}
