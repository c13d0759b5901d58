/**
 * `/v1/schedules`: conversations on a schedule (docs/schedules.md), for operators only. A schedule sends its message
 * as itself (`schedule:<id>`), not as the person who made it, and its runs' calls may then be approved by anyone with
 * the approver role, that person included: creating one is an operator's act, like a standing instruction, and so
 * are reading, pausing, triggering and deleting them. Each run is a conversation of its own.
 */
import { ScheduleAlreadyRunning, ScheduleNotFoundError } from '@temporalio/client';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AgentClient } from '../client/client';
import { USER_MESSAGE_MAX_BYTES, utf8Bytes } from '../contract';
import { OVERLAP_POLICIES, SCHEDULE_ID_PATTERN, SCHEDULE_LIMITS, ScheduleOptionsError } from '../schedules/options';
import type { ScheduleDetails, ScheduleListing, ScheduleRun } from '../schedules/schedules';
import { ApiError, refuseOtherMethods } from './refusals';
import { refusals } from './replies';
import { conversationInputSchema, personText } from './schemas';
import type { ApiRole } from './tokens';

/** Options of {@link scheduleRoutes}. */
export interface ScheduleRoutesOptions {
  client: AgentClient;
  /** The server's onRequest hook for a `/v1` route: a valid bearer token with one of the roles. */
  allow: (...roles: ApiRole[]) => (request: FastifyRequest) => Promise<void>;
}

const overlapNames = Object.keys(OVERLAP_POLICIES) as [
  keyof typeof OVERLAP_POLICIES,
  ...(keyof typeof OVERLAP_POLICIES)[],
];
const overlap = z
  .enum(overlapNames)
  .describe(
    "What a run that is due does while the schedule's previous conversation still runs: skip (default: it does not start), buffer_one, buffer_all (start after it ends), cancel_other (cancel its turn, then start), terminate_other, allow_all (start beside it).",
  );
const scheduleId = z
  .string()
  .min(1)
  .max(SCHEDULE_LIMITS.idChars)
  .regex(SCHEDULE_ID_PATTERN)
  .describe(
    `The schedule id: 1 to ${SCHEDULE_LIMITS.idChars} characters, a letter or digit, then letters, digits, ".", "_", ":" or "-". Each run's conversation id is this id and the run's time.`,
  );
const duration = (description: string, minMs: number) =>
  z
    .union([
      z.number().int().min(minMs).max(Number.MAX_SAFE_INTEGER).multipleOf(1000),
      personText('a duration', { minChars: 1, maxChars: 32, description: 'A duration as text.' }),
    ])
    .describe(
      `${description} Milliseconds (whole seconds) or text such as "5s", "15 minutes", "1d" (text that is not a duration: 400).`,
    );
const time = (field: string, description: string) =>
  z.iso
    .datetime({ offset: true, error: () => `${field} must be an ISO 8601 date-time with Z or an offset` })
    .meta({ description: `${description} ISO 8601 with Z or an offset, e.g. 2030-01-01T09:00:00Z; 1970 to 9999.` });
const note = personText('note', {
  maxChars: SCHEDULE_LIMITS.noteChars,
  description: 'A note shown with the schedule.',
});

/** The path of one schedule. */
export const scheduleParams = z.object({ id: scheduleId });

/** `POST /v1/schedules`. */
export const createScheduleBody = z.strictObject({
  scheduleId,
  text: personText('text', {
    minChars: 1,
    maxChars: USER_MESSAGE_MAX_BYTES,
    maxBytes: true,
    nonBlank: true,
    description: `The message each run's conversation takes, sent by schedule:<scheduleId>: at most ${USER_MESSAGE_MAX_BYTES} bytes in UTF-8 (413 message_too_large above).`,
  }),
  input: conversationInputSchema.optional(),
  cron: z
    .array(
      personText('cron[]', { minChars: 1, maxChars: SCHEDULE_LIMITS.cronChars, description: 'A cron expression.' }),
    )
    .max(SCHEDULE_LIMITS.cronExpressions)
    .optional()
    .describe(
      `Cron expressions, at most ${SCHEDULE_LIMITS.cronExpressions}: 5 to 7 fields ("0 9 * * MON-FRI") or @daily, @hourly and the like, read in timezone. One Temporal refuses is answered 400 with its reason. Give cron, every, or both.`,
    ),
  every: duration('An interval between runs, at least 1 s.', SCHEDULE_LIMITS.minEveryMs).optional(),
  offset: duration("Shifts the interval's times from the epoch; less than every.", 0).optional(),
  timezone: personText('timezone', {
    minChars: 1,
    maxChars: SCHEDULE_LIMITS.timezoneChars,
    description: 'The IANA time zone cron expressions are read in, e.g. Europe/Berlin; default UTC. Unknown: 400.',
  }).optional(),
  startAt: time('startAt', 'No run before this time.').optional(),
  endAt: time('endAt', 'No run after this time; after startAt.').optional(),
  overlap: overlap.optional(),
  paused: z.boolean().optional().describe('Create it paused: nothing runs until it is resumed or triggered.'),
  note: note.optional(),
});

/** The body of pause and resume: optional. */
export const scheduleNoteBody = z.strictObject({ note: note.optional() }).optional();

/** The body of a trigger: optional. */
export const triggerBody = z
  .strictObject({ overlap: overlap.describe("This run's overlap policy; default: the schedule's.").optional() })
  .optional();

/** The body of a backfill. */
export const backfillBody = z.strictObject({
  start: time('start', 'The first time of the range.'),
  end: time('end', `The end of the range: after start, at most ${SCHEDULE_LIMITS.backfillDays} days later.`),
  overlap: overlap.describe("The backfill's overlap policy; default: the schedule's.").optional(),
});

const iso = z.string().describe('ISO 8601.');
const run = z.strictObject({
  conversationId: z.string().describe("The run's conversation: read it as any other."),
  scheduledAt: iso,
  startedAt: iso,
  running: z.boolean().optional().describe('Whether its conversation still runs (in a description only).'),
});
const listingFields = {
  scheduleId: z.string(),
  cron: z.array(z.string()),
  intervals: z.array(z.strictObject({ everyMs: z.number().int(), offsetMs: z.number().int() })),
  timezone: z.string(),
  startAt: iso.optional(),
  endAt: iso.optional(),
  paused: z.boolean(),
  note: z.string().optional(),
  nextRuns: z.array(iso).describe('The next times it is due.'),
  recentRuns: z.array(run).describe('Its most recent runs, oldest first.'),
};

/** One schedule, described. */
export const scheduleReply = z
  .strictObject({
    ...listingFields,
    text: z.string(),
    input: z.record(z.string(), z.unknown()).describe("The ConversationInput each run's conversation starts with."),
    overlap: z.enum(overlapNames),
    runningConversations: z.array(z.string()),
    runsTaken: z.number().int(),
    runsSkippedForOverlap: z.number().int(),
    runsMissed: z.number().int(),
    createdAt: iso,
  })
  .describe('The schedule.');

/** `200` of the list. */
export const schedulesReply = z
  .strictObject({ schedules: z.array(z.strictObject(listingFields)) })
  .describe(
    "The schedules of the worker's task queue (the list is eventually consistent: a new one shows soon after).",
  );

const deleted = z.strictObject({ scheduleId: z.string(), deleted: z.literal(true) }).describe('Deleted.');
const triggered = z
  .strictObject({ scheduleId: z.string(), triggered: z.literal(true) })
  .describe('Triggered: Temporal starts the run (or skips it under the overlap policy) shortly.');
const backfilled = z
  .strictObject({ scheduleId: z.string(), backfilled: z.literal(true) })
  .describe("Backfilled: Temporal takes the range's runs shortly, under the overlap policy.");

/** Registers the schedule routes on `app`. */
export function scheduleRoutes(app: FastifyInstance, { client, allow }: ScheduleRoutesOptions): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const security = [{ bearer: [] }];
  const schedules = client.schedules;
  const onSchedule = [400, 401, 403, 404, 414, 500, 503] as const;
  const withBody = [413, 415] as const;
  const scheduleLinks = (id: string) => ({
    getSchedule: { operationId: 'getSchedule', parameters: { id }, description: 'The schedule.' },
    pauseSchedule: { operationId: 'pauseSchedule', parameters: { id }, description: 'Pause it.' },
    deleteSchedule: { operationId: 'deleteSchedule', parameters: { id }, description: 'Delete it.' },
  });
  /** And those a new schedule leads to as well. */
  const createdLinks = (id: string) => ({
    ...scheduleLinks(id),
    resumeSchedule: { operationId: 'resumeSchedule', parameters: { id }, description: 'Resume it.' },
    triggerSchedule: { operationId: 'triggerSchedule', parameters: { id }, description: 'Run it now.' },
    backfillSchedule: { operationId: 'backfillSchedule', parameters: { id }, description: 'Take past runs now.' },
  });

  api.get(
    '/v1/schedules',
    {
      onRequest: allow('operator'),
      schema: {
        operationId: 'listSchedules',
        summary: "The schedules whose runs start conversations on the worker's task queue.",
        security,
        response: { 200: schedulesReply, ...refusals(400, 401, 403, 500, 503) },
      },
      links: { 200: scheduleLinks('$response.body#/schedules/0/scheduleId') },
    },
    async () => ({ schedules: (await answering(() => schedules.list())).map(listingAsJson) }),
  );
  api.post(
    '/v1/schedules',
    {
      onRequest: allow('operator'),
      schema: {
        operationId: 'createSchedule',
        summary:
          "Create a schedule: each run starts a conversation of its own that takes the message, sent by schedule:<scheduleId>, answers it in one turn and ends. Its calls wait for approval as a person's would. Give cron, every, or both (else 400); an id in use: 409 schedule_exists.",
        security,
        body: createScheduleBody,
        response: { 201: scheduleReply, ...refusals(400, 401, 403, 409, 500, 503, ...withBody) },
      },
      links: { 201: createdLinks('$response.body#/scheduleId') },
    },
    async (request, reply) => {
      const { scheduleId: id, text, ...rest } = request.body;
      if (utf8Bytes(text) > USER_MESSAGE_MAX_BYTES)
        throw new ApiError(
          'message_too_large',
          `The text is ${utf8Bytes(text)} bytes; a message may be at most ${USER_MESSAGE_MAX_BYTES} bytes. Nothing was created.`,
        );
      const created = await answering(() => schedules.create({ scheduleId: id, text, ...rest }));
      reply.status(201);
      return detailsAsJson(created);
    },
  );
  refuseOtherMethods(app, '/v1/schedules', ['GET', 'POST']);

  api.get(
    '/v1/schedules/:id',
    {
      onRequest: allow('operator'),
      schema: {
        operationId: 'getSchedule',
        summary: 'The schedule: its spec, time zone, state and note, overlap policy, next runs and recent runs.',
        security,
        params: scheduleParams,
        response: { 200: scheduleReply, ...refusals(...onSchedule) },
      },
    },
    async (request) => detailsAsJson(await answering(() => schedules.describe(request.params.id))),
  );
  api.delete(
    '/v1/schedules/:id',
    {
      onRequest: allow('operator'),
      schema: {
        operationId: 'deleteSchedule',
        summary: 'Delete the schedule. Conversations it started that still run go on.',
        security,
        params: scheduleParams,
        response: { 200: deleted, ...refusals(...onSchedule) },
      },
    },
    async (request) => {
      await answering(() => schedules.delete(request.params.id));
      return { scheduleId: request.params.id, deleted: true as const };
    },
  );
  refuseOtherMethods(app, '/v1/schedules/:id', ['GET', 'DELETE']);

  for (const [action, summary] of [
    [
      'pause',
      'Pause the schedule: nothing runs until it is resumed (a trigger still runs). Running conversations go on.',
    ],
    ['resume', 'Resume the schedule: it runs at its next due time; times missed while paused are not made up.'],
  ] as const) {
    api.post(
      `/v1/schedules/:id/${action}`,
      {
        onRequest: allow('operator'),
        schema: {
          operationId: `${action}Schedule`,
          summary,
          security,
          params: scheduleParams,
          body: scheduleNoteBody,
          response: { 200: scheduleReply, ...refusals(...onSchedule, ...withBody) },
        },
      },
      async (request) => {
        const { id } = request.params;
        const by = request.principal!.subject;
        const given = request.body?.note;
        const text = `${action === 'pause' ? 'Paused' : 'Resumed'} by ${by}${given ? `: ${given}` : '.'}`;
        await answering(() => schedules[action](id, text.slice(0, SCHEDULE_LIMITS.noteChars)));
        return detailsAsJson(await answering(() => schedules.describe(id)));
      },
    );
    refuseOtherMethods(app, `/v1/schedules/:id/${action}`, ['POST']);
  }

  api.post(
    '/v1/schedules/:id/trigger',
    {
      onRequest: allow('operator'),
      schema: {
        operationId: 'triggerSchedule',
        summary:
          "Run the schedule now, paused or not, under its overlap policy (or the body's): with skip, nothing starts while its previous conversation runs. The run starts shortly after the answer.",
        security,
        params: scheduleParams,
        body: triggerBody,
        response: { 202: triggered, ...refusals(...onSchedule, ...withBody) },
      },
      links: { 202: { getSchedule: scheduleLinks('$request.path.id').getSchedule } },
    },
    async (request, reply) => {
      const { id } = request.params;
      await answering(() => schedules.trigger(id, { overlap: request.body?.overlap }));
      reply.status(202);
      return { scheduleId: id, triggered: true as const };
    },
  );
  refuseOtherMethods(app, '/v1/schedules/:id/trigger', ['POST']);

  api.post(
    '/v1/schedules/:id/backfill',
    {
      onRequest: allow('operator'),
      schema: {
        operationId: 'backfillSchedule',
        summary: `Take the runs that were due from start to end (at most ${SCHEDULE_LIMITS.backfillDays} days and ${SCHEDULE_LIMITS.backfillRuns} due times, else 400) now, under the schedule's overlap policy (or the body's): with skip, one starts while none runs.`,
        security,
        params: scheduleParams,
        body: backfillBody,
        response: { 202: backfilled, ...refusals(...onSchedule, ...withBody) },
      },
      links: { 202: { getSchedule: scheduleLinks('$request.path.id').getSchedule } },
    },
    async (request, reply) => {
      const { id } = request.params;
      const { start, end, overlap: policy } = request.body;
      await answering(() => schedules.backfill(id, { start, end }, { overlap: policy }));
      reply.status(202);
      return { scheduleId: id, backfilled: true as const };
    },
  );
  refuseOtherMethods(app, '/v1/schedules/:id/backfill', ['POST']);
}

/** Runs `work`, answering the schedules' errors with the API's refusals. */
async function answering<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ScheduleOptionsError) throw new ApiError('invalid_request', err.message);
    if (err instanceof ScheduleNotFoundError) throw new ApiError('not_found', err.message);
    if (err instanceof ScheduleAlreadyRunning) throw new ApiError('schedule_exists', err.message);
    throw err;
  }
}

function runAsJson(r: ScheduleRun) {
  return { ...r, scheduledAt: r.scheduledAt.toISOString(), startedAt: r.startedAt.toISOString() };
}

function listingAsJson(s: ScheduleListing) {
  const { startAt, endAt, ...rest } = s;
  return {
    ...rest,
    ...(startAt ? { startAt: startAt.toISOString() } : {}),
    ...(endAt ? { endAt: endAt.toISOString() } : {}),
    nextRuns: s.nextRuns.map((t) => t.toISOString()),
    recentRuns: s.recentRuns.map(runAsJson),
  };
}

function detailsAsJson(s: ScheduleDetails) {
  return {
    ...listingAsJson(s),
    text: s.text,
    input: s.input as Record<string, unknown>,
    overlap: s.overlap,
    runningConversations: s.runningConversations,
    runsTaken: s.runsTaken,
    runsSkippedForOverlap: s.runsSkippedForOverlap,
    runsMissed: s.runsMissed,
    createdAt: s.createdAt.toISOString(),
  };
}
