/**
 * Revoking a standing grant (docs/approval-policies.md#standing-grants) on
 * behalf of an authenticated approver: `POST
 * /v1/conversations/{id}/grants/{grantId}/revoke`, and the one path the
 * inbox page shares with it ({@link revokeGrantAs}). The revoker is the
 * token's subject, never a name the caller sends. Grants are given with an
 * approval (`grant` of a decision, `decisions.ts`) and listed in the
 * conversation's state (`grants`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { isWorkerOutage, type AgentClient } from '../client/client';
import type { ConversationState, GrantView } from '../contract';
import { DECISION_WORKER_WAIT_MS, type DecisionPolicy } from './decisions';
import { ApiError, refuseOtherMethods } from './refusals';
import { grantRevokedReply, refusals } from './replies';
import { z } from 'zod';
import { conversationParams, idText, personText, REASON_MAX_CHARS } from './schemas';
import type { ApiPrincipal, ApiRole } from './tokens';

/** The path of `POST /v1/conversations/{id}/grants/{grantId}/revoke`. */
export const grantParams = z.object({
  id: conversationParams.shape.id,
  grantId: idText('grantId', "The grant's id: the id of the decision that gave it (the state's grants list them)."),
});

/** `POST /v1/conversations/{id}/grants/{grantId}/revoke`: optional. */
export const revokeGrantBody = z
  .strictObject({
    reason: personText('reason', { maxChars: REASON_MAX_CHARS, description: 'Why, for the records.' }).optional(),
  })
  .optional();

/** What {@link revokeGrantAs} did. */
export interface GrantRevocationOutcome {
  conversationId: string;
  grantId: string;
  /** The principal's subject, recorded as who revoked it. */
  revokedBy: string;
  /**
   * True when no worker answered in time: the revocation waits in the conversation's history and applies when a worker
   * runs it (a grant unknown then, or revoked already, changes nothing: said in the state's `lastError`).
   */
  queued: boolean;
  /** The grant as the state shows it once revoked (absent when queued). */
  grant?: GrantView;
}

/** How often the state is read again while waiting for a revocation to show. */
const REVOKED_POLL_MS = 100;

/**
 * Revokes grant `grantId` of the conversation as `principal`: reads the conversation's state first and refuses,
 * changing nothing, a grant it does not have (`not_found`) or one revoked already (`decision_refused`); then signals
 * the revocation and waits until the state shows it revoked. When no worker answers within `policy.workerWaitMs`
 * (default {@link DECISION_WORKER_WAIT_MS}), the revocation is sent as a signal that waits for a worker (`queued`).
 */
export async function revokeGrantAs(
  client: AgentClient,
  principal: ApiPrincipal,
  conversationId: string,
  grantId: string,
  reason: string | undefined,
  policy: Pick<DecisionPolicy, 'workerWaitMs'>,
): Promise<GrantRevocationOutcome> {
  const waitMs = policy.workerWaitMs ?? DECISION_WORKER_WAIT_MS;
  const revokedBy = principal.subject;
  const readState = async (timeoutMs: number): Promise<ConversationState | undefined> => {
    try {
      return await client.state(conversationId, { timeoutMs });
    } catch (err) {
      if (isWorkerOutage(err)) return undefined;
      throw err;
    }
  };
  const before = await readState(waitMs);
  if (before) {
    const grant = before.grants?.find((g) => g.id === grantId);
    if (!grant) {
      throw new ApiError(
        'not_found',
        `Conversation ${conversationId} has no grant "${grantId}": a grant is named by the id of the decision that gave it, as the conversation's state lists them (grants). Nothing was revoked.`,
      );
    }
    if (grant.revokedAt !== undefined) {
      throw new ApiError(
        'decision_refused',
        `Grant "${grantId}" was revoked already${grant.revokedBy ? ` by ${grant.revokedBy}` : ''} at ${grant.revokedAt}; nothing changed.`,
      );
    }
  }
  await client.revokeGrant(conversationId, { grantId, revokedBy, ...(reason ? { reason } : {}) });
  const outcome = { conversationId, grantId, revokedBy };
  if (!before) return { ...outcome, queued: true };
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    const state = await readState(Math.max(deadline - Date.now(), 1));
    const grant = state?.grants?.find((g) => g.id === grantId);
    if (grant?.revokedAt !== undefined) return { ...outcome, queued: false, grant };
    await new Promise((resolve) => setTimeout(resolve, REVOKED_POLL_MS));
  }
  return { ...outcome, queued: true };
}

/** Options of {@link grantRoutes}. */
export interface GrantRoutesOptions {
  client: AgentClient;
  /** The API's decision policy: how long to wait for a worker. */
  policy: DecisionPolicy;
  /** The server's onRequest hook for a `/v1` route: a valid bearer token with one of the roles. */
  allow: (...roles: ApiRole[]) => (request: FastifyRequest) => Promise<void>;
}

/** Registers `POST /v1/conversations/{id}/grants/{grantId}/revoke` on `app`. */
export function grantRoutes(app: FastifyInstance, { client, policy, allow }: GrantRoutesOptions): void {
  app.withTypeProvider<ZodTypeProvider>().post(
    '/v1/conversations/:id/grants/:grantId/revoke',
    {
      onRequest: allow('approver'),
      schema: {
        operationId: 'revokeGrant',
        summary:
          "Revoke a standing grant given with an approval in this conversation (the state's grants list them, each named by the id of the decision that gave it): the calls it would have covered wait for a person again. Recorded under the token's subject. " +
          "Answers 200 once the conversation's worker shows it revoked, 202 with queued: true when no worker answered in time (the revocation then waits in the conversation's history).",
        security: [{ bearer: [] }],
        params: grantParams,
        body: revokeGrantBody,
        response: {
          200: grantRevokedReply.describe("Revoked by the conversation's worker."),
          202: grantRevokedReply.describe('Queued: no worker answered in time.'),
          ...refusals(400, 401, 403, 404, 409, 413, 414, 415, 500, 503),
        },
      },
      links: {
        200: {
          getConversation: {
            operationId: 'getConversation',
            parameters: { id: '$request.path.id' },
            description: "The conversation's state, with its grants.",
          },
        },
      },
    },
    async (request, reply) => {
      const { id, grantId } = request.params;
      const outcome = await revokeGrantAs(client, request.principal!, id, grantId, request.body?.reason, policy);
      if (outcome.queued) reply.status(202);
      return outcome;
    },
  );
  refuseOtherMethods(app, '/v1/conversations/:id/grants/:grantId/revoke', ['POST']);
}
