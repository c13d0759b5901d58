/**
 * The plugin's options, each declared once with its default: the plugin
 * takes them, the standalone worker (`createAgentWorker`) passes them
 * through, and the activities pick the ones they read
 * (`src/activities/deps.ts`).
 */
import type { PayloadCodec } from '@temporalio/common';
import type { Pool } from 'pg';
import type { McpServers } from '../mcp/protocol';
import type { LostWorkerOptions } from './lost-workers';
import type { SearchAttributeOptions } from '../contract';
import type { ActivityOptions } from '../activities/options';
import type { NotificationOptions } from '../notifications/options';

export type { DurableAgentModelOptions } from '../activities/options';

/** Options of `DurableAgentPlugin`; every option is in docs/configuration.md. */
export interface DurableAgentPluginOptions extends ActivityOptions {
  /**
   * PostgreSQL with the transcripts: a pool of yours (left open when the
   * worker stops), or a URL the plugin opens a pool on (closed when the worker stops).
   */
  database: { pool: Pool } | { url: string };
  /** Apply the project's migrations before the worker polls. Default true. */
  migrate?: boolean;
  /**
   * How long a starting worker waits for PostgreSQL to be reachable before
   * it migrates (a database restarting delays the start rather than failing
   * it), in ms. Default 60 000.
   */
  databaseWaitMs?: number;
  /** Register the conversation's search attributes where missing before the worker polls. Default true. */
  registerSearchAttributes?: boolean;
  /**
   * Which search attribute groups to register and under which names: by
   * default each group that fits in the namespace (status, approvals,
   * unknownEffects, usage, in that order), the others left off and logged;
   * `groups` asks for exactly those (one that does not fit fails the start),
   * `prefix` puts a prefix before every name (clients need the same prefix).
   * See docs/search-attributes.md.
   */
  searchAttributes?: SearchAttributeOptions;
  /**
   * Payload codecs (encryption, compression) applied after the team's own
   * ones: `dataConverter.payloadCodecs` of the worker and the client become
   * the team's codecs followed by these, and the rest of the team's data
   * converter is kept. Default none.
   */
  payloadCodecs?: PayloadCodec[];
  /**
   * MCP servers whose tools conversations may use (`ConversationInput.mcpServers`),
   * by name: `{ crm: { command: 'node', args: ['crm-mcp.js'] }, tickets: { url: 'https://…/mcp', headers: {…} } }`,
   * and how long a server's tool list is kept (`listTtlMs`, default 60 s).
   * Every worker of the task queue must have the same servers. Default none.
   * See docs/tools-and-mcp.md.
   */
  mcp?: { servers: McpServers; listTtlMs?: number };
  /**
   * Lost-worker takeover: peers notice a worker killed outright within about
   * a second (its PostgreSQL session ends) and have its model calls and tools
   * retried at once instead of at their heartbeat timeouts. On by default;
   * `{ enabled: false }` leaves a killed worker's attempts to the timeouts.
   * See docs/operating.md, "When a worker dies".
   */
  lostWorkers?: LostWorkerOptions;
  /**
   * Webhooks about calls that wait for a person: `{ endpoints: [{ name, url, keyId, secret, events? }] }`. Each
   * event (a call waits, is decided, times out, is cancelled, escalates) is written to an outbox in PostgreSQL in the
   * transaction of the change it announces, and the worker posts it to each endpoint, signed, at least once, in order
   * per call, retrying with backoff. Retries and timeouts: `timeoutMs`, `maxBackoffMs`, `failingAfterAttempts`,
   * `concurrency`, `pollEveryMs`, `keepDeliveredDays`. See docs/notifications.md. Default none.
   */
  notifications?: NotificationOptions;
}
