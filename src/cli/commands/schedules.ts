/**
 * `schedules create|list|show|pause|resume|trigger|backfill|delete`: conversations on a schedule
 * (docs/schedules.md). With the client (Temporal found as for every command), or through the HTTP API with
 * AGENT_API_URL and an operator's AGENT_API_TOKEN.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { ConversationInput } from '../../contract/conversation-input';
import type { CreateScheduleOptions, OverlapPolicy } from '../../schedules/options';
import type { ScheduleDetails, ScheduleListing, ScheduleRun } from '../../schedules/schedules';
import { callApi, remoteApi } from '../api-decisions';
import { withClient } from '../connect';

/** A schedule's times as the client gives them (Dates) or the API does (ISO text). */
type Timed<T> = { [K in keyof T]: T[K] extends Date ? Date | string : T[K] };
type Listing = Omit<Timed<ScheduleListing>, 'nextRuns' | 'recentRuns'> & {
  nextRuns: (Date | string)[];
  recentRuns: Timed<ScheduleRun>[];
};
type Details = Listing & Omit<Timed<ScheduleDetails>, keyof ScheduleListing>;

const OVERLAPS = ['skip', 'buffer_one', 'buffer_all', 'cancel_other', 'terminate_other', 'allow_all'];
const overlapOption = (what: string) => new Option('--overlap <policy>', what).choices(OVERLAPS);

/** Adds `schedules` and its subcommands to the program. */
export function addScheduleCommands(program: Command): void {
  const schedules = program
    .command('schedules')
    .description(
      "conversations on a schedule: each run is a new conversation with the schedule's message (through the HTTP API with AGENT_API_URL and an operator's token)",
    );

  schedules
    .command('create <scheduleId> <text...>')
    .description('create a schedule whose runs send <text> as schedule:<scheduleId>; give --cron or --every')
    .option('--cron <expression>', 'a cron expression, e.g. "0 9 * * MON-FRI" (repeatable)', collect, [])
    .option('--every <duration>', 'an interval: "30s", "15m", "1h", or milliseconds')
    .option('--offset <duration>', "shifts the interval's times; less than --every")
    .option('--timezone <zone>', 'the IANA time zone of the cron expressions (default UTC)')
    .option('--start <time>', 'no run before this ISO 8601 time')
    .option('--end <time>', 'no run after this ISO 8601 time')
    .addOption(overlapOption('what a due run does while the previous conversation runs').default('skip'))
    .option('--agent <name>', 'the agent that answers each run')
    .option('--input <json>', "the runs' conversation input, as JSON (a ConversationInput)")
    .option('--paused', 'create it paused')
    .option('--note <text>', 'a note shown with it')
    .action(async (scheduleId: string, words: string[], o: CreateFlags) => {
      const options = createOptions(scheduleId, words.join(' '), o);
      const remote = remoteApi(process.env);
      const created = remote
        ? await callApi<Details>(remote, 'POST', '/v1/schedules', options, 'Nothing was created.')
        : await withClient((client) => client.schedules.create(options));
      printDetails(created);
    });

  schedules
    .command('list')
    .description("list the schedules of the worker's task queue")
    .action(async () => {
      const remote = remoteApi(process.env);
      const listed: Listing[] = remote
        ? (await callApi<{ schedules: Listing[] }>(remote, 'GET', '/v1/schedules', undefined, 'Nothing was listed.'))
            .schedules
        : await withClient((client) => client.schedules.list());
      if (listed.length === 0) process.stdout.write('No schedule.\n');
      for (const s of listed) process.stdout.write(`${listingLine(s)}\n`);
    });

  schedules
    .command('show <scheduleId>')
    .description('a schedule: spec, time zone, state, overlap policy, next and recent runs')
    .action(async (scheduleId: string) => {
      const remote = remoteApi(process.env);
      printDetails(
        remote
          ? await callApi<Details>(remote, 'GET', path(scheduleId), undefined, 'Nothing was read.')
          : await withClient((client) => client.schedules.describe(scheduleId)),
      );
    });

  for (const action of ['pause', 'resume'] as const) {
    schedules
      .command(`${action} <scheduleId>`)
      .description(
        action === 'pause'
          ? 'pause a schedule: nothing runs until it is resumed (running conversations go on)'
          : 'resume a paused schedule: it runs at its next due time',
      )
      .option('--note <text>', 'why')
      .action(async (scheduleId: string, o: { note?: string }) => {
        const remote = remoteApi(process.env);
        if (remote)
          await callApi(
            remote,
            'POST',
            `${path(scheduleId)}/${action}`,
            o.note ? { note: o.note } : {},
            'Nothing changed.',
          );
        else await withClient((client) => client.schedules[action](scheduleId, o.note));
        process.stdout.write(`${action === 'pause' ? 'Paused' : 'Resumed'} ${scheduleId}.\n`);
      });
  }

  schedules
    .command('trigger <scheduleId>')
    .description('run a schedule now, under its overlap policy (with skip: not while its previous conversation runs)')
    .addOption(overlapOption("this run's overlap policy (default: the schedule's)"))
    .action(async (scheduleId: string, o: { overlap?: OverlapPolicy }) => {
      const remote = remoteApi(process.env);
      const body = o.overlap ? { overlap: o.overlap } : {};
      if (remote) await callApi(remote, 'POST', `${path(scheduleId)}/trigger`, body, 'Nothing was triggered.');
      else await withClient((client) => client.schedules.trigger(scheduleId, body));
      process.stdout.write(`Triggered ${scheduleId}: "schedules show ${scheduleId}" lists its run.\n`);
    });

  schedules
    .command('backfill <scheduleId>')
    .description('take now the runs that were due in a time range (at most 31 days)')
    .requiredOption('--start <time>', 'the first time of the range, ISO 8601')
    .requiredOption('--end <time>', 'the end of the range, ISO 8601')
    .addOption(overlapOption("the backfill's overlap policy (default: the schedule's)"))
    .action(async (scheduleId: string, o: { start: string; end: string; overlap?: OverlapPolicy }) => {
      const remote = remoteApi(process.env);
      const extra = o.overlap ? { overlap: o.overlap } : {};
      if (remote)
        await callApi(
          remote,
          'POST',
          `${path(scheduleId)}/backfill`,
          { start: o.start, end: o.end, ...extra },
          'Nothing was backfilled.',
        );
      else await withClient((client) => client.schedules.backfill(scheduleId, { start: o.start, end: o.end }, extra));
      process.stdout.write(`Backfilled ${scheduleId} from ${o.start} to ${o.end}.\n`);
    });

  schedules
    .command('delete <scheduleId>')
    .description('delete a schedule (conversations it started that still run go on)')
    .action(async (scheduleId: string) => {
      const remote = remoteApi(process.env);
      if (remote) await callApi(remote, 'DELETE', path(scheduleId), undefined, 'Nothing was deleted.');
      else await withClient((client) => client.schedules.delete(scheduleId));
      process.stdout.write(`Deleted ${scheduleId}.\n`);
    });
}

interface CreateFlags {
  cron: string[];
  every?: string;
  offset?: string;
  timezone?: string;
  start?: string;
  end?: string;
  overlap: OverlapPolicy;
  agent?: string;
  input?: string;
  paused?: boolean;
  note?: string;
}

/** The options of `create` from its flags. */
function createOptions(scheduleId: string, text: string, o: CreateFlags): CreateScheduleOptions {
  let input: ConversationInput | undefined;
  if (o.input !== undefined) {
    try {
      input = JSON.parse(o.input) as ConversationInput;
    } catch (err) {
      throw new InvalidArgumentError(`--input must be JSON (a ConversationInput): ${(err as Error).message}`);
    }
  }
  if (o.agent) input = { ...input, agent: o.agent };
  const duration = (value: string | undefined) => (value && /^[0-9]+$/.test(value) ? Number(value) : value);
  const options: CreateScheduleOptions = { scheduleId, text, overlap: o.overlap };
  if (input) options.input = input;
  if (o.cron.length > 0) options.cron = o.cron;
  if (o.every !== undefined) options.every = duration(o.every);
  if (o.offset !== undefined) options.offset = duration(o.offset);
  if (o.timezone !== undefined) options.timezone = o.timezone;
  if (o.start !== undefined) options.startAt = o.start;
  if (o.end !== undefined) options.endAt = o.end;
  if (o.paused) options.paused = true;
  if (o.note !== undefined) options.note = o.note;
  return options;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

const path = (scheduleId: string) => `/v1/schedules/${encodeURIComponent(scheduleId)}`;
const at = (t: Date | string) => new Date(t).toISOString();

/** When a schedule runs, in words. */
function specText(s: Listing): string {
  const parts = [
    ...s.cron.map((c) => `cron "${c}"`),
    ...s.intervals.map((i) => `every ${i.everyMs / 1000}s${i.offsetMs ? ` (offset ${i.offsetMs / 1000}s)` : ''}`),
  ];
  return `${parts.join(', ') || 'no spec'} in ${s.timezone}`;
}

function listingLine(s: Listing): string {
  const state = s.paused ? `paused${s.note ? ` (${s.note})` : ''}` : 'active';
  const next = s.nextRuns[0] ? `, next ${at(s.nextRuns[0])}` : '';
  const last = s.recentRuns.at(-1);
  return `${s.scheduleId}  ${specText(s)}  ${state}${next}${last ? `, last run ${last.conversationId}` : ''}`;
}

function printDetails(s: Details): void {
  const lines = [
    `${s.scheduleId}: ${specText(s)}`,
    `  message: ${s.text}`,
    `  state: ${s.paused ? 'paused' : 'active'}${s.note ? ` (${s.note})` : ''}; overlap ${s.overlap}`,
    ...(s.startAt || s.endAt
      ? [`  window: ${s.startAt ? at(s.startAt) : 'any time'} to ${s.endAt ? at(s.endAt) : 'no end'}`]
      : []),
    `  runs taken ${s.runsTaken}, skipped for overlap ${s.runsSkippedForOverlap}, missed ${s.runsMissed}`,
    `  next: ${s.nextRuns.map(at).join(', ') || 'none'}`,
    ...s.recentRuns.map((r) => `  run ${r.conversationId} at ${at(r.startedAt)}${r.running ? ' (running)' : ''}`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
