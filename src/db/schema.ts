/**
 * The PostgreSQL schema that holds the project's tables, and their names
 * qualified with it. Every query of the project names its tables through
 * {@link AgentTables} instead of relying on `search_path`: a team may hand the
 * worker a pool it shares with its own queries, whose `search_path` is theirs.
 */
import { ConfigError } from '../common/errors';

/** The schema the project's tables live in when none is configured. */
export const DEFAULT_DATABASE_SCHEMA = 'durable_agent';

/**
 * What a schema name must look like: a plain lowercase SQL identifier of at
 * most 63 characters (PostgreSQL's limit), so the name reads the same quoted
 * or not and needs no escaping.
 */
export const SCHEMA_NAME_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** The project's tables, in the order migrations create them. */
export const AGENT_TABLE_NAMES = [
  'schema_migrations',
  'conversation_messages',
  'tool_results',
  'model_responses',
  'tool_ledger',
  'approval_decisions',
  'mcp_toolsets',
  'workers',
  'worker_activities',
  'pending_approvals',
  'stream_deltas',
  'superseded_messages',
  'transcript_runs',
  'budget_spend',
  'message_files',
  'context_summaries',
  'notification_outbox',
  'notification_endpoints',
  'notification_deliveries',
  'approval_grants',
  'event_waits',
  'agent_events',
] as const;

/** The name of one of the project's tables, unqualified. */
export type AgentTableName = (typeof AGENT_TABLE_NAMES)[number];

/** The project's tables, each as a qualified, quoted SQL name such as `"durable_agent"."tool_ledger"`. */
export interface AgentTables {
  /** The schema's name, validated. */
  readonly schema: string;
  /** The schema as a quoted SQL identifier. */
  readonly quotedSchema: string;
  /** The migrations ledger. */
  readonly schemaMigrations: string;
  readonly conversationMessages: string;
  readonly toolResults: string;
  readonly modelResponses: string;
  readonly toolLedger: string;
  /** Standing grants given with approvals (`src/core/grants.ts`): who gave them, their limits, their revocation. */
  readonly approvalGrants: string;
  /** Calls of `waitForEvent()` tools now waiting, by event name and key (`src/db/event-migration.ts`). */
  readonly eventWaits: string;
  /** Events sent: where each was routed, or kept for a wait to come (`src/db/event-migration.ts`). */
  readonly agentEvents: string;
  readonly approvalDecisions: string;
  /** The MCP tool lists conversations were offered, by reference. */
  readonly mcpToolsets: string;
  /** Running workers, each holding an advisory lock while its process lives (lost-worker takeover). */
  readonly workers: string;
  /** The conversation activity attempts each running worker has started and not yet finished. */
  readonly workerActivities: string;
  /** Tool calls waiting for a person's decision, for approvers' lists (`approval-store.ts`). */
  readonly pendingApprovals: string;
  /**
   * The text of model calls still running, as streamed, so a client that reconnects replays it
   * (`src/activities/deltas.ts`).
   */
  readonly streamDeltas: string;
  /**
   * Messages taken out of a transcript: what a reset run abandoned, and the answers a regenerated turn replaced
   * (`src/db/transcript-store.ts`). Readable, never sent to the model.
   */
  readonly supersededMessages: string;
  /** The workflow runs that wrote each transcript, and which of them a later run displaced (a reset). */
  readonly transcriptRuns: string;
  /**
   * What each model call of a conversation with a budget spent, or may spend while it runs, by the top-level
   * conversation whose budget it draws on (`src/db/budget-ledger.ts`).
   */
  readonly budgetSpend: string;
  /** The bytes of files user messages carry, by their SHA-256; messages name them (`src/db/message-files.ts`). */
  readonly messageFiles: string;
  /** Summaries of earlier messages a model was sent in their place, by conversation and seq range (`src/db/context-summaries.ts`). */
  readonly contextSummaries: string;
  /**
   * Notifications of changes around waiting calls, each written in the transaction of the change it announces
   * (`src/db/outbox.ts`).
   */
  readonly notificationOutbox: string;
  /** The webhook endpoints running workers deliver notifications to, by name, and when a worker last served each. */
  readonly notificationEndpoints: string;
  /** Each notification's delivery to each endpoint: attempts, when the next is due, when it was delivered. */
  readonly notificationDeliveries: string;
}

/**
 * Why `name` cannot be the project's schema, or undefined when it can. Shared
 * by {@link agentTables} and the configuration loader, so both say the same.
 */
export function describeBadSchemaName(name: string): string | undefined {
  const way = 'Use a plain lowercase SQL identifier such as durable_agent or agent_x';
  if (!SCHEMA_NAME_PATTERN.test(name)) {
    return `"${name}" is not a plain lowercase SQL identifier (${SCHEMA_NAME_PATTERN.source}: a lowercase letter or _, then up to 62 lowercase letters, digits or _). ${way}.`;
  }
  if (name.startsWith('pg_'))
    return `"${name}" starts with pg_, which PostgreSQL reserves for its own schemas. ${way}.`;
  if (name === 'information_schema') return `"${name}" is PostgreSQL's own catalog schema. ${way}.`;
  if (name === 'public') {
    // public is where other tools and the demo keep their tables (and, before the project had a
    // schema, where its own tables were: migrate moves them out of it).
    return `"public" is shared with every other user of the database; the project keeps its tables in a schema of their own. ${way}.`;
  }
  return undefined;
}

/**
 * The project's tables in `schema` (default {@link DEFAULT_DATABASE_SCHEMA}).
 * Throws a {@link ConfigError} naming the value, the rule and the way out when
 * the name is not allowed.
 */
export function agentTables(schema: string = DEFAULT_DATABASE_SCHEMA): AgentTables {
  const problem = describeBadSchemaName(schema);
  if (problem) throw new ConfigError(`The database schema for the agent's tables cannot be used: ${problem}`);
  const quotedSchema = `"${schema}"`;
  const table = (name: AgentTableName): string => `${quotedSchema}."${name}"`;
  return {
    schema,
    quotedSchema,
    schemaMigrations: table('schema_migrations'),
    conversationMessages: table('conversation_messages'),
    toolResults: table('tool_results'),
    modelResponses: table('model_responses'),
    toolLedger: table('tool_ledger'),
    approvalDecisions: table('approval_decisions'),
    mcpToolsets: table('mcp_toolsets'),
    workers: table('workers'),
    workerActivities: table('worker_activities'),
    pendingApprovals: table('pending_approvals'),
    streamDeltas: table('stream_deltas'),
    supersededMessages: table('superseded_messages'),
    transcriptRuns: table('transcript_runs'),
    budgetSpend: table('budget_spend'),
    messageFiles: table('message_files'),
    contextSummaries: table('context_summaries'),
    notificationOutbox: table('notification_outbox'),
    notificationEndpoints: table('notification_endpoints'),
    notificationDeliveries: table('notification_deliveries'),
    approvalGrants: table('approval_grants'),
    eventWaits: table('event_waits'),
    agentEvents: table('agent_events'),
  };
}
