/**
 * What a schedule is made of, checked before Temporal sees it: its id, its message, the conversation input its runs
 * start with, when it runs (cron expressions or an interval, a time zone, a window) and its overlap policy. Each
 * check says what is wrong and the limit; Temporal checks the cron grammar itself and its refusal is passed on.
 */
import { ScheduleOverlapPolicy, type ScheduleSpec } from '@temporalio/client';
import { msToNumber } from '@temporalio/common/lib/time';
import { describeUnusableOutputSchema } from '../common/typed-output';
import { describeInvalidInput } from '../contract/conversation-input-checks';
import type { ConversationInput } from '../contract/conversation-input';
import { describeUnstorableText } from '../contract/text';

/**
 * Our names of Temporal's overlap policies: what a run that is due does while the schedule's previous conversation
 * still runs (docs/schedules.md, "Overlap").
 */
export const OVERLAP_POLICIES = {
  skip: ScheduleOverlapPolicy.SKIP,
  buffer_one: ScheduleOverlapPolicy.BUFFER_ONE,
  buffer_all: ScheduleOverlapPolicy.BUFFER_ALL,
  cancel_other: ScheduleOverlapPolicy.CANCEL_OTHER,
  terminate_other: ScheduleOverlapPolicy.TERMINATE_OTHER,
  allow_all: ScheduleOverlapPolicy.ALLOW_ALL,
} as const;

/** One of {@link OVERLAP_POLICIES}. */
export type OverlapPolicy = keyof typeof OVERLAP_POLICIES;

/** The overlap policy of a schedule that names none: Temporal's own default. */
export const DEFAULT_OVERLAP: OverlapPolicy = 'skip';

/** The limits of a schedule's options. */
export const SCHEDULE_LIMITS = {
  /** The longest id: with the run's time Temporal appends (21 characters), a conversation id stays under 200. */
  idChars: 128,
  /** The most cron expressions of one schedule. */
  cronExpressions: 10,
  /** The longest cron expression. */
  cronChars: 200,
  /** The shortest interval Temporal takes; intervals are whole seconds. */
  minEveryMs: 1_000,
  /** The longest note. */
  noteChars: 1_000,
  /** The longest time zone name. */
  timezoneChars: 64,
  /** The longest range one backfill covers. */
  backfillDays: 31,
  /** The most runs one backfill may take (each one a conversation). */
  backfillRuns: 100,
} as const;

/** A schedule id: a letter or digit, then letters, digits, `.`, `_`, `:` or `-`. */
export const SCHEDULE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

/** A duration: milliseconds, or a string such as `"5s"`, `"15 minutes"`, `"1d"`. */
export type ScheduleDuration = number | string;

/** A time: a `Date`, or ISO 8601 text. */
export type ScheduleTime = Date | string;

/** Options of `AgentClient.schedules.create`. */
export interface CreateScheduleOptions {
  /** The schedule's id; each run's conversation id is this id and the run's time, e.g. `daily-2026-01-05T09:00:00Z`. */
  scheduleId: string;
  /** The message each run's conversation takes, sent by `schedule:<scheduleId>`. */
  text: string;
  /** The input each run's conversation starts with (agent, tools, model settings…), as for `sendMessage`. */
  input?: Omit<ConversationInput, 'scheduled'>;
  /** Cron expressions (5 to 7 fields, or `@daily` and the like), in {@link timezone}. */
  cron?: string | string[];
  /** An interval instead of (or beside) cron: every this long, whole seconds, at least 1 s. */
  every?: ScheduleDuration;
  /** Shifts the interval's times: every `every` from the epoch plus this; less than `every`. Default 0. */
  offset?: ScheduleDuration;
  /** The IANA time zone cron expressions are read in, e.g. `Europe/Berlin`. Default UTC. */
  timezone?: string;
  /** No run before this time. */
  startAt?: ScheduleTime;
  /** No run after this time. */
  endAt?: ScheduleTime;
  /** What a run that is due does while the previous conversation still runs. Default `skip`. */
  overlap?: OverlapPolicy;
  /** Created paused: nothing runs until it is resumed (or triggered). */
  paused?: boolean;
  /** A note shown with the schedule, e.g. why it is paused. */
  note?: string;
}

/** A schedule's options checked and put the way Temporal takes them. */
export interface CheckedSchedule {
  spec: ScheduleSpec;
  cron: string[];
  input: ConversationInput;
  overlap: OverlapPolicy;
}

/** A schedule's options, or a schedule operation's arguments, are not valid: the message says what and the limit. */
export class ScheduleOptionsError extends TypeError {
  constructor(message: string) {
    super(message);
    this.name = 'ScheduleOptionsError';
  }
}

/** Checks `options`; throws a {@link ScheduleOptionsError} listing every problem. */
export function checkSchedule(options: CreateScheduleOptions): CheckedSchedule {
  const problems: string[] = [];
  const idProblem = describeBadScheduleId(options.scheduleId);
  if (idProblem) problems.push(idProblem);
  if (typeof options.text !== 'string' || options.text.trim() === '')
    problems.push('text must be the message of each run: some text other than white space');
  else {
    const unstorable = describeUnstorableText('text', options.text);
    if (unstorable) problems.push(unstorable);
  }
  const input: ConversationInput = {
    ...(options.input ?? {}),
    scheduled: { scheduleId: String(options.scheduleId), text: String(options.text) },
  };
  problems.push(...describeScheduleInput(options.input, input));
  const cron = options.cron === undefined ? [] : Array.isArray(options.cron) ? options.cron : [options.cron];
  problems.push(...describeBadCron(cron));
  const interval = intervalOf(options.every, options.offset, problems);
  if (cron.length === 0 && !interval)
    problems.push('a schedule needs cron expressions (cron) or an interval (every), or both');
  const timezone = options.timezone;
  if (timezone !== undefined) {
    const bad = describeBadTimezone(timezone);
    if (bad) problems.push(bad);
  }
  const startAt = timeOf(options.startAt, 'startAt', problems);
  const endAt = timeOf(options.endAt, 'endAt', problems);
  if (startAt && endAt && endAt.getTime() <= startAt.getTime())
    problems.push(`endAt (${endAt.toISOString()}) must be after startAt (${startAt.toISOString()})`);
  const overlap = options.overlap ?? DEFAULT_OVERLAP;
  const badOverlap = describeBadOverlap(overlap, 'overlap');
  if (badOverlap) problems.push(badOverlap);
  if (options.paused !== undefined && typeof options.paused !== 'boolean')
    problems.push(`paused must be true or false, got ${JSON.stringify(options.paused)}`);
  const badNote = describeBadNote(options.note);
  if (badNote) problems.push(badNote);
  if (problems.length > 0)
    throw new ScheduleOptionsError(`Invalid schedule ${JSON.stringify(options.scheduleId)}: ${problems.join('; ')}.`);
  return {
    spec: {
      ...(cron.length > 0 ? { cronExpressions: cron } : {}),
      ...(interval ? { intervals: [interval] } : {}),
      ...(timezone ? { timezone } : {}),
      ...(startAt ? { startAt } : {}),
      ...(endAt ? { endAt } : {}),
    },
    cron,
    input,
    overlap,
  };
}

/** What is wrong with a schedule id; undefined when it is usable. */
export function describeBadScheduleId(id: unknown): string | undefined {
  if (typeof id === 'string' && id.length <= SCHEDULE_LIMITS.idChars && SCHEDULE_ID_PATTERN.test(id)) return undefined;
  return (
    `the schedule id must be 1 to ${SCHEDULE_LIMITS.idChars} characters: a letter or digit, then letters, digits, ".", "_", ":" or "-", ` +
    `got ${JSON.stringify(id)?.slice(0, 200)}`
  );
}

/** What is wrong with an overlap policy's name; undefined when it is one. */
export function describeBadOverlap(overlap: unknown, field: string): string | undefined {
  if (typeof overlap === 'string' && Object.hasOwn(OVERLAP_POLICIES, overlap)) return undefined;
  return `${field} must be one of ${Object.keys(OVERLAP_POLICIES).join(', ')}, got ${JSON.stringify(overlap)}`;
}

/** What is wrong with a note; undefined when it is usable (or absent). */
export function describeBadNote(note: unknown): string | undefined {
  if (note === undefined) return undefined;
  if (typeof note !== 'string' || note.length > SCHEDULE_LIMITS.noteChars)
    return `note must be text of at most ${SCHEDULE_LIMITS.noteChars} characters`;
  return describeUnstorableText('note', note);
}

/** What is wrong with an IANA time zone name (as this process knows them); undefined when it is one. */
export function describeBadTimezone(timezone: unknown): string | undefined {
  const known = (): boolean => {
    try {
      new Intl.DateTimeFormat('en', { timeZone: timezone as string });
      return true;
    } catch {
      return false;
    }
  };
  if (typeof timezone === 'string' && timezone !== '' && timezone.length <= SCHEDULE_LIMITS.timezoneChars && known())
    return undefined;
  return `timezone must be an IANA time zone name such as "Europe/Berlin" or "UTC", got ${JSON.stringify(timezone)?.slice(0, 100)} (unknown time zone)`;
}

/** A time option as a `Date`; a problem is added when it is not a valid time. */
export function timeOf(value: ScheduleTime | undefined, field: string, problems: string[]): Date | undefined {
  if (value === undefined) return undefined;
  const date =
    value instanceof Date ? value : typeof value === 'string' && value.trim() !== '' ? new Date(value) : undefined;
  if (!date || Number.isNaN(date.getTime()) || date.getTime() < 0 || date.getUTCFullYear() > 9999) {
    problems.push(
      `${field} must be a time from 1970 to 9999 (a Date, or ISO 8601 text such as "2030-01-01T09:00:00Z"), got ${JSON.stringify(value)}`,
    );
    return undefined;
  }
  return date;
}

/** The problems of the input each run starts with: those of `sendMessage`, and fields only the workflow sets. */
function describeScheduleInput(given: unknown, input: ConversationInput): string[] {
  if (given !== undefined && (typeof given !== 'object' || given === null || Array.isArray(given)))
    return ['input must be an object (a ConversationInput)'];
  const problems = describeInvalidInput(input, { providers: true }).map((p) => `input: ${p}`);
  const g = (given ?? {}) as Record<string, unknown>;
  for (const field of ['scheduled', 'calledBy', 'carried'] as const)
    if (g[field] !== undefined) problems.push(`input.${field} is set by the workflow or the schedule, never given`);
  if (problems.length === 0 && input.output)
    problems.push(...describeUnusableOutputSchema(input.output, 'input.output').map((p) => `input: ${p}`));
  return problems;
}

/** The problems of cron expressions Temporal would surely refuse (it checks their grammar itself). */
function describeBadCron(cron: unknown[]): string[] {
  if (cron.length > SCHEDULE_LIMITS.cronExpressions)
    return [`at most ${SCHEDULE_LIMITS.cronExpressions} cron expressions, got ${cron.length}`];
  return cron.flatMap((expression) =>
    typeof expression === 'string' && expression.trim() !== '' && expression.length <= SCHEDULE_LIMITS.cronChars
      ? []
      : [
          `cron expressions must be text of 1 to ${SCHEDULE_LIMITS.cronChars} characters such as "0 9 * * MON-FRI", got ${JSON.stringify(expression)?.slice(0, 100)}`,
        ],
  );
}

/** The interval of `every` and `offset`, in whole seconds; problems are added when they are not usable. */
function intervalOf(
  every: ScheduleDuration | undefined,
  offset: ScheduleDuration | undefined,
  problems: string[],
): { every: number; offset: number } | undefined {
  if (every === undefined) {
    if (offset !== undefined) problems.push('offset shifts an interval: give every too');
    return undefined;
  }
  const everyMs = durationOf(every, 'every', SCHEDULE_LIMITS.minEveryMs, problems);
  const offsetMs = offset === undefined ? 0 : durationOf(offset, 'offset', 0, problems);
  if (everyMs === undefined || offsetMs === undefined) return undefined;
  if (offsetMs >= everyMs) {
    problems.push(`offset (${offsetMs} ms) must be less than every (${everyMs} ms)`);
    return undefined;
  }
  return { every: everyMs, offset: offsetMs };
}

/** A duration in ms: whole seconds, at least `minMs`; a problem is added otherwise. */
function durationOf(value: ScheduleDuration, field: string, minMs: number, problems: string[]): number | undefined {
  let ms: number;
  try {
    ms = typeof value === 'number' || typeof value === 'string' ? msToNumber(value as never) : Number.NaN;
  } catch {
    ms = Number.NaN;
  }
  if (!Number.isSafeInteger(ms) || ms < minMs || ms % 1000 !== 0) {
    problems.push(
      `${field} must be whole seconds of at least ${minMs / 1000} s, as milliseconds (5000) or text ("5s", "15 minutes"), got ${JSON.stringify(value)}`,
    );
    return undefined;
  }
  return ms;
}
