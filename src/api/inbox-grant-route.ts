/**
 * The inbox's routes for standing grants (docs/approval-policies.md#standing-grants):
 * reading the "approve and grant" fields of a decision form ({@link grantOfForm}),
 * and the Revoke button's `POST /inbox/conversations/:id/grants/:grantId/revoke`
 * (approvers only, with the session's CSRF token), through {@link revokeGrantAs}
 * as the API's route.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AgentClient } from '../client/client';
import { describeBadGrant, GRANT_MAX_CALLS, GRANT_MAX_MS, type GrantRequest } from '../contract';
import { describeUnstorableText } from '../contract/text';
import type { DecisionPolicy } from './decisions';
import { revokeGrantAs } from './grant-routes';
import { conversationPath } from './inbox-call';
import { GRANT_UNIT_MS } from './inbox-grants';
import { field, PageRefusal } from './inbox-http';
import { ApiError } from './refusals';
import { GRANT_ARGUMENT_MAX_CHARS, REASON_MAX_CHARS } from './schemas';
import { sessionPrincipal, type BrowserSession } from './sessions';

/**
 * The grant the form's fields ask for, or what is wrong with them (for the person, saying the limit). Blank fields are
 * left out; at least one limit is needed.
 */
export function grantOfForm(body: unknown): { grant: GrantRequest } | { problem: string } {
  const text = (name: string) => field(body, name)?.trim() ?? '';
  const grant: GrantRequest = {};
  const calls = text('grantCalls');
  if (calls !== '') {
    const n = Number(calls);
    if (!/^[0-9]+$/.test(calls) || n < 1 || n > GRANT_MAX_CALLS)
      return {
        problem: `The number of later calls must be a whole number from 1 to ${GRANT_MAX_CALLS}, not "${calls}".`,
      };
    grant.maxCalls = n;
  }
  const argument = text('grantArgument');
  const total = text('grantTotal');
  if (argument !== '' || total !== '') {
    if (argument === '' || total === '')
      return {
        problem: 'An amount limit needs both the argument to sum (e.g. amount_cents) and the most it may add up to.',
      };
    if ([...argument].length > GRANT_ARGUMENT_MAX_CHARS)
      return { problem: `The argument's name may have at most ${GRANT_ARGUMENT_MAX_CHARS} characters.` };
    const unstorable = describeUnstorableText("The argument's name", argument);
    if (unstorable) return { problem: `${unstorable}.` };
    const most = Number(total);
    if (!Number.isFinite(most) || most <= 0 || most > Number.MAX_SAFE_INTEGER)
      return { problem: `The most the calls may add up to must be a number above 0, not "${total}".` };
    grant.maxAmount = { argument, total: most };
  }
  const duration = text('grantFor');
  if (duration !== '') {
    const unit = text('grantUnit') || 'm';
    if (!/^[0-9]+$/.test(duration) || !(unit in GRANT_UNIT_MS))
      return { problem: `How long must be a whole number of minutes, hours or days, not "${duration}".` };
    const ms = Number(duration) * GRANT_UNIT_MS[unit as keyof typeof GRANT_UNIT_MS];
    if (ms < 1 || ms > GRANT_MAX_MS)
      return {
        problem: `A grant lasts at most 30 days; "${duration} ${unitName(unit)}" is ${ms < 1 ? 'too short' : 'longer'}.`,
      };
    grant.expiresInMs = ms;
  }
  if (grant.maxCalls === undefined && grant.maxAmount === undefined && grant.expiresInMs === undefined)
    return {
      problem:
        'Give the grant a limit: a number of later calls, an amount, or how long it lasts (at most 30 days). Or approve without a grant.',
    };
  const bad = describeBadGrant(grant);
  return bad ? { problem: `${bad}.` } : { grant };
}

function unitName(unit: string): string {
  return unit === 'h' ? 'hours' : unit === 'd' ? 'days' : 'minutes';
}

/** What the revoke route needs of the inbox: its client, policy and its checks of a form's session, origin and CSRF token. */
export interface InboxGrantOptions {
  client: AgentClient;
  policy: DecisionPolicy;
  /** The inbox session of the request (an approver's or an operator's), if any. */
  inboxSession: (request: FastifyRequest) => BrowserSession | undefined;
  checkOrigin: (request: FastifyRequest) => void;
  checkCsrf: (request: FastifyRequest, session: BrowserSession) => void;
}

/** Registers `POST /inbox/conversations/:id/grants/:grantId/revoke` (form fields `_csrf`, `reason`). */
export function inboxGrantRoute(app: FastifyInstance, options: InboxGrantOptions): void {
  const { client, policy, inboxSession, checkOrigin, checkCsrf } = options;
  app.post<{ Params: { id: string; grantId: string } }>(
    '/inbox/conversations/:id/grants/:grantId/revoke',
    { schema: { hide: true } },
    async (request, reply) => {
      checkOrigin(request);
      const { id, grantId } = request.params;
      const session = inboxSession(request);
      if (!session)
        throw new PageRefusal(401, 'Signed out', 'Your session has ended, so nothing was revoked. Sign in again.');
      checkCsrf(request, session);
      if (!session.roles.includes('approver'))
        throw new PageRefusal(
          403,
          'Refused',
          `Revoking a grant needs the approver role; ${session.subject} has ${session.roles.join(', ')}. Nothing was revoked.`,
        );
      const reason = field(request.body, 'reason')?.trim() ?? '';
      const unstorable =
        describeUnstorableText('The reason', reason) ?? describeUnstorableText("The grant's id", grantId);
      if (id.length > 200 || grantId.length > 200 || [...reason].length > REASON_MAX_CHARS || unstorable)
        throw new PageRefusal(
          400,
          'Bad request',
          `${unstorable ? `${unstorable}. ` : ''}The form needs a grant and a reason of at most ${REASON_MAX_CHARS} characters. Nothing was revoked.`,
        );
      const back = (kind: 'ok' | 'error', message: string): FastifyReply => {
        session.flash = { kind, message };
        return reply.redirect(conversationPath(id), 303);
      };
      try {
        const done = await revokeGrantAs(client, sessionPrincipal(session), id, grantId, reason || undefined, policy);
        return back(
          'ok',
          done.queued
            ? `You revoked grant ${grantId}. No worker answers for this conversation right now: the revocation is queued and applies when a worker runs.`
            : `You revoked grant ${grantId}: later calls of ${done.grant?.toolName ?? 'its tool'} wait for a person again.`,
        );
      } catch (err) {
        if (err instanceof ApiError) return back('error', err.message);
        if ((err as { name?: string }).name === 'WorkflowNotFoundError')
          return back('error', `There is no conversation ${id}, or it has ended. Nothing was revoked.`);
        throw err;
      }
    },
  );
}
