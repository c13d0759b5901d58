/**
 * The chat endpoint for the AI SDK (`ai` 7, `useChat` with
 * `DefaultChatTransport`): `POST /v1/chat` takes the transport's request
 * (the chat id is the conversation id) and answers with the turn as a UI
 * message stream (`ui-stream.ts`); `GET /v1/chat/{id}/stream` replays the
 * running turn from its start, then follows it (the last turn, for a minute
 * after it ended; else 204).
 *
 * Earlier messages come from the transcript, never from the client: only
 * the request's last message is read. `regenerate()` (trigger
 * `regenerate-message`) regenerates the conversation's last answer and
 * streams the new turn. A user message (its text and file parts:
 * `message-parts.ts`) starts a turn; an
 * assistant message carrying approval responses (`addToolApprovalResponse`)
 * is a decision per call, made by the token's subject through the same path
 * as `POST /v1/conversations/{id}/decisions` (four eyes, signing, named by
 * call key; one its sender already made on that call is not sent again:
 * `chat-repeats.ts`); its response streams the rest of the turn. A response whose
 * reader may decide none of the waiting calls (a requester under four eyes)
 * stays open for the decision (`ui-hold.ts`, `chat-approvals.ts`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AgentClient } from '../client/client';
import type { DecisionPolicy } from './decisions';
import { decideFromChat, viewerOf } from './chat-approvals';
import type { ApprovalResponse } from './ui-approvals';
import { endedTurnOf } from './chat-repeats';
import { ApiError } from './refusals';
import { idText } from './schemas';
import type { ApiRole } from './tokens';
import { csrfMatches, foreignOrigin, sessionPrincipal, type BrowserSessions } from './sessions';
import { followTurnAsUi } from './ui-turn';
import { regenerateForChat } from './regenerate-routes';
import { FILES_BODY_LIMIT_BYTES, sendUserParts } from './message-parts';
import { messageFileRoutes } from './message-file-routes';
import type { UiChunk } from './ui-stream';

/** Response headers of a UI message stream (protocol v1). */
const UI_STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-vercel-ai-ui-message-stream': 'v1',
  'x-accel-buffering': 'no',
};

/** How long a response waits open for someone else's decision before the client is left to resume. */
export const CHAT_HOLD_FOR_DECISION_MS = 120_000;

/** How long after a turn ended a reconnect still replays it (then 204). */
export const CHAT_RESUME_AFTER_END_MS = 60_000;

/**
 * The most messages a request may carry (the transport resends the chat unless told otherwise; only the last is read).
 */
const CHAT_MAX_MESSAGES = 10_000;

const uiPart = z.looseObject({ type: z.string() });
const uiMessage = z.looseObject({
  id: z.string(),
  role: z.enum(['system', 'user', 'assistant']),
  parts: z.array(uiPart),
});

/** The body `DefaultChatTransport` sends (extra fields are ignored). */
const chatBody = z.looseObject({
  id: idText('id', 'The chat id: the conversation id.'),
  // Empty for regenerate() when the page holds nothing before the answer it regenerates (the messages are not read).
  messages: z.array(uiMessage).max(CHAT_MAX_MESSAGES),
  trigger: z.enum(['submit-message', 'regenerate-message']).optional(),
  messageId: z.string().optional(),
});

/** What the chat routes need from the server. */
export interface ChatRoutesOptions {
  client: AgentClient;
  policy: DecisionPolicy;
  /** The bearer-token hook of `/v1` routes, for the given roles. */
  allow: (...roles: ApiRole[]) => (request: FastifyRequest) => Promise<void>;
  /** How long after a turn ended a reconnect still replays it. Default {@link CHAT_RESUME_AFTER_END_MS}. */
  replayEndedTurnMs?: number;
  /**
   * How long a response stays open while its reader may decide none of the waiting calls (four eyes), streaming the
   * decision when it comes; then it ends and the client resumes. Default {@link CHAT_HOLD_FOR_DECISION_MS}; 0: end at
   * once.
   */
  holdForDecisionMs?: number;
  /**
   * The browser sessions of the API's pages: a request with the session
   * cookie and no bearer token is that session's person (the example chat
   * page); a POST must then carry the session's CSRF token (`x-csrf-token`)
   * and come from this host.
   */
  sessions?: BrowserSessions;
}

/** Registers `POST /v1/chat` and `GET /v1/chat/{id}/stream`. */
export function chatRoutes(app: FastifyInstance, options: ChatRoutesOptions): void {
  const { client, policy, allow, sessions } = options;
  const typed = app.withTypeProvider<ZodTypeProvider>();

  /**
   * A bearer token with one of `roles`; or, without one, a browser session with one (and, for a write, its CSRF token
   * from this host).
   */
  const signedIn =
    (write: boolean, ...roles: ApiRole[]) =>
    async (request: FastifyRequest): Promise<void> => {
      if (request.headers.authorization !== undefined || !sessions?.cookieOf(request)) return allow(...roles)(request);
      const session = sessions.of(request);
      if (!session) throw new ApiError('unauthorized', 'Your session has ended: sign in again (reload the chat page).');
      if (write) {
        const origin = foreignOrigin(request);
        if (origin !== undefined)
          throw new ApiError('forbidden', `Refused: this request came from another site (${origin}).`);
        const csrf = request.headers['x-csrf-token'];
        if (typeof csrf !== 'string' || !csrfMatches(session, csrf)) {
          throw new ApiError(
            'forbidden',
            "Refused: a request signed in by the session cookie must carry the session's CSRF token in x-csrf-token (the page's csrf meta tag).",
          );
        }
      }
      if (!roles.some((r) => session.roles.includes(r))) {
        throw new ApiError(
          'forbidden',
          `This needs one of the roles ${roles.join(', ')}; ${session.subject} has ${session.roles.join(', ')}.`,
        );
      }
      request.principal = sessionPrincipal(session);
    };

  typed.post(
    '/v1/chat',
    {
      onRequest: signedIn(true, 'requester', 'approver'),
      bodyLimit: FILES_BODY_LIMIT_BYTES,
      schema: { hide: true, body: chatBody },
    },
    async (request, reply) => {
      const { id, messages, trigger, messageId: regenerated } = request.body;
      const principal = request.principal!;
      // regenerate(): the conversation's last answer again (the request's messages are the client's, never read).
      if (trigger === 'regenerate-message')
        return stream(request, reply, id, { messageId: await regenerateForChat(client, id, principal, regenerated) });
      const last = messages.at(-1);
      if (!last) throw new ApiError('invalid_request', 'The request has no message: send the new user message.');
      if (last.role === 'user') {
        if (!principal.roles.has('requester'))
          throw new ApiError(
            'forbidden',
            `Sending a message needs the role requester; ${principal.subject} has ${[...principal.roles].join(', ')}.`,
          );
        // Its text and files, or a 400 naming the part that cannot go to the model (message-parts.ts).
        const messageId = await sendUserParts(client, id, last, principal.subject);
        return stream(request, reply, id, { messageId });
      }
      if (last.role === 'assistant') {
        const responses = approvalResponses(last.parts);
        if (responses.length === 0) {
          throw new ApiError(
            'invalid_request',
            'The last message is an answer with no approval response: send a user message, or approve or reject a waiting call.',
          );
        }
        const state = await client.state(id); // a conversation that does not exist answers 404 before the stream starts
        const callKeys = responses.map((r) => r.approvalId);
        // Answers on an ended turn (sent again) read its rest: what became of their calls.
        const messageId = endedTurnOf(state, id, callKeys);
        return stream(request, reply, id, {
          ...(messageId ? { messageId } : {}),
          continuing: {
            prepare: () => decideFromChat(client, policy, principal, id, responses),
            callKeys,
          },
        });
      }
      throw new ApiError(
        'invalid_request',
        'The last message must be a user message or an answer carrying approval responses.',
      );
    },
  );

  typed.get(
    '/v1/chat/:id/stream',
    {
      onRequest: signedIn(false, 'requester', 'approver', 'operator'),
      schema: { hide: true, params: z.object({ id: idText('id', 'The chat id.') }) },
    },
    async (request, reply) => {
      try {
        await client.state(request.params.id);
      } catch (err) {
        // A chat that has not started yet has no turn to resume (useChat asks on every page load).
        if ((err as { name?: string }).name === 'WorkflowNotFoundError') return reply.status(204).send();
        throw err;
      }
      return stream(
        request,
        reply,
        request.params.id,
        { endedWithinMs: options.replayEndedTurnMs ?? CHAT_RESUME_AFTER_END_MS },
        true,
      );
    },
  );
  // The files user messages carried, for the page to show (read with the session cookie, or a token).
  messageFileRoutes(app, client, signedIn(false, 'requester', 'approver', 'operator'));

  /**
   * Streams the turn; with `replay`, answers 204 when none runs. Everything
   * before the first chunk is refused as usual (JSON errors); afterwards a
   * failure becomes an `error` chunk.
   */
  async function stream(
    request: FastifyRequest,
    reply: FastifyReply,
    conversationId: string,
    target: Parameters<typeof followTurnAsUi>[2],
    replay = false,
  ): Promise<void> {
    const stop = new AbortController();
    request.raw.on('close', () => stop.abort());
    let opened = false;
    const open = () => {
      if (opened) return;
      opened = true;
      reply.hijack();
      reply.raw.writeHead(200, UI_STREAM_HEADERS);
    };
    const write = (chunk: UiChunk) => {
      open();
      reply.raw.write(`data: ${JSON.stringify(chunk)}\n\n`);
    };
    if (!replay) open();
    const held = {
      viewer: viewerOf(request.principal!, policy),
      holdForDecisionMs: options.holdForDecisionMs ?? CHAT_HOLD_FOR_DECISION_MS,
      ...target,
    };
    // A comment line: the AI SDK's stream parser skips it, and proxies see the response alive while it waits.
    const keepAlive = () => opened && reply.raw.write(': waiting for a decision\n\n');
    try {
      const followed = await followTurnAsUi(client, conversationId, held, stop.signal, write, keepAlive);
      if (!followed && replay) {
        reply.status(204).send();
        return;
      }
    } catch (err) {
      request.log.error({ err }, 'streaming a turn failed');
      if (!opened) throw err;
      write({ type: 'error', errorText: 'Following the turn failed inside the server; see its log.' });
    }
    open();
    reply.raw.end('data: [DONE]\n\n');
  }
}

/**
 * The approval responses on a message's tool parts (`state: "approval-responded"`), each naming its call by the
 * approval id.
 */
function approvalResponses(parts: readonly Record<string, unknown>[]): ApprovalResponse[] {
  return parts.flatMap((part) => {
    const approval = part.approval as { id?: unknown; approved?: unknown; reason?: unknown } | undefined;
    if (
      part.state !== 'approval-responded' ||
      typeof approval?.id !== 'string' ||
      typeof approval.approved !== 'boolean'
    )
      return [];
    return [
      {
        approvalId: approval.id,
        approved: approval.approved,
        ...(typeof approval.reason === 'string' && approval.reason ? { reason: approval.reason } : {}),
      },
    ];
  });
}
