/**
 * Asking a conversation to come back later (docs/coming-back-later.md):
 * `POST /v1/conversations/{id}/come-backs` with a note and a time (`at`, or
 * `inMinutes`), and `POST /v1/conversations/{id}/come-backs/{comeBackId}/cancel`.
 * For requesters and operators; recorded under the token's subject. The
 * conversation's state lists what it holds (`comeBacks`).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AgentClient } from '../client/client';
import { COME_BACK_LIMITS } from '../contract/comebacks';
import { ApiError, refuseOtherMethods } from './refusals';
import { refusals } from './replies';
import { conversationParams, idText, personText } from './schemas';
import type { ApiRole } from './tokens';

const MAX_MINUTES = COME_BACK_LIMITS.maxDelayMs / 60_000;

/** The body of `POST /v1/conversations/{id}/come-backs`. */
export const comeBackBody = z.strictObject({
  note: personText('note', {
    minChars: 1,
    maxChars: COME_BACK_LIMITS.noteMaxChars,
    description: "What the turn is about when it comes back: that turn's message.",
  }),
  at: z.iso
    .datetime({ offset: true })
    .optional()
    .describe('When (ISO 8601), at most a year ahead. Give this or inMinutes.'),
  inMinutes: z
    .number()
    .positive('inMinutes must be more than 0')
    .max(MAX_MINUTES, `inMinutes must be at most ${MAX_MINUTES} (a year)`)
    .optional()
    .describe('How many minutes from now. Give this or at.'),
  comeBackId: idText(
    'comeBackId',
    'Its id (a fresh UUID when absent): asking again with it changes nothing.',
  ).optional(),
});

/** `202` of `POST /v1/conversations/{id}/come-backs`. */
export const comeBackAccepted = z
  .strictObject({
    conversationId: z.string(),
    comeBackId: z.string(),
    at: z.string().describe('When (ISO 8601).'),
    note: z.string(),
    requestedBy: z.string(),
  })
  .describe('Sent to the conversation: its state lists it in comeBacks once its worker has taken it.');

const comeBackParams = conversationParams.extend({
  comeBackId: idText('comeBackId', "The come-back's id, as the state's comeBacks list it."),
});

/** Options of {@link comeBackRoutes}. */
export interface ComeBackRoutesOptions {
  client: AgentClient;
  /** The server's onRequest hook for a `/v1` route: a valid bearer token with one of the roles. */
  allow: (...roles: ApiRole[]) => (request: FastifyRequest) => Promise<void>;
}

/** Registers the come-back routes on `app`. */
export function comeBackRoutes(app: FastifyInstance, { client, allow }: ComeBackRoutesOptions): void {
  const typed = app.withTypeProvider<ZodTypeProvider>();
  typed.post(
    '/v1/conversations/:id/come-backs',
    {
      onRequest: allow('requester', 'operator'),
      schema: {
        operationId: 'comeBackLater',
        summary:
          'Ask the conversation to come back later: at that time (or when the turn running then ends) a turn starts with the note as its message, sent by the conversation itself. Held across continue-as-new; cancellable.',
        security: [{ bearer: [] }],
        params: conversationParams,
        body: comeBackBody,
        response: { 202: comeBackAccepted, ...refusals(400, 401, 403, 404, 413, 415, 500, 503) },
      },
    },
    async (request, reply) => {
      const { note, at, inMinutes, comeBackId } = request.body;
      if ((at === undefined) === (inMinutes === undefined))
        throw new ApiError('invalid_request', 'Give exactly one of at (an ISO 8601 time) and inMinutes.');
      const when = at !== undefined ? new Date(at) : new Date(Date.now() + inMinutes! * 60_000);
      if (when.getTime() <= Date.now())
        throw new ApiError('invalid_request', `That time has passed (${when.toISOString()}); give a time ahead.`);
      if (when.getTime() - Date.now() > COME_BACK_LIMITS.maxDelayMs)
        throw new ApiError('invalid_request', 'A come-back may be at most a year ahead.');
      const requestedBy = request.principal!.subject;
      const sent = await client.comeBackLater(request.params.id, {
        comeBackId: comeBackId ?? randomUUID(),
        at: when.toISOString(),
        note,
        requestedBy,
      });
      reply.status(202);
      return { conversationId: request.params.id, ...sent, requestedBy };
    },
  );
  refuseOtherMethods(app, '/v1/conversations/:id/come-backs', ['POST']);

  typed.post(
    '/v1/conversations/:id/come-backs/:comeBackId/cancel',
    {
      onRequest: allow('requester', 'operator'),
      schema: {
        operationId: 'cancelComeBack',
        summary: 'Cancel a come-back the conversation holds: its turn does not start.',
        security: [{ bearer: [] }],
        params: comeBackParams,
        response: {
          202: z.strictObject({ cancelled: z.literal(true) }).describe('Sent to the conversation.'),
          ...refusals(400, 401, 403, 404, 500, 503),
        },
      },
    },
    async (request, reply) => {
      await client.cancelComeBack(request.params.id, request.params.comeBackId, request.principal!.subject);
      reply.status(202);
      return { cancelled: true as const };
    },
  );
  refuseOtherMethods(app, '/v1/conversations/:id/come-backs/:comeBackId/cancel', ['POST']);
}
