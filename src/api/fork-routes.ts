/**
 * `POST /v1/conversations/{id}/forks`: a new conversation whose transcript
 * is a copy of this one's up to a seq or the start of a turn
 * (`AgentClient.fork`). Whoever may read the conversation may fork it: the
 * fork shows nothing its transcript did not.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AgentClient } from '../client/client';
import { refuseOtherMethods } from './refusals';
import { refusals } from './replies';
import { conversationParams, idText, SEQ_MAX } from './schemas';
import type { ApiRole } from './tokens';

/** Options of {@link forkRoutes}. */
export interface ForkRoutesOptions {
  client: AgentClient;
  /** The server's onRequest hook for a `/v1` route: a valid bearer token with one of the roles. */
  allow: (...roles: ApiRole[]) => (request: FastifyRequest) => Promise<void>;
}

const newId = idText('conversationId', "The fork's conversation id; a new one (fork-<uuid>) when absent.").optional();

/** The body: where to fork, and the fork's id. */
export const forkBody = z
  .union([
    z.strictObject({
      seq: z
        .number()
        .int()
        .min(0)
        .max(SEQ_MAX)
        .describe(
          'Keep the messages through this seq: 0 to the last seq (past it: 409 fork_point_outside, naming it).',
        ),
      conversationId: newId,
    }),
    z.strictObject({
      turn: z
        .number()
        .int()
        .min(1)
        .max(SEQ_MAX)
        .describe(
          "Keep what comes before this turn's first user message; turns are numbered from 1 (past the last: 409 fork_point_outside, naming how many there are).",
        ),
      conversationId: newId,
    }),
  ])
  .describe('Where to fork: {"seq": n} or {"turn": n}, and optionally the new conversation id.');

/** `201`: the fork. */
export const forkCreated = z
  .strictObject({
    conversationId: z.string().describe('The new conversation: send it messages as to any other.'),
    forkedFrom: z.strictObject({ conversationId: z.string(), seq: z.number().int() }),
    messageCount: z.number().int().describe('Messages the fork starts with.'),
    answeredCalls: z
      .array(z.strictObject({ toolCallId: z.string(), how: z.enum(['ran', 'not_run']) }))
      .describe(
        'Calls open at the fork point that the copy answered: ran (the source ran it; its result was copied) or not_run (answered {"kind": "cancelled", "reason": "forked"}; the source goes on as before).',
      ),
  })
  .describe('Forked: the new conversation is idle and takes messages.');

/** Registers the fork route on `app`. */
export function forkRoutes(app: FastifyInstance, { client, allow }: ForkRoutesOptions): void {
  app.withTypeProvider<ZodTypeProvider>().post(
    '/v1/conversations/:id/forks',
    {
      onRequest: allow('requester', 'approver', 'operator'),
      schema: {
        operationId: 'forkConversation',
        summary:
          "Fork the conversation: a new conversation with this one's transcript up to a seq or the start of a turn. Effects before the fork point stay done; a call open at it is answered in the fork. This conversation is unchanged.",
        security: [{ bearer: [] }],
        params: conversationParams,
        body: forkBody,
        response: { 201: forkCreated, ...refusals(400, 401, 403, 404, 409, 413, 414, 415, 500, 503) },
      },
      links: {
        201: {
          getConversation: {
            operationId: 'getConversation',
            parameters: { id: '$response.body#/conversationId' },
            description: "The fork's state.",
          },
          getTranscript: {
            operationId: 'getTranscript',
            parameters: { id: '$response.body#/conversationId' },
            description: "The fork's messages.",
          },
        },
      },
    },
    async (request, reply) => {
      const { conversationId, ...at } = request.body;
      // A refused fork is a GoingBackRefusedError, answered 409 with its code by refuse() (refusals.ts).
      const fork = await client.fork(request.params.id, at, conversationId === undefined ? {} : { conversationId });
      reply.status(201);
      return fork;
    },
  );
  refuseOtherMethods(app, '/v1/conversations/:id/forks', ['POST']);
}
