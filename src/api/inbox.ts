/**
 * The approval inbox: an HTML page on the API's Fastify app where approvers
 * sign in with their API token once and decide waiting tool calls.
 *
 * - Sessions live on the server (`sessions.ts`): the cookie holds a random
 *   id, the server its digest, the subject, the roles and a CSRF token. The
 *   API token is checked once and never kept.
 * - Every POST is checked against the Origin header (when the browser sends
 *   one) and, once signed in, a per-session synchronizer token compared in
 *   constant time: a missing or wrong one is refused with 403, deciding nothing.
 * - Decisions go through {@link decideCalls}, as the API's do: four eyes and
 *   approval policy rules, signed, recorded under the session's subject with
 *   its groups; only the approver role decides (operators read). A reason or call key with a character
 *   PostgreSQL cannot store (NUL, an unpaired surrogate) is refused with 400
 *   naming it.
 * - An approval may give a standing grant (later calls of the tool run
 *   without asking, within limits); a conversation's page lists its grants,
 *   and approvers revoke them there (`inbox-grants.ts`, `inbox-grant-route.ts`).
 * - Responses carry a Content-Security-Policy whose nonce admits the page's
 *   one inline style and script; every value from a conversation is escaped
 *   (`inbox-page.ts`).
 *
 * None of its routes is in the OpenAPI document (`hide`): they are not bearer-token routes.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AgentClient } from '../client/client';
import { describeUnstorableText } from '../contract/text';
import { DECISION_FIELD_MAX_CHARS, type DecisionKind } from '../contract';
import { ConversationClosedError, DecisionRefusedError } from '../common/errors';
import { decideCalls, DecisionProblem, type DecisionPolicy } from './decisions';
import {
  conversationMain,
  conversationPath,
  inboxMain,
  page,
  problemMain,
  signInMain,
  turnInProgress,
  type Flash,
  type Html,
  type InboxGroup,
  type ShownCall,
  type Viewer,
} from './inbox-page';
import { inboxForkRoute } from './inbox-fork';
import { grantOfForm, inboxGrantRoute } from './inbox-grant-route';
import { grantRequestWords } from './inbox-grants';
import { field, messagesBefore, PageRefusal, RECENT_MESSAGES, sendHtml } from './inbox-http';
import { BrowserSessions, csrfMatches, foreignOrigin, sessionPrincipal, type BrowserSession } from './sessions';
import { chatPage } from './chat-page';
import { yoursFirst } from './who-decides';
import type { ApiPrincipal, ApiRole } from './tokens';

/** Options of {@link inboxRoutes}. */
export interface InboxOptions {
  client: AgentClient;
  /** The API's authenticator: the principal of a token, or undefined. */
  authenticate: (token: string) => Promise<ApiPrincipal | undefined>;
  /** The API's decision policy (four eyes, signing key). */
  policy: DecisionPolicy;
  /** The API's browser sessions (shared with the codec server and the chat endpoint). */
  sessions: BrowserSessions;
  /**
   * The example chat page's bundled script (`npm run build:chat-page`): served with the page at `/chat`. Unset: no
   * page.
   */
  chatPageBundle?: string;
}

/** The chat page's address, with a conversation id a workflow id may be. */
const CHAT_PAGE_PATH = /^\/chat\?conversation=[A-Za-z0-9._~:-]{1,128}$/;

/** Roles that may sign in: approvers decide, operators read. */
const INBOX_ROLES: readonly ApiRole[] = ['approver', 'operator'];

type Session = BrowserSession;

/** Registers the inbox's routes (`/inbox...`) on the API's app. */
export async function inboxRoutes(app: FastifyInstance, options: InboxOptions): Promise<void> {
  const { client, authenticate, policy, sessions, chatPageBundle } = options;

  // Forms arrive urlencoded (in this plugin only; the /v1 API keeps JSON).
  await app.register(formbody, { bodyLimit: 64 * 1024 });

  const cookieOf = (request: FastifyRequest) => sessions.cookieOf(request);
  const sessionOf = (request: FastifyRequest) => sessions.of(request);
  const viewerOf = (session: Session): Viewer => ({
    subject: session.subject,
    roles: session.roles,
    groups: session.groups,
    csrf: session.csrf,
    canDecide: session.roles.includes('approver'),
  });
  const takeFlash = (session: Session): Flash | undefined => {
    const { flash } = session;
    session.flash = undefined;
    return flash;
  };

  /**
   * Sends a page with its security headers: a CSP whose nonce admits the inline style and script, no caching, no
   * framing.
   */
  const sendPage = (
    reply: FastifyReply,
    status: number,
    frame: { title: string; viewer?: Viewer; live: boolean; main: Html },
  ) => sendHtml(reply, status, (nonce) => page({ ...frame, nonce }));
  const signInPage = (reply: FastifyReply, status: number, problem?: string, next?: string) =>
    sendPage(reply, status, { title: 'Sign in · Approval inbox', live: false, main: signInMain({ problem, next }) });

  /** A POST from another site is refused: when the browser names the page's origin, it must be this host. */
  const checkOrigin = (request: FastifyRequest) => {
    const origin = foreignOrigin(request);
    if (origin !== undefined) {
      throw new PageRefusal(
        403,
        'Refused',
        `This form was sent from another site (${origin}); nothing was done. Use the inbox at ${request.host}.`,
      );
    }
  };
  /** The session's synchronizer token must come back with the form. */
  const checkCsrf = (request: FastifyRequest, session: Session) => {
    const sent = field(request.body, '_csrf');
    if (!sent || !csrfMatches(session, sent)) {
      throw new PageRefusal(
        403,
        'Refused',
        'The form was missing its security token (CSRF) or it did not match your session; nothing was done. Reload the inbox and try again.',
      );
    }
  };

  app.setErrorHandler((err: unknown, request, reply) => {
    const session = sessionOf(request);
    const viewer = session ? viewerOf(session) : undefined;
    if (err instanceof PageRefusal)
      return sendPage(reply, err.status, {
        title: `${err.title} · Approval inbox`,
        viewer,
        live: false,
        main: problemMain(err.title, err.message),
      });
    const status = (err as { statusCode?: number }).statusCode;
    if (status && status >= 400 && status < 500) {
      return sendPage(reply, status, {
        title: 'Bad request · Approval inbox',
        viewer,
        live: false,
        main: problemMain('Bad request', 'The request was not understood; nothing was done.'),
      });
    }
    request.log.error(err);
    return sendPage(reply, 500, {
      title: 'Error · Approval inbox',
      viewer,
      live: false,
      main: problemMain(
        'Something went wrong',
        'The page could not be built just now (the server could not reach Temporal or PostgreSQL?). It is logged; try again shortly.',
      ),
    });
  });

  /** Which page a sign-in may continue to: only the inbox's own and the chat page (no open redirect). */
  const safeNext = (next: string | undefined): string =>
    next && (/^\/inbox(\/conversations\/[^/?#\\]+)?$/.test(next) || CHAT_PAGE_PATH.test(next)) ? next : '/inbox';
  /** The inbox is for approvers and operators; a requester signed in for the chat page is refused it. */
  const inboxSession = (request: FastifyRequest): Session | undefined => {
    const session = sessionOf(request);
    if (session && !session.roles.some((r) => INBOX_ROLES.includes(r))) {
      throw new PageRefusal(
        403,
        'Not for this role',
        `The inbox is for approvers and operators; ${session.subject} has the role ${session.roles.join(', ')}.`,
      );
    }
    return session;
  };
  const hide = { hide: true };

  app.get('/inbox', { schema: hide }, async (request, reply) => {
    const session = inboxSession(request);
    if (!session)
      return signInPage(reply, 200, cookieOf(request) ? 'Your session has ended; sign in again.' : undefined);
    const viewer = viewerOf(session);
    const flash = takeFlash(session);
    const now = Date.now();
    // The viewer's queue first: conversations with a call they may decide, and in each those calls first.
    const principal = { subject: session.subject, roles: new Set(session.roles), groups: new Set(session.groups) };
    const { calls, yours } = yoursFirst(principal, (await client.waitingCalls()).calls, policy);
    const groups = new Map<string, InboxGroup>();
    for (const c of calls) {
      const group = groups.get(c.conversationId) ?? { conversationId: c.conversationId, calls: [] };
      group.calls.push(c);
      groups.set(c.conversationId, group);
    }
    await Promise.all(
      [...groups.values()].map(
        async (g) => (g.messages = await messagesBefore(client, g.conversationId, g.calls).catch(() => undefined)),
      ),
    );
    return sendPage(reply, 200, {
      title: `${calls.length > 0 ? `(${calls.length}) ` : ''}Pending approvals · Approval inbox`,
      viewer,
      live: true,
      main: inboxMain([...groups.values()], { viewer, flash, fourEyes: !policy.allowSelfApproval, now, yours }),
    });
  });

  app.get<{ Params: { id: string } }>('/inbox/conversations/:id', { schema: hide }, async (request, reply) => {
    const id = request.params.id;
    const session = inboxSession(request);
    if (!session)
      return signInPage(
        reply,
        200,
        cookieOf(request) ? 'Your session has ended; sign in again.' : undefined,
        conversationPath(id),
      );
    if (id.length > 200) throw new PageRefusal(404, 'Not found', 'There is no such conversation.');
    const viewer = viewerOf(session);
    const flash = takeFlash(session);
    let state;
    try {
      state = await client.state(id);
    } catch (err) {
      if ((err as { name?: string }).name === 'WorkflowNotFoundError')
        throw new PageRefusal(404, 'Not found', `There is no conversation ${id}.`);
      throw err;
    }
    const lastTurn = state.recentTurns.at(-1);
    // A little more than shown: the bodies of the newest messages may be written a moment after the state counts them.
    const recent = await client
      .transcriptPage(id, Math.max(-1, state.messageCount - RECENT_MESSAGES - 1), RECENT_MESSAGES + 1)
      .catch(() => undefined);
    let answer: string | undefined;
    if (lastTurn?.answerSeq !== undefined) {
      const stored =
        recent?.find((m) => m.seq === lastTurn.answerSeq) ??
        (await client.transcriptPage(id, lastTurn.answerSeq - 1, 1).catch(() => []))[0];
      if (stored?.seq === lastTurn.answerSeq && stored.message.role === 'assistant')
        answer = stored.message.content ?? '';
    }
    const root = state.calledBy?.rootConversationId ?? id;
    const agentPath = state.calledBy
      ? [...state.calledBy.path.slice(0, -1), state.agent ?? '']
      : state.agent
        ? [state.agent]
        : [];
    // Its own waiting calls, then those inside agents it called as tools (each decided in its own conversation).
    const calls: ShownCall[] = [
      ...state.pendingApprovals.map((p) => ({
        ...p,
        conversationId: id,
        rootConversationId: root,
        agentPath,
        requestedAt: new Date(p.requestedAt),
      })),
      ...(state.waitingBelow ?? []).map((b) => ({
        ...b,
        rootConversationId: root,
        requestedAt: new Date(b.requestedAt),
      })),
    ];
    // Live while a turn runs, and until the last turn's answer is readable.
    const live = turnInProgress(state) || (lastTurn?.answerSeq !== undefined && answer === undefined);
    return sendPage(reply, 200, {
      title: `${state.status.replace('_', ' ')} · ${id} · Approval inbox`,
      viewer,
      live,
      main: conversationMain(
        { state, lastTurn, answer, calls, messages: recent?.slice(-RECENT_MESSAGES) },
        { viewer, flash, fourEyes: !policy.allowSelfApproval, now: Date.now() },
      ),
    });
  });

  app.post('/inbox/sign-in', { schema: hide }, async (request, reply) => {
    checkOrigin(request);
    const token = field(request.body, 'token')?.trim() ?? '';
    const next = safeNext(field(request.body, 'next'));
    if (token === '') return signInPage(reply, 401, 'Paste your API token to sign in.', next);
    let principal: ApiPrincipal | undefined;
    try {
      principal = await authenticate(token);
    } catch (err) {
      if ((err as { code?: string }).code === 'identity_provider_unavailable')
        return signInPage(reply, 503, 'The identity provider cannot be reached just now; try again shortly.', next);
      throw err;
    }
    if (!principal)
      return signInPage(
        reply,
        401,
        'That token is not valid (unknown, expired, or not for this API). Nothing was kept; paste it again.',
        next,
      );
    const roles = [...principal.roles];
    const allowed: readonly ApiRole[] = next.startsWith('/chat') ? [...INBOX_ROLES, 'requester'] : INBOX_ROLES;
    if (!roles.some((r) => allowed.includes(r))) {
      return signInPage(
        reply,
        403,
        `The inbox is for approvers and operators; the token of ${principal.subject} has the role${roles.length === 1 ? '' : 's'} ${roles.join(', ')}.`,
        next,
      );
    }
    sessions.start(request, reply, principal);
    return reply.redirect(next, 303);
  });

  // The example chat page (examples/chat-page): useChat against /v1/chat with this session.
  app.get('/chat', { schema: hide }, async (request, reply) => {
    if (!chatPageBundle) {
      throw new PageRefusal(
        404,
        'No chat page',
        'The example chat page is not built here: run "npm run build:chat-page", then restart.',
      );
    }
    const conversation = (request.query as { conversation?: unknown }).conversation;
    if (typeof conversation !== 'string' || !CHAT_PAGE_PATH.test(`/chat?conversation=${conversation}`)) {
      return reply.redirect(`/chat?conversation=chat-${randomBytes(6).toString('hex')}`, 303);
    }
    const session = sessionOf(request);
    if (!session) return signInPage(reply, 200, undefined, `/chat?conversation=${conversation}`);
    return sendHtml(reply, 200, (nonce) =>
      chatPage({ nonce, conversationId: conversation, csrf: session.csrf, subject: session.subject }),
    );
  });
  app.get('/chat/app.js', { schema: hide }, async (_request, reply) => {
    if (!chatPageBundle)
      throw new PageRefusal(
        404,
        'No chat page',
        'The example chat page is not built here: run "npm run build:chat-page".',
      );
    return reply
      .header('content-type', 'text/javascript; charset=utf-8')
      .header('cache-control', 'no-cache')
      .send(await readFile(chatPageBundle));
  });

  app.post('/inbox/sign-out', { schema: hide }, async (request, reply) => {
    checkOrigin(request);
    const session = sessionOf(request);
    if (session) checkCsrf(request, session);
    sessions.end(request, reply);
    return reply.redirect('/inbox', 303);
  });

  inboxForkRoute(app, { client, inboxSession, checkOrigin, checkCsrf });
  inboxGrantRoute(app, { client, policy, inboxSession, checkOrigin, checkCsrf });

  app.post<{ Params: { id: string } }>(
    '/inbox/conversations/:id/decisions',
    { schema: hide },
    async (request, reply) => {
      checkOrigin(request);
      const id = request.params.id;
      const session = inboxSession(request);
      if (!session)
        throw new PageRefusal(401, 'Signed out', 'Your session has ended, so nothing was decided. Sign in again.');
      checkCsrf(request, session);
      if (!session.roles.includes('approver'))
        throw new PageRefusal(
          403,
          'Refused',
          `Deciding needs the approver role; ${session.subject} has ${session.roles.join(', ')}. Nothing was decided.`,
        );
      const callKey = field(request.body, 'callKey');
      // "Run it and grant": an approval with a standing grant, whose limits are the form's grant fields.
      const granting = field(request.body, 'decision') === 'grant';
      const decision = granting ? 'approve' : field(request.body, 'decision');
      const reason = field(request.body, 'reason')?.trim() ?? '';
      const back = field(request.body, 'back') === 'inbox' ? '/inbox' : conversationPath(id);
      const kinds = ['approve', 'reject', 'edit', 'respond'] as const;
      if (
        !callKey ||
        callKey.length > 1000 ||
        !kinds.includes(decision as DecisionKind) ||
        reason.length > 2000 ||
        id.length > 200
      ) {
        throw new PageRefusal(
          400,
          'Bad request',
          'The form needs a call, a decision (approve, reject, edit or respond) and a reason of at most 2000 characters. Nothing was decided.',
        );
      }
      const kind = decision as DecisionKind;
      const response = kind === 'respond' ? (field(request.body, 'response')?.trim() ?? '') : undefined;
      const editedText = kind === 'edit' ? (field(request.body, 'arguments') ?? '') : undefined;
      const unstorable =
        describeUnstorableText('The reason', reason) ??
        describeUnstorableText('The call key', callKey) ??
        (response === undefined ? undefined : describeUnstorableText('The response', response)) ??
        (editedText === undefined ? undefined : describeUnstorableText('The arguments', editedText));
      if (unstorable) throw new PageRefusal(400, 'Bad request', `${unstorable}. Nothing was decided.`);
      // What the person typed goes back to the form with the refusal, so nothing they wrote is lost.
      const refuse = (message: string) => {
        session.flash = { kind: 'error', message, callKey, reason };
        return reply.redirect(back, 303);
      };
      let edited: Record<string, unknown> | undefined;
      if (editedText !== undefined) {
        try {
          edited = JSON.parse(editedText) as Record<string, unknown>;
        } catch (err) {
          return refuse(
            `The edited arguments are not JSON (${(err as Error).message}). Nothing was decided; the call still waits.`,
          );
        }
        if (typeof edited !== 'object' || edited === null || Array.isArray(edited))
          return refuse('The edited arguments must be a JSON object. Nothing was decided.');
      }
      if (response !== undefined && (response === '' || response.length > DECISION_FIELD_MAX_CHARS.response)) {
        return refuse(
          `A response needs 1 to ${DECISION_FIELD_MAX_CHARS.response} characters. Nothing was decided; the call still waits.`,
        );
      }
      const asked = granting ? grantOfForm(request.body) : undefined;
      if (asked && 'problem' in asked) return refuse(`${asked.problem} Nothing was decided; the call still waits.`);
      const grant = asked?.grant;
      const principal = sessionPrincipal(session);
      try {
        const { results, queued } = await decideCalls(
          client,
          principal,
          id,
          {
            decision: kind,
            callKeys: [callKey],
            ...(reason ? { reason } : {}),
            ...(edited ? { arguments: edited } : {}),
            ...(response ? { response } : {}),
            ...(grant ? { grant } : {}),
          },
          policy,
        );
        const verb = {
          approve: 'approved',
          reject: 'rejected',
          edit: 'approved with your arguments',
          respond: 'answered',
        }[kind];
        const calls = results.map((r) => `call ${r.toolCallId}`).join(', ');
        const granted = results[0]?.grant
          ? ` With it you granted later calls of ${results[0].toolName} in this conversation to run without asking, ${grantRequestWords(results[0].grant)} (grant ${results[0].grant.id}).`
          : '';
        session.flash = {
          kind: 'ok',
          message: queued
            ? `You ${verb} ${calls}.${granted} No worker answers for this conversation right now: your decision is queued and applies when a worker runs, if the call still waits then.`
            : `You ${verb} ${calls}.${granted} The turn goes on below.`,
        };
        return reply.redirect(conversationPath(id), 303);
      } catch (err) {
        const refused =
          err instanceof DecisionProblem ||
          err instanceof DecisionRefusedError ||
          err instanceof ConversationClosedError ||
          (err as { name?: string }).name === 'WorkflowNotFoundError';
        if (!refused) throw err;
        const why =
          (err as { name?: string }).name === 'WorkflowNotFoundError'
            ? `There is no conversation ${id}.`
            : (err as Error).message;
        session.flash = {
          kind: 'error',
          message: `${why}${reason ? ` Your reason was: “${reason}”.` : ''}`,
          callKey,
          reason,
        };
        return reply.redirect(back, 303);
      }
    },
  );
}
