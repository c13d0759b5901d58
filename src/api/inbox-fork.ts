/**
 * The inbox's "Fork here" on a waiting call: a new conversation forked at the
 * assistant message that asks for the call (`AgentClient.fork`), in which the
 * call is answered as not run (docs/operating.md, "Fork"); the call still
 * waits in its own conversation. Any inbox session (approvers, operators) may
 * fork: whoever may read a conversation may fork it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ForkPointError, ForkTargetExistsError, type AgentClient } from '../client/client';
import { describeUnstorableText } from '../contract/text';
import { conversationPath } from './inbox-call';
import { field, PageRefusal } from './inbox-http';
import type { BrowserSession } from './sessions';

/** What the fork route needs of the inbox: its client and its checks of a form's session, origin and CSRF token. */
export interface InboxForkOptions {
  client: AgentClient;
  /** The inbox session of the request (an approver's or an operator's), if any. */
  inboxSession: (request: FastifyRequest) => BrowserSession | undefined;
  checkOrigin: (request: FastifyRequest) => void;
  checkCsrf: (request: FastifyRequest, session: BrowserSession) => void;
}

/** Registers `POST /inbox/conversations/:id/forks` (form fields `_csrf`, `toolCallId`). */
export function inboxForkRoute(app: FastifyInstance, options: InboxForkOptions): void {
  const { client, inboxSession, checkOrigin, checkCsrf } = options;
  app.post<{ Params: { id: string } }>(
    '/inbox/conversations/:id/forks',
    { schema: { hide: true } },
    async (request, reply) => {
      checkOrigin(request);
      const id = request.params.id;
      const session = inboxSession(request);
      if (!session)
        throw new PageRefusal(401, 'Signed out', 'Your session has ended, so nothing was forked. Sign in again.');
      checkCsrf(request, session);
      const toolCallId = field(request.body, 'toolCallId');
      if (!toolCallId || toolCallId.length > 1000 || id.length > 200 || describeUnstorableText('', toolCallId))
        throw new PageRefusal(400, 'Bad request', 'The form needs the waiting call to fork at. Nothing was forked.');
      const back = (kind: 'ok' | 'error', message: string, to = conversationPath(id)): FastifyReply => {
        session.flash = { kind, message };
        return reply.redirect(to, 303);
      };
      const asking = await askingMessage(client, id, toolCallId);
      if (asking === undefined)
        return back(
          'error',
          `No stored message of conversation ${id} asks for call ${toolCallId}. Nothing was forked.`,
        );
      try {
        const fork = await client.fork(id, { seq: asking });
        return back(
          'ok',
          `Forked ${id} at seq ${asking} into the new conversation ${fork.conversationId}: there, call ${toolCallId} is answered as not run, and the conversation takes new messages. In ${id} the call still waits.`,
          conversationPath(fork.conversationId),
        );
      } catch (err) {
        if (err instanceof ForkPointError || err instanceof ForkTargetExistsError)
          return back('error', `${err.message} Nothing was forked.`);
        throw err;
      }
    },
  );
}

/** The seq of the last assistant message of the conversation that asks for the call, if one is stored. */
async function askingMessage(client: AgentClient, id: string, toolCallId: string): Promise<number | undefined> {
  const messages = await client.transcript(id);
  for (let i = messages.length - 1; i >= 0; i--) {
    const { message, seq } = messages[i];
    if (message.role === 'assistant' && (message.tool_calls ?? []).some((c) => c.id === toolCallId)) return seq;
  }
  return undefined;
}
