/**
 * The webhook notifications' deliveries, for operators (docs/notifications.md):
 * `GET /v1/notifications` lists them by status (pending, failing, delivered),
 * `POST /v1/notifications/{eventId}/resend` sends an event again with its id.
 * Both read and write PostgreSQL only: no worker needs to answer (a running
 * one delivers what is resent).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AgentClient } from '../client/client';
import { NOTIFICATION_TYPES, type NotificationDelivery } from '../contract/notifications';
import { ENDPOINT_NAME_PATTERN } from '../notifications/options';
import { ApiError, refuseOtherMethods } from './refusals';
import { refusals } from './replies';
import { idText, queryInteger } from './schemas';
import type { ApiRole } from './tokens';

/** The most deliveries one list answers. */
export const NOTIFICATIONS_MAX_LIMIT = 500;

/** `GET /v1/notifications`. */
export const notificationsQuery = z.object({
  status: z
    .enum(['pending', 'failing', 'delivered'])
    .optional()
    .describe(
      "pending (the default): not delivered yet, failing or not, oldest first; failing: undelivered after the workers' number of attempts (still retried); delivered: most recent first.",
    ),
  limit: queryInteger(1, NOTIFICATIONS_MAX_LIMIT)
    .optional()
    .meta({ description: `Deliveries in the answer: 1 to ${NOTIFICATIONS_MAX_LIMIT}, default 100.` }),
});

/** The path of `POST /v1/notifications/{eventId}/resend`. */
export const notificationParams = z.object({
  eventId: idText('eventId', "The event's id (the Agent-Webhook-Id header, the body's id)."),
});

/** The body of a resend: optional. */
export const resendBody = z
  .strictObject({
    endpoint: z
      .string()
      .regex(ENDPOINT_NAME_PATTERN, 'must be an endpoint name: 1 to 64 letters, digits, "_", "." or "-"')
      .describe('Only to this endpoint (its configured name); absent: to every endpoint the event was for.')
      .optional(),
  })
  .optional();

const time = z.string().describe('ISO 8601.');

/** One delivery, as listed. */
const delivery = z.strictObject({
  eventId: z.string(),
  type: z.enum(NOTIFICATION_TYPES),
  conversationId: z.string(),
  callKey: z.string().nullable().describe('The call it is about.'),
  createdAt: time.describe('When the change it announces was recorded (ISO 8601).'),
  endpoint: z.string().describe("The endpoint's configured name."),
  status: z.enum(['pending', 'failing', 'delivered']),
  attempts: z.number().int().describe('Attempts made so far (counted from 0 again by a resend).'),
  nextAttemptAt: time.nullable().describe('When the next attempt is due; null once delivered.'),
  lastAttemptAt: time.nullable(),
  deliveredAt: time.nullable(),
  lastStatus: z.number().int().nullable().describe('The HTTP status of the last attempt, when one answered.'),
  lastError: z.string().nullable().describe('Why the last attempt failed.'),
  failingSince: time.nullable(),
  endpointLastSeenAt: time
    .nullable()
    .describe('When a running worker last served the endpoint: one no worker serves gets no new events after 7 days.'),
});

/** `200` of `GET /v1/notifications`. */
export const notificationsReply = z
  .strictObject({ notifications: z.array(delivery) })
  .describe("Each event's delivery to each endpoint that wants it.");

/** `200` of `POST /v1/notifications/{eventId}/resend`. */
export const resendReply = z
  .strictObject({
    eventId: z.string(),
    endpoints: z.array(z.string()).describe('The endpoints it is due for again, at once.'),
  })
  .describe('Resent: running workers post the event again, with the same id.');

/** Registers the routes; `allow` is the server's bearer-token hook. */
export function notificationRoutes(
  app: FastifyInstance,
  options: { client: AgentClient; allow: (...roles: ApiRole[]) => (request: FastifyRequest) => Promise<void> },
): void {
  const { client, allow } = options;
  const security = [{ bearer: [] }];
  app.withTypeProvider<ZodTypeProvider>().get(
    '/v1/notifications',
    {
      onRequest: allow('operator'),
      schema: {
        operationId: 'listNotifications',
        summary:
          "Webhook notifications' deliveries, one per event and endpoint, by status (from PostgreSQL; no worker needed).",
        security,
        querystring: notificationsQuery,
        response: { 200: notificationsReply, ...refusals(400, 401, 403, 500, 503) },
      },
      links: {
        200: {
          resendNotification: {
            operationId: 'resendNotification',
            parameters: { eventId: '$response.body#/notifications/0/eventId' },
            description: 'Send the first event listed again.',
          },
        },
      },
    },
    async (request) => {
      const listed = await client.notifications({
        status: request.query.status ?? 'pending',
        limit: request.query.limit ?? 100,
      });
      return { notifications: listed.map(asJson) };
    },
  );
  refuseOtherMethods(app, '/v1/notifications', ['GET']);

  app.withTypeProvider<ZodTypeProvider>().post(
    '/v1/notifications/:eventId/resend',
    {
      onRequest: allow('operator'),
      schema: {
        operationId: 'resendNotification',
        summary:
          'Send a webhook notification again, with the same event id, to every endpoint it was for (or one): delivered before or not, it is due at once.',
        security,
        params: notificationParams,
        body: resendBody,
        response: { 200: resendReply, ...refusals(400, 401, 403, 404, 413, 414, 415, 500, 503) },
      },
    },
    async (request) => {
      const { eventId } = request.params;
      const endpoint = request.body?.endpoint;
      const endpoints = await client.resendNotification(eventId, endpoint);
      if (endpoints.length === 0)
        throw new ApiError(
          'not_found',
          `No notification ${eventId}${endpoint ? ` for endpoint ${endpoint}` : ''} is kept (unknown, or deleted once delivered and past its keep). List them with GET /v1/notifications.`,
        );
      return { eventId, endpoints };
    },
  );
  refuseOtherMethods(app, '/v1/notifications/:eventId/resend', ['POST']);
}

/** A delivery with its times as ISO text. */
function asJson(d: NotificationDelivery): NotificationDelivery<string> {
  const iso = (at: Date | null): string | null => (at ? at.toISOString() : null);
  return {
    ...d,
    createdAt: d.createdAt.toISOString(),
    nextAttemptAt: iso(d.nextAttemptAt),
    lastAttemptAt: iso(d.lastAttemptAt),
    deliveredAt: iso(d.deliveredAt),
    failingSince: iso(d.failingSince),
    endpointLastSeenAt: iso(d.endpointLastSeenAt),
  };
}
