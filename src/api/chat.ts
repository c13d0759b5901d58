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
 * streams the new turn. A user message starts a turn; an
 * assistant message carrying approval responses (`addToolApprovalResponse`)
 * is a decision per call, made by the token's subject through the same path
 * as `POST /v1/conversations/{id}/decisions` (four eyes, signing, named by
 * call key); its response streams the rest of the turn.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AgentClient } from '../client/client';
import { decideCalls, DecisionProblem, type DecisionPolicy } from './decisions';
import { ApiError } from './refusals';
import { idText } from './schemas';
import type { ApiPrincipal, ApiRole } from './tokens';
import { csrfMatches, foreignOrigin, type BrowserSessions } from './sessions';
import { followTurnAsUi } from './ui-turn';
import { regenerateForChat } from './regenerate-routes';
import type { UiChunk } from './ui-stream';

/** Response headers of a UI message stream (protocol v1). */
const UI_STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-vercel-ai-ui-message-stream': 'v1',
  'x-accel-buffering': 'no',
};

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
  messages: z.array(uiMessage).min(1).max(CHAT_MAX_MESSAGES),
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
   * The browser sessions of the API's pages: a request with the session
   * cookie and no bearer token is that session's person (the example chat
   * page); a POST must then carry the session's CSRF token (`x-csrf-token`)
   * and come from this host.
   */
  sessions?: BrowserSessions;
}

/** An approval response as `addToolApprovalResponse` leaves it on a tool part. */
interface ApprovalResponse {
  approvalId: string;
  approved: boolean;
  reason?: string;
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
      request.principal = { subject: session.subject, roles: new Set(session.roles) };
    };

  typed.post(
    '/v1/chat',
    { onRequest: signedIn(true, 'requester', 'approver'), schema: { hide: true, body: chatBody } },
    async (request, reply) => {
      const { id, messages, trigger } = request.body;
      const principal = request.principal!;
      // regenerate(): the conversation's last answer again (the request's messages are the client's, never read).
      if (trigger === 'regenerate-message')
        return stream(request, reply, id, { messageId: await regenerateForChat(client, id, principal) });
      const last = messages[messages.length - 1];
      if (last.role === 'user') {
        if (!principal.roles.has('requester'))
          throw new ApiError(
            'forbidden',
            `Sending a message needs the role requester; ${principal.subject} has ${[...principal.roles].join(', ')}.`,
          );
        const text = last.parts
          .flatMap((p) => (p.type === 'text' && typeof p.text === 'string' ? [p.text] : []))
          .join('\n');
        if (text.trim() === '')
          throw new ApiError('invalid_request', 'The last message has no text: send a user message with a text part.');
        const messageId = await client.sendMessage(id, text, { messageId: last.id, sentBy: principal.subject });
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
        await client.state(id); // a conversation that does not exist answers 404 before the stream starts
        return stream(request, reply, id, { continuing: { prepare: () => decide(principal, id, responses) } });
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
    try {
      const followed = await followTurnAsUi(client, conversationId, target, stop.signal, write);
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

  /** Sends each approval response as a decision by `principal`; what was refused is said in the stream as text. */
  async function decide(
    principal: ApiPrincipal,
    conversationId: string,
    responses: readonly ApprovalResponse[],
  ): Promise<UiChunk[]> {
    const notes: string[] = [];
    if (!principal.roles.has('approver')) {
      notes.push(
        `${principal.subject} may not decide (it needs the role approver); the calls still wait for an approver (the inbox, or POST /v1/conversations/${conversationId}/decisions).`,
      );
    } else {
      for (const r of responses) {
        try {
          await decideCalls(
            client,
            principal,
            conversationId,
            {
              decision: r.approved ? 'approve' : 'reject',
              callKeys: [r.approvalId],
              ...(r.reason ? { reason: r.reason } : {}),
            },
            policy,
          );
        } catch (err) {
          if (!(err instanceof DecisionProblem)) throw err;
          notes.push(`${err.message} The call still waits.`);
        }
      }
    }
    return notes.flatMap((note, i) => {
      const id = `decision-note-${i}`;
      return [
        { type: 'text-start', id },
        { type: 'text-delta', id, delta: note },
        { type: 'text-end', id },
      ] satisfies UiChunk[];
    });
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
