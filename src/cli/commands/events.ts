/**
 * `events send <name> <key> [payloadJson]`: sends an event to the calls
 * waiting for it, or keeps it for the first wait to come
 * (docs/waiting-for-events.md, "Sending events"). Through the HTTP API with
 * AGENT_API_URL and a token of the `events` role (recorded under the token's
 * subject), else with the client directly (Temporal and PostgreSQL).
 */
import type { Command } from 'commander';
import type { EventTarget, SentEvent } from '../../client/client';
import { EVENT_LIMITS } from '../../contract/events';
import { callApi, remoteApi } from '../api-decisions';
import { withClient } from '../connect';

/** Adds `events` (and its `send`) to the program. */
export function addEventCommands(program: Command): void {
  const events = program.command('events').description('events that waiting tool calls take as their result');

  events
    .command('send')
    .description(
      'send an event: every call waiting for its name and key gets the payload as its result; when none waits, it is kept for the first wait that matches (through the HTTP API with AGENT_API_URL and a token of the events role)',
    )
    .argument('<name>', 'what happened, e.g. payment.settled')
    .argument('<key>', "what it is about, e.g. the order's id")
    .argument('[payloadJson]', 'the payload, as JSON (e.g. \'{"amount": 1500}\'); none when absent')
    .option('--id <eventId>', "the event's id: sending it again is a retry, delivered once (default: a fresh UUID)")
    .option(
      '--keep <ms>',
      `when no call waits: how long it is kept for the first wait, 0 (not kept) to ${EVENT_LIMITS.maxKeepMs} ms (default 24 hours)`,
    )
    .action(
      async (name: string, key: string, payloadJson: string | undefined, options: { id?: string; keep?: string }) => {
        const payload = payloadJson === undefined ? undefined : parsePayload(payloadJson);
        const keepMs = options.keep === undefined ? undefined : parseKeep(options.keep);
        const event = {
          name,
          key,
          ...(payload === undefined ? {} : { payload }),
          ...(options.id ? { eventId: options.id } : {}),
        };
        const remote = remoteApi(process.env);
        const sent = remote
          ? await callApi<SentEvent>(
              remote,
              'POST',
              '/v1/events',
              { ...event, ...(keepMs === undefined ? {} : { keepMs }) },
              'Nothing was sent.',
            )
          : await withClient((client) => client.sendEvent(event, { keepMs }));
        process.stdout.write(`${sentLines(name, key, sent).join('\n')}\n`);
      },
    );
}

function parsePayload(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(
      `The payload must be JSON, e.g. '{"amount": 1500}' or '"settled"' (a string in quotes): ${(err as Error).message}. Nothing was sent.`,
      { cause: err },
    );
  }
}

function parseKeep(text: string): number {
  if (!/^\d+$/.test(text) || Number(text) > EVENT_LIMITS.maxKeepMs)
    throw new Error(
      `--keep must be a whole number of milliseconds from 0 (not kept) to ${EVENT_LIMITS.maxKeepMs} (30 days), not ${text}. Nothing was sent.`,
    );
  return Number(text);
}

/** Where the event went, for people. */
function sentLines(name: string, key: string, sent: SentEvent): string[] {
  const what = `Event ${sent.eventId} (${name} ${key})`;
  const call = (t: EventTarget) => `${t.callKey} in conversation ${t.conversationId}`;
  const notRunning = (sent.notRunning ?? []).map(
    (t) => `  not delivered to ${call(t)}: that conversation no longer runs`,
  );
  if (sent.deliveredTo.length > 0)
    return [`${what} delivered to ${sent.deliveredTo.map(call).join(', ')}.`, ...notRunning];
  if (sent.kept)
    return [
      `${what} is kept until ${sent.keptUntil}: no call waits for it yet; the first one to wait for it takes it.`,
    ];
  return [`${what} reached no call: none waits for it, and it is not kept (--keep 0).`];
}
