/**
 * `POST /v1/conversations/{id}/regenerate`: asks the conversation for its
 * last answer again (`AgentClient.regenerate`), answered 202 like a posted
 * message, with the id of the new turn to follow (`followTurn`'s
 * `messageId`). Refused with 409 `regenerate_refused` saying why while a
 * turn runs, with nothing to regenerate, or while the conversation ends.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AgentClient } from '../client/client';
import type { TurnRecord } from '../contract/turn-records';
import type { SupersededMessage } from '../db/transcript-store';
import { ApiError, refuseOtherMethods } from './refusals';
import { refusals } from './replies';
import { conversationParams, idText } from './schemas';
import type { ApiRole } from './tokens';

/** The body: optional, like a cancel's. */
export const regenerateBody = z
  .strictObject({
    requestId: idText(
      'requestId',
      'For deduplication, and the id of the new turn (follow it as followTurn messageId): a request whose id the conversation has seen starts nothing. A random one when absent.',
    ).optional(),
  })
  .optional();

/** `202` of `POST /v1/conversations/{id}/regenerate`. */
export const regenerateAccepted = z
  .strictObject({
    conversationId: z.string(),
    messageId: z
      .string()
      .describe("The new turn's id: its record lists it in messageIds (follow it like a message's)."),
    fromSeq: z
      .number()
      .int()
      .describe('The first seq superseded: the earlier answer from here on is kept as superseded messages.'),
    started: z.boolean().describe('False when a request with this id was taken before: nothing new started.'),
  })
  .describe('Taken: the conversation runs a new turn that answers its last user messages again.');

/** Registers the route; `allow` is the server's bearer-token hook. */
export function regenerateRoutes(
  app: FastifyInstance,
  options: { client: AgentClient; allow: (...roles: ApiRole[]) => (request: FastifyRequest) => Promise<void> },
): void {
  const { client, allow } = options;
  app.withTypeProvider<ZodTypeProvider>().post(
    '/v1/conversations/:id/regenerate',
    {
      onRequest: allow('requester'),
      schema: {
        operationId: 'regenerate',
        summary:
          "Answer the conversation's last user messages again: the earlier answer is superseded (still readable as superseded messages) and a new turn runs.",
        security: [{ bearer: [] }],
        params: conversationParams,
        body: regenerateBody,
        response: { 202: regenerateAccepted, ...refusals(400, 401, 403, 500, 503, 413, 415, 414, 404, 409) },
      },
      links: {
        202: {
          followTurn: {
            operationId: 'followTurn',
            parameters: { id: '$request.path.id', messageId: '$response.body#/messageId' },
            description: 'Follow the new turn.',
          },
          getConversation: {
            operationId: 'getConversation',
            parameters: { id: '$request.path.id' },
            description: "The conversation's state.",
          },
        },
      },
    },
    async (request, reply) => {
      const conversationId = request.params.id;
      // A refusal is a GoingBackRefusedError, answered 409 with its code by refuse() (refusals.ts).
      const result = await client.regenerate(conversationId, {
        ...(request.body?.requestId ? { requestId: request.body.requestId } : {}),
        sentBy: request.principal!.subject,
      });
      reply.status(202);
      return { conversationId, messageId: result.requestId, fromSeq: result.fromSeq, started: result.started };
    },
  );
  refuseOtherMethods(app, '/v1/conversations/:id/regenerate', ['POST']);

  app.withTypeProvider<ZodTypeProvider>().get(
    '/v1/conversations/:id/superseded',
    {
      onRequest: allow('requester', 'approver', 'operator'),
      schema: {
        operationId: 'getSuperseded',
        summary:
          'The messages taken out of the live transcript, oldest first: answers a regeneration replaced (reason regenerate), what a reset run abandoned (reset), a final answer written while its turn stopped (stopped).',
        security: [{ bearer: [] }],
        params: conversationParams,
        response: { 200: supersededReply, ...refusals(400, 401, 403, 414, 500, 503) },
      },
    },
    async (request) => ({ messages: await client.superseded(request.params.id) }),
  );
  refuseOtherMethods(app, '/v1/conversations/:id/superseded', ['GET']);
}

/** `200` of `GET /v1/conversations/{id}/superseded`, typed as the store's rows (its schema checks each answer). */
const supersededReply = z
  .strictObject({
    messages: z.array(
      z.looseObject({
        seq: z.number().int().describe('Where it stood in the transcript.'),
        reason: z.enum(['reset', 'regenerate', 'stopped']),
        message: z.looseObject({ role: z.enum(['system', 'user', 'assistant', 'tool']) }),
        createdAt: z.date(),
        supersededAt: z.date(),
      }),
    ),
  })
  .describe('Superseded messages, oldest first (at most 1,000).') as z.ZodType as z.ZodType<{
  messages: SupersededMessage[];
}>;

/**
 * The chat's `regenerate()` (trigger `regenerate-message`): the conversation's last answer again, by `subject` (who
 * needs the role requester). `messageId`, the message the page regenerates, must not name an earlier turn's answer or
 * user message: only the last answer is produced again (409 saying so). Returns the new turn's id, to stream it.
 */
export async function regenerateForChat(
  client: AgentClient,
  conversationId: string,
  principal: { subject: string; roles: ReadonlySet<string> },
  messageId?: string,
): Promise<string> {
  if (!principal.roles.has('requester'))
    throw new ApiError(
      'forbidden',
      `Regenerating an answer needs the role requester; ${principal.subject} has ${[...principal.roles].join(', ')}.`,
    );
  if (messageId !== undefined) {
    const earlier = earlierTurnNamed((await client.state(conversationId)).recentTurns, messageId);
    if (earlier)
      throw new ApiError(
        'regenerate_refused',
        `Message ${messageId} belongs to an earlier turn (${earlier}); only the last answer can be produced again. ` +
          `To answer from an earlier point, fork the conversation there (POST /v1/conversations/${conversationId}/forks).`,
      );
  }
  // A fresh id each time: the chat names the answer it replaces by the turn's start, the same for every regeneration.
  // A refusal is a GoingBackRefusedError, answered 409 with its code by refuse() (refusals.ts).
  return (await client.regenerate(conversationId, { sentBy: principal.subject })).requestId;
}

/**
 * Which earlier turn (not the last) `messageId` names, if any: its answer as the chat streams it (`turn-<firstSeq>`,
 * the same for every regeneration of that turn) or one of its user messages. Undefined for the last turn and for ids
 * the conversation does not know (the page's own ids), which regenerate the last answer.
 */
function earlierTurnNamed(turns: readonly TurnRecord[], messageId: string): string | undefined {
  const last = turns.at(-1);
  if (!last) return undefined;
  const named = (t: TurnRecord) => `turn-${t.firstSeq}` === messageId || t.messageIds.includes(messageId);
  if (named(last) || last.firstSeq === undefined) return undefined;
  const earlier = turns.slice(0, -1).find((t) => named(t) && t.firstSeq !== last.firstSeq);
  return earlier ? `the turn from seq ${earlier.firstSeq}` : undefined;
}
