/**
 * Conversations on a schedule, over Temporal Schedules: each run of a schedule starts a conversation of its own
 * (workflow `agentConversation`, id the schedule's id and the run's time) that takes the schedule's message, sent by
 * `schedule:<id>`, answers it in one turn, and ends. Create, list, describe, pause, resume, trigger, backfill and
 * delete. Client side: talks to Temporal only.
 */
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  type Client,
  type ScheduleDescription,
  type ScheduleExecutionResult,
  type ScheduleSummary,
} from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { CONVERSATION_WORKFLOW_TYPE } from '../contract/workflow';
import type { ConversationInput } from '../contract/conversation-input';
import {
  checkSchedule,
  describeBadNote,
  describeBadOverlap,
  describeBadScheduleId,
  OVERLAP_POLICIES,
  SCHEDULE_LIMITS,
  ScheduleOptionsError,
  timeOf,
  type CreateScheduleOptions,
  type OverlapPolicy,
  type ScheduleTime,
} from './options';

/** What the schedules need of the client: its Temporal client, task queue and how it starts conversations. */
export interface ScheduleContext {
  readonly temporal: Client;
  readonly taskQueue: string;
  /** The workflow task timeout conversations start with. */
  readonly workflowTaskTimeout: string | number;
  /** The input a conversation starts with: the caller's, with what the client adds (the search attribute names). */
  startInput(input: ConversationInput): Promise<ConversationInput>;
}

/** The memo key under which a schedule keeps what Temporal does not give back (its task queue, its cron text). */
const MEMO_KEY = 'durableAgentSchedule';

/** What the memo holds. */
interface ScheduleMemo {
  taskQueue: string;
  cron: string[];
}

/** One run of a schedule: a conversation. */
export interface ScheduleRun {
  /** The conversation's id (its workflow id): the schedule's id and the run's time. */
  conversationId: string;
  /** The time it was due (for a trigger, when it was triggered). */
  scheduledAt: Date;
  /** When Temporal started it. */
  startedAt: Date;
  /** Whether its conversation still runs (known by `describe`, not by `list`). */
  running?: boolean;
}

/** A schedule as `list` gives it. */
export interface ScheduleListing {
  scheduleId: string;
  /** Its cron expressions, as given. */
  cron: string[];
  /** Its intervals, in ms. */
  intervals: { everyMs: number; offsetMs: number }[];
  /** The time zone of its cron expressions; `UTC` when none was given. */
  timezone: string;
  startAt?: Date;
  endAt?: Date;
  paused: boolean;
  note?: string;
  /** The next times it is due (a few). */
  nextRuns: Date[];
  /** Its most recent runs, oldest first. */
  recentRuns: ScheduleRun[];
}

/** A schedule as `describe` gives it: what `list` gives, and more. */
export interface ScheduleDetails extends ScheduleListing {
  /** The message each run takes. */
  text: string;
  /** The input each run's conversation starts with. */
  input: Omit<ConversationInput, 'scheduled'>;
  overlap: OverlapPolicy;
  /** The conversations of its runs that still run. */
  runningConversations: string[];
  /** Runs taken so far (triggers included). */
  runsTaken: number;
  /** Runs not started because the previous conversation still ran (overlap `skip`, or a buffer that was full). */
  runsSkippedForOverlap: number;
  /** Runs missed while Temporal could not start them in time (its catch-up window). */
  runsMissed: number;
  createdAt: Date;
}

/** Options of `trigger` and `backfill`. */
export interface ScheduleRunOptions {
  /** The overlap policy for these runs; default: the schedule's own. */
  overlap?: OverlapPolicy;
}

/** The schedules of the conversations on one client's task queue (`AgentClient.schedules`). */
export class AgentSchedules {
  constructor(private readonly context: ScheduleContext) {}

  /**
   * Creates a schedule and returns its description. Throws `ScheduleOptionsError` (a `TypeError`) for options that
   * are not valid, a cron expression or time zone Temporal refuses among them; Temporal's `ScheduleAlreadyRunning`
   * when a schedule with this id exists.
   */
  async create(options: CreateScheduleOptions): Promise<ScheduleDetails> {
    const checked = checkSchedule(options);
    const { scheduleId } = options;
    const memo: ScheduleMemo = { taskQueue: this.context.taskQueue, cron: checked.cron };
    try {
      await this.context.temporal.schedule.create({
        scheduleId,
        spec: checked.spec,
        action: {
          type: 'startWorkflow',
          workflowType: CONVERSATION_WORKFLOW_TYPE,
          // Temporal appends each run's time: every run is a conversation of its own.
          workflowId: scheduleId,
          taskQueue: this.context.taskQueue,
          args: [await this.context.startInput(checked.input)],
          workflowTaskTimeout: this.context.workflowTaskTimeout,
        },
        policies: { overlap: OVERLAP_POLICIES[checked.overlap] },
        memo: { [MEMO_KEY]: memo },
        state: {
          paused: options.paused ?? false,
          ...(options.note === undefined ? {} : { note: options.note }),
        },
      });
    } catch (err) {
      if (err instanceof ScheduleAlreadyRunning)
        throw new ScheduleAlreadyRunning(
          `A schedule ${scheduleId} exists already: choose another id, or delete that schedule first.`,
          scheduleId,
        );
      // Temporal's INVALID_ARGUMENT: a cron expression or a time zone it does not take.
      if (err instanceof TypeError)
        throw new ScheduleOptionsError(`Invalid schedule "${scheduleId}": Temporal refused it: ${err.message}.`);
      throw err;
    }
    return this.describe(scheduleId);
  }

  /** The schedules of this client's task queue, by id. Listing is eventually consistent: a new one shows soon after. */
  async list(): Promise<ScheduleListing[]> {
    const found: ScheduleListing[] = [];
    for await (const summary of this.context.temporal.schedule.list()) {
      const memo = this.memoOf(summary);
      if (summary.action?.workflowType !== CONVERSATION_WORKFLOW_TYPE || !memo) continue;
      found.push(listingOf(summary, memo));
    }
    return found.sort((a, b) => a.scheduleId.localeCompare(b.scheduleId));
  }

  /** The schedule's spec, state, policy, next and recent runs. Throws `ScheduleNotFoundError` for an unknown id. */
  async describe(scheduleId: string): Promise<ScheduleDetails> {
    const { description, memo } = await this.read(scheduleId);
    const running = new Set(description.info.runningActions.map((a) => a.workflow.workflowId));
    const [input] = description.action.args as [ConversationInput | undefined];
    const { scheduled, ...rest } = input ?? {};
    const listing = listingOf(description, memo);
    return {
      ...listing,
      recentRuns: listing.recentRuns.map((run) => ({ ...run, running: running.has(run.conversationId) })),
      text: scheduled?.text ?? '',
      input: rest,
      overlap: overlapName(description.policies.overlap),
      runningConversations: [...running],
      runsTaken: description.info.numActionsTaken,
      runsSkippedForOverlap: description.info.numActionsSkippedOverlap,
      runsMissed: description.info.numActionsMissedCatchupWindow,
      createdAt: description.info.createdAt,
    };
  }

  /** Pauses the schedule: nothing runs until it is resumed (a trigger still runs). Conversations running go on. */
  async pause(scheduleId: string, note?: string): Promise<void> {
    checkNote(note);
    await this.read(scheduleId);
    await this.context.temporal.schedule.getHandle(scheduleId).pause(note ?? 'Paused.');
  }

  /** Resumes a paused schedule: it runs at its next due time (times missed while paused are not made up). */
  async resume(scheduleId: string, note?: string): Promise<void> {
    checkNote(note);
    await this.read(scheduleId);
    await this.context.temporal.schedule.getHandle(scheduleId).unpause(note ?? 'Resumed.');
  }

  /**
   * Runs the schedule now, paused or not, under its overlap policy unless `options.overlap` says otherwise: with
   * `skip`, nothing starts while its previous conversation runs.
   */
  async trigger(scheduleId: string, options: ScheduleRunOptions = {}): Promise<void> {
    checkOverlap(options.overlap);
    const { description } = await this.read(scheduleId);
    await this.context.temporal.schedule
      .getHandle(scheduleId)
      .trigger(options.overlap ? OVERLAP_POLICIES[options.overlap] : description.policies.overlap);
  }

  /**
   * Takes the runs that were due from `start` to `end` now, as if that time passed again (under the schedule's overlap
   * policy unless `options.overlap` says otherwise: with `skip`, one run of the range starts while none runs).
   */
  async backfill(
    scheduleId: string,
    range: { start: ScheduleTime; end: ScheduleTime },
    options: ScheduleRunOptions = {},
  ): Promise<void> {
    checkOverlap(options.overlap);
    const problems: string[] = [];
    const start = timeOf(range?.start, 'start', problems);
    const end = timeOf(range?.end, 'end', problems);
    if (start && end && end.getTime() <= start.getTime())
      problems.push(`end (${end.toISOString()}) must be after start (${start.toISOString()})`);
    else if (start && end && end.getTime() - start.getTime() > SCHEDULE_LIMITS.backfillDays * 86_400_000)
      problems.push(`a backfill covers at most ${SCHEDULE_LIMITS.backfillDays} days: backfill a longer time in parts`);
    if (problems.length > 0 || !start || !end)
      throw new ScheduleOptionsError(`Invalid backfill of ${scheduleId}: ${problems.join('; ')}.`);
    const { description } = await this.read(scheduleId);
    const due = await this.dueTimes(scheduleId, start, end);
    if (due > SCHEDULE_LIMITS.backfillRuns)
      throw new ScheduleOptionsError(
        `Invalid backfill of ${scheduleId}: ${due} runs were due from ${start.toISOString()} to ${end.toISOString()}, and a backfill takes at most ${SCHEDULE_LIMITS.backfillRuns}: backfill a shorter range.`,
      );
    await this.context.temporal.schedule.getHandle(scheduleId).backfill({
      start,
      end,
      overlap: options.overlap ? OVERLAP_POLICIES[options.overlap] : description.policies.overlap,
    });
  }

  /** Deletes the schedule. Conversations it started and that still run go on. */
  async delete(scheduleId: string): Promise<void> {
    await this.read(scheduleId);
    await this.context.temporal.schedule.getHandle(scheduleId).delete();
  }

  /** How many times the schedule was due from `start` to `end`, as Temporal counts them. */
  private async dueTimes(scheduleId: string, start: Date, end: Date): Promise<number> {
    const { temporal } = this.context;
    const matching = await temporal.workflowService.listScheduleMatchingTimes({
      namespace: temporal.options.namespace,
      scheduleId,
      startTime: msToTs(start.getTime()),
      endTime: msToTs(end.getTime()),
    });
    return matching.startTime?.length ?? 0;
  }

  /**
   * The schedule's description and memo; `ScheduleNotFoundError` when there is none, or when it is not a schedule of
   * conversations on this client's task queue (another team's schedule is never touched).
   */
  private async read(scheduleId: string): Promise<{ description: ScheduleDescription; memo: ScheduleMemo }> {
    const bad = describeBadScheduleId(scheduleId);
    if (bad) throw new ScheduleOptionsError(`${bad.charAt(0).toUpperCase()}${bad.slice(1)}.`);
    let description: ScheduleDescription;
    try {
      description = await this.context.temporal.schedule.getHandle(scheduleId).describe();
    } catch (err) {
      if (err instanceof ScheduleNotFoundError) throw notFound(scheduleId, this.context.taskQueue);
      throw err;
    }
    const memo = this.memoOf(description);
    if (description.action.workflowType !== CONVERSATION_WORKFLOW_TYPE || !memo)
      throw notFound(scheduleId, this.context.taskQueue);
    return { description, memo };
  }

  /** The memo of a schedule of this task queue's conversations; undefined for any other schedule. */
  private memoOf(schedule: ScheduleSummary | ScheduleDescription): ScheduleMemo | undefined {
    const memo = schedule.memo?.[MEMO_KEY] as Partial<ScheduleMemo> | undefined;
    if (memo?.taskQueue !== this.context.taskQueue) return undefined;
    return { taskQueue: memo.taskQueue, cron: Array.isArray(memo.cron) ? memo.cron.map(String) : [] };
  }
}

/** What `list` and `describe` share. */
function listingOf(schedule: ScheduleSummary | ScheduleDescription, memo: ScheduleMemo): ScheduleListing {
  const spec = schedule.spec;
  return {
    scheduleId: schedule.scheduleId,
    cron: memo.cron,
    intervals: (spec?.intervals ?? []).map((i) => ({ everyMs: i.every, offsetMs: i.offset })),
    timezone: spec?.timezone || 'UTC',
    ...(spec?.startAt ? { startAt: spec.startAt } : {}),
    ...(spec?.endAt ? { endAt: spec.endAt } : {}),
    paused: schedule.state.paused,
    ...(schedule.state.note ? { note: schedule.state.note } : {}),
    nextRuns: schedule.info.nextActionTimes,
    recentRuns: schedule.info.recentActions.map(runOf),
  };
}

/** A recent action as a run. */
function runOf(action: ScheduleExecutionResult): ScheduleRun {
  return {
    conversationId: action.action.workflow.workflowId,
    scheduledAt: action.scheduledAt,
    startedAt: action.takenAt,
  };
}

/** Our name of Temporal's overlap policy. */
function overlapName(policy: string | undefined): OverlapPolicy {
  const found = (Object.entries(OVERLAP_POLICIES) as [OverlapPolicy, string][]).find(([, p]) => p === policy);
  return found?.[0] ?? 'skip';
}

/** The error for a schedule that does not exist (or is not one of this task queue's conversations). */
function notFound(scheduleId: string, taskQueue: string): ScheduleNotFoundError {
  return new ScheduleNotFoundError(
    `No schedule ${scheduleId} of conversations on task queue "${taskQueue}" (unknown, or deleted). List them with schedules list.`,
    scheduleId,
  );
}

function checkNote(note: unknown): void {
  const bad = describeBadNote(note);
  if (bad) throw new ScheduleOptionsError(`Invalid note: ${bad}.`);
}

function checkOverlap(overlap: unknown): void {
  const bad = overlap === undefined ? undefined : describeBadOverlap(overlap, 'overlap');
  if (bad) throw new ScheduleOptionsError(`Invalid ${bad}.`);
}
