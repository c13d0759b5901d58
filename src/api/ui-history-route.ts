/**
 * `GET /v1/conversations/{id}/ui-messages`: the conversation's whole
 * transcript as the AI SDK's `UIMessage[]` (`ui-history.ts`), for a chat page
 * to start from (`useChat({ messages })`) before it resumes the running
 * turn's stream. The same roles as the transcript; besides a bearer token,
 * the example chat page's session cookie is taken (a read: no CSRF token).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AgentClient } from '../client/client';
import type { ConversationState } from '../contract';
import { viewerOf } from './chat-approvals';
import type { DecisionPolicy } from './decisions';
import { ApiError, refuseOtherMethods } from './refusals';
import { refusals } from './replies';
import { conversationParams } from './schemas';
import { sessionPrincipal, type BrowserSessions } from './sessions';
import type { ApiRole } from './tokens';
import { uiHistory } from './ui-history';

const uiPart = z
  .looseObject({ type: z.string() })
  .describe('A part as ai 7 names it: text, reasoning, step-start, dynamic-tool (with its state), file.');

/** `200` of the route. */
export const uiMessagesReply = z
  .strictObject({
    messages: z.array(
      z
        .looseObject({
          id: z
            .string()
            .describe(
              "user-<seq> for a user message; turn-<seq of the turn's first message> for an answer, the id its live stream (POST /v1/chat, GET /v1/chat/{id}/stream) gives it.",
            ),
          role: z.enum(['user', 'assistant']),
          metadata: z
            .record(z.string(), z.unknown())
            .optional()
            .describe(
              "An answer's: how its turn ended (outcome, error, guardrail, typed output), as the stream's finish.",
            ),
          parts: z.array(uiPart),
        })
        .describe("A message in ai 7's UIMessage shape."),
    ),
  })
  .describe("The conversation's messages, oldest first, each once; an unknown conversation has none.");

/** What the route needs from the server. */
export interface UiHistoryRouteOptions {
  client: AgentClient;
  policy: DecisionPolicy;
  /** The server's bearer-token hook. */
  allow: (...roles: ApiRole[]) => (request: FastifyRequest) => Promise<void>;
  /** The browser sessions of the API's pages (the example chat page reads with its cookie). */
  sessions?: BrowserSessions;
}

const ROLES: ApiRole[] = ['requester', 'approver', 'operator'];

/** Registers `GET /v1/conversations/{id}/ui-messages`. */
export function uiHistoryRoutes(app: FastifyInstance, options: UiHistoryRouteOptions): void {
  const { client, policy, allow, sessions } = options;
  /** A bearer token with one of the roles; or, without one, the page's session cookie with one. */
  const signedIn = async (request: FastifyRequest): Promise<void> => {
    if (request.headers.authorization !== undefined || !sessions?.cookieOf(request)) return allow(...ROLES)(request);
    const session = sessions.of(request);
    if (!session) throw new ApiError('unauthorized', 'Your session has ended: sign in again (reload the chat page).');
    if (!ROLES.some((r) => session.roles.includes(r)))
      throw new ApiError(
        'forbidden',
        `This needs one of the roles ${ROLES.join(', ')}; ${session.subject} has ${session.roles.join(', ')}.`,
      );
    request.principal = sessionPrincipal(session);
  };
  app.withTypeProvider<ZodTypeProvider>().get(
    '/v1/conversations/:id/ui-messages',
    {
      onRequest: signedIn,
      schema: {
        operationId: 'getUiMessages',
        summary:
          "The conversation's whole transcript as the AI SDK's UIMessage[] (ai 7): user messages, answers with their tool calls and approvals, as the chat stream shows them.",
        security: [{ bearer: [] }],
        params: conversationParams,
        response: { 200: uiMessagesReply, ...refusals(400, 401, 403, 500, 503, 414) },
      },
    },
    async (request) => {
      const id = request.params.id;
      let state: ConversationState | undefined;
      try {
        state = await client.state(id);
      } catch (err) {
        // Gone (or never started): its stored transcript, if any, is read without the workflow's records.
        if ((err as { name?: string }).name !== 'WorkflowNotFoundError') throw err;
      }
      return { messages: await uiHistory(client, id, state, viewerOf(request.principal!, policy)) };
    },
  );
  refuseOtherMethods(app, '/v1/conversations/:id/ui-messages', ['GET']);
}
