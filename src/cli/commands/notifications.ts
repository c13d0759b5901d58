/**
 * `notifications` and `notifications resend <eventId>`: the webhook
 * notifications' deliveries (pending, failing, delivered), and sending one
 * again with its id (docs/notifications.md). From PostgreSQL, or through the
 * HTTP API with AGENT_API_URL and an operator's AGENT_API_TOKEN.
 */
import { Option, type Command } from 'commander';
import type { NotificationDelivery, NotificationStatus } from '../../contract/notifications';
import { callApi, remoteApi } from '../api-decisions';
import { withClient } from '../connect';

/** Adds `notifications` (and its `resend`) to the program. */
export function addNotificationCommands(program: Command): void {
  const notifications = program
    .command('notifications')
    .description(
      "list webhook notifications' deliveries, one per event and endpoint (from PostgreSQL; through the HTTP API with AGENT_API_URL and an operator's token)",
    )
    .addOption(
      new Option('--status <status>', 'pending (not delivered yet), failing, or delivered (most recent first)')
        .choices(['pending', 'failing', 'delivered'])
        .default('pending'),
    )
    .option('--limit <n>', 'at most this many, 1 to 500', '100')
    .action(async (options: { status: NotificationStatus; limit: string }) => {
      const limit = Number(options.limit);
      if (!/^\d+$/.test(options.limit) || limit < 1 || limit > 500)
        throw new Error(`--limit must be a whole number from 1 to 500, not ${options.limit}.`);
      const remote = remoteApi(process.env);
      const listed: NotificationDelivery<Date | string>[] = remote
        ? (
            await callApi<{ notifications: NotificationDelivery<string>[] }>(
              remote,
              'GET',
              `/v1/notifications?status=${options.status}&limit=${limit}`,
              undefined,
              'Nothing was listed.',
            )
          ).notifications
        : await withClient((client) => client.notifications({ status: options.status, limit }));
      if (listed.length === 0) {
        process.stdout.write(`No notification is ${options.status}.\n`);
        return;
      }
      for (const d of listed) process.stdout.write(`${deliveryLine(d)}\n`);
    });

  notifications
    .command('resend <eventId>')
    .description('send a notification again, with the same event id, to every endpoint it was for (or one)')
    .option('--endpoint <name>', 'only to this endpoint')
    .action(async (eventId: string, options: { endpoint?: string }) => {
      const remote = remoteApi(process.env);
      const endpoints = remote
        ? (
            await callApi<{ endpoints: string[] }>(
              remote,
              'POST',
              `/v1/notifications/${encodeURIComponent(eventId)}/resend`,
              options.endpoint ? { endpoint: options.endpoint } : {},
              'Nothing was resent.',
            )
          ).endpoints
        : await withClient((client) => client.resendNotification(eventId, options.endpoint));
      if (endpoints.length === 0)
        throw new Error(
          `No notification ${eventId}${options.endpoint ? ` for endpoint ${options.endpoint}` : ''} is kept (unknown, or deleted once delivered and past its keep). List them with "notifications".`,
        );
      process.stdout.write(
        `Resent ${eventId} to ${endpoints.join(', ')}: a running worker posts it again, with the same id.\n`,
      );
    });
}

/** One delivery on one line: the event, where it stands, and why its last attempt failed. */
function deliveryLine(d: NotificationDelivery<Date | string>): string {
  const at = (t: Date | string | null): string => (t === null ? '-' : new Date(t).toISOString());
  const where = d.callKey ?? d.conversationId;
  const state =
    d.status === 'delivered'
      ? `delivered ${at(d.deliveredAt)} after ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}`
      : `${d.status}, ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}, next ${at(d.nextAttemptAt)}` +
        (d.failingSince ? `, failing since ${at(d.failingSince)}` : '') +
        (d.lastError ? `: ${d.lastError}` : '');
  return `${d.eventId}  ${d.type}  ${where}  to ${d.endpoint}  ${state}`;
}
