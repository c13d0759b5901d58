/**
 * Sending an event to the calls that wait for it (docs/waiting-for-events.md,
 * "Sending events"): `POST /v1/events`, for tokens of the `events` role (the
 * systems that report what happened). The sender recorded is the token's
 * subject, never a field of the body. The answer is 202 with where the event
 * was routed, or that it is kept for the first wait to come; sending the same
 * `eventId` again is a retry and answers the same, 202 again.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { EventDeliveryError, EventIdConflictError, InvalidEventError, type AgentClient } from '../client/client';
import { EVENT_LIMITS, EVENT_NAME_PATTERN } from '../contract/events';
import { EVENT_ID_MAX_CHARS } from '../db/events';
import { ApiError, refuseOtherMethods } from './refusals';
import { refusals } from './replies';
import { personText } from './schemas';
import type { ApiRole } from './tokens';

/** The roles that may send events: `events` only (see docs/waiting-for-events.md, "Who may send events"). */
export const EVENT_SENDER_ROLES: readonly ApiRole[] = ['events'];

/** The body of `POST /v1/events`. */
export const eventBody = z.strictObject({
  eventId: personText('eventId', {
    minChars: 1,
    maxChars: EVENT_ID_MAX_CHARS,
    description:
      "The event's id: sending it again is a retry (delivered again where it was routed, nothing new recorded; the same answer). A fresh UUID when absent. The same id with another name, key or payload is refused with 409 event_id_conflict.",
  }).optional(),
  name: z
    .string()
    .min(1, 'name must be 1 or more characters')
    .max(EVENT_LIMITS.nameMaxChars, `name must be at most ${EVENT_LIMITS.nameMaxChars} characters`)
    .regex(EVENT_NAME_PATTERN, 'name may hold letters, digits and . _ : - only, starting with a letter or digit')
    .describe(
      `What happened, e.g. payment.settled: 1 to ${EVENT_LIMITS.nameMaxChars} letters, digits and . _ : -, starting with a letter or digit.`,
    ),
  key: personText('key', {
    minChars: 1,
    maxChars: EVENT_LIMITS.keyMaxChars,
    description: "What it is about, e.g. the order's id: a call waits for one name and one key.",
  }),
  payload: z
    .unknown()
    .optional()
    .describe(
      `Any JSON: the waiting call's result. At most ${EVENT_LIMITS.payloadMaxBytes} bytes as JSON (400 invalid_request beyond); characters PostgreSQL cannot store (U+0000, unpaired surrogates) become U+FFFD, as in tool results.`,
    ),
  keepMs: z
    .number()
    .int('keepMs must be a whole number of milliseconds')
    .min(0, `keepMs must be from 0 to ${EVENT_LIMITS.maxKeepMs}`)
    .max(EVENT_LIMITS.maxKeepMs, `keepMs must be from 0 to ${EVENT_LIMITS.maxKeepMs}`)
    .optional()
    .describe(
      `When no call waits for it now: how long it is kept for the first wait that matches, in milliseconds; 0: not kept. Default ${EVENT_LIMITS.defaultKeepMs} (24 hours), at most ${EVENT_LIMITS.maxKeepMs} (30 days).`,
    ),
});

const target = z.strictObject({
  conversationId: z.string(),
  callKey: z.string().describe("The waiting call's key."),
});

/** `202` of `POST /v1/events`. */
export const eventSentReply = z
  .strictObject({
    eventId: z.string(),
    sentAt: z.string().describe('When it was first sent (ISO 8601).'),
    deliveredTo: z
      .array(target)
      .describe('The waiting calls it was routed to, each signalled in its conversation; empty when none waited.'),
    kept: z.boolean().describe('True when no call waited: it is kept for the first wait that matches.'),
    keptUntil: z.string().optional().describe('Until when it is kept (ISO 8601), when kept.'),
    notRunning: z
      .array(target)
      .optional()
      .describe('Calls it was routed to whose conversation no longer runs (ended): they got nothing.'),
  })
  .describe('Recorded: routed to the calls waiting for it, or kept for the first wait to come.');

/** Options of {@link eventRoutes}. */
export interface EventRoutesOptions {
  client: AgentClient;
  /** The server's onRequest hook for a `/v1` route: a valid bearer token with one of the roles. */
  allow: (...roles: ApiRole[]) => (request: FastifyRequest) => Promise<void>;
}

/** Registers `POST /v1/events` on `app`. */
export function eventRoutes(app: FastifyInstance, { client, allow }: EventRoutesOptions): void {
  app.withTypeProvider<ZodTypeProvider>().post(
    '/v1/events',
    {
      onRequest: allow(...EVENT_SENDER_ROLES),
      schema: {
        operationId: 'sendEvent',
        summary:
          'Send an event: every call waiting for its name and key gets its payload as its result; when none waits, it is kept for the first wait that matches (keepMs). ' +
          "Recorded under the token's subject. Answers 202, and the same again to a retry with the same eventId.",
        security: [{ bearer: [] }],
        body: eventBody,
        response: {
          202: eventSentReply,
          ...refusals(400, 401, 403, 409, 413, 415, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const { keepMs, ...event } = request.body;
      try {
        const sent = await client.sendEvent({ ...event, sentBy: request.principal!.subject }, { keepMs });
        reply.status(202);
        return sent;
      } catch (err) {
        throw refusalOf(err);
      }
    },
  );
  refuseOtherMethods(app, '/v1/events', ['POST']);
}

/** The API's refusal for an error of `sendEvent`; other errors as they are. */
function refusalOf(err: unknown): unknown {
  if (err instanceof InvalidEventError) return new ApiError('invalid_request', err.message);
  if (err instanceof EventIdConflictError) return new ApiError('event_id_conflict', err.message);
  if (err instanceof EventDeliveryError) return new ApiError('event_undelivered', err.message);
  return err;
}
