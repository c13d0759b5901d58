/**
 * `GET /v1/approvals`: the calls waiting for a decision across conversations, the caller's queue first (those they may
 * decide, `mayDecide`), each part oldest first, from the one list in PostgreSQL.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AgentClient } from '../client/client';
import type { DecisionPolicy } from './decisions';
import { refuseOtherMethods } from './refusals';
import { approvalsReply, refusals } from './replies';
import { approvalsQuery } from './schemas';
import type { ApiRole } from './tokens';
import { yoursFirst } from './who-decides';

/** An OpenAPI link to a decision on one call of a conversation, named by its key. */
export const decideLink = (id: string, callKey: string, decision: 'approve' | 'reject', description: string) => ({
  operationId: 'decide',
  parameters: { id },
  requestBody: { decision, callKeys: [callKey] },
  description,
});

/** Options of {@link approvalListRoute}. */
export interface ApprovalListRouteOptions {
  client: AgentClient;
  /** Four eyes (`allowSelfApproval`): whether a requester may approve their own calls. */
  policy: DecisionPolicy;
  /** The server's onRequest hook for a `/v1` route: a valid bearer token with one of the roles. */
  allow: (...roles: ApiRole[]) => (request: FastifyRequest) => Promise<void>;
}

/** Registers `GET /v1/approvals` on `app`. */
export function approvalListRoute(app: FastifyInstance, { client, policy, allow }: ApprovalListRouteOptions): void {
  app.withTypeProvider<ZodTypeProvider>().get(
    '/v1/approvals',
    {
      onRequest: allow('approver', 'operator'),
      schema: {
        operationId: 'listApprovals',
        summary:
          "Tool calls waiting for a decision across conversations: first those the caller may decide (mayDecide: the approver role, four eyes and each call's approval policy rule allow it), then the others, each part oldest first (from PostgreSQL, one visibility query on system attributes; no query per conversation).",
        security: [{ bearer: [] }],
        querystring: approvalsQuery,
        response: { 200: approvalsReply, ...refusals(400, 401, 403, 500, 503) },
      },
      links: {
        200: {
          decide: decideLink(
            '$response.body#/approvals/0/conversationId',
            '$response.body#/approvals/0/callKey',
            'approve',
            'Approve the first call listed (the oldest the caller may decide), named by its key.',
          ),
          getConversation: {
            operationId: 'getConversation',
            parameters: { id: '$response.body#/approvals/0/conversationId' },
            description: "The call's conversation.",
          },
        },
      },
    },
    async (request) => {
      const { conversationId, tool, requester, minAgeSeconds } = request.query;
      const { calls } = await client.waitingCalls({
        conversationId,
        tool,
        requester,
        minAgeMs: minAgeSeconds === undefined ? undefined : minAgeSeconds * 1000,
      });
      // The caller's queue first: the calls they may decide, then the others, each part in the list's order.
      const queue = yoursFirst(request.principal!, calls, policy).calls;
      return { approvals: queue.map((a) => ({ ...a, requestedAt: a.requestedAt.toISOString() })) };
    },
  );
  refuseOtherMethods(app, '/v1/approvals', ['GET']);
}
