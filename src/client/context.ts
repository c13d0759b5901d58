/**
 * What the client's parts (conversations, approvals, transcripts) share: the
 * Temporal client and its task queue, the tables, the PostgreSQL pool, opened
 * by the first read of the database, and the search attribute names in use.
 * `pg` is loaded only by that first read, so a client that talks to Temporal
 * alone never loads it.
 */
import { isGrpcServiceError, type Client, type Connection } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import type { Pool } from 'pg';
import {
  CONVERSATION_SEARCH_ATTRIBUTE_FIELDS,
  CONVERSATION_SEARCH_ATTRIBUTES,
  describeBadSearchAttributePrefix,
  searchAttributeNames,
  type ConversationSearchAttributes,
  type SearchAttributeOptions,
} from '../contract';
import type { AgentTables } from '../db/schema';

/**
 * The conversations' workflow task timeout unless `workflowTaskTimeoutMs`
 * says otherwise: how long a task held by a dead worker blocks its conversation.
 */
export const WORKFLOW_TASK_TIMEOUT = '5 seconds';

/** The shortest and longest `workflowTaskTimeoutMs` (Temporal caps a task timeout at 120 s). */
export const WORKFLOW_TASK_TIMEOUT_LIMITS_MS = { min: 1_000, max: 120_000 } as const;

/** How long the client trusts the namespace's list of search attributes before it reads it again. */
export const SEARCH_ATTRIBUTE_LIST_TTL_MS = 60_000;

/** The settings of the client that its parts read (the options of `AgentClient.connect` they use). */
export interface ClientSettings {
  taskQueue?: string;
  databaseUrl?: string;
  queryTimeoutMs?: number;
  searchAttributes?: SearchAttributeOptions;
  workflowTaskTimeoutMs?: number;
}

/**
 * The workflow task timeout to start conversations with; a `TypeError` when `ms` is outside {@link
 * WORKFLOW_TASK_TIMEOUT_LIMITS_MS}.
 */
export function workflowTaskTimeoutOf(ms: number | undefined): string | number {
  if (ms === undefined) return WORKFLOW_TASK_TIMEOUT;
  const { min, max } = WORKFLOW_TASK_TIMEOUT_LIMITS_MS;
  if (!Number.isInteger(ms) || ms < min || ms > max) {
    throw new TypeError(
      `AgentClient: workflowTaskTimeoutMs must be a whole number of milliseconds from ${min} to ${max}, got ${String(ms)}.`,
    );
  }
  return ms;
}

/** The connection, settings and caches one `AgentClient` hands to each of its parts. */
export class ClientContext {
  readonly taskQueue: string;
  readonly queryTimeoutMs: number | undefined;
  /** Workflow task timeout of the conversations it starts: a duration string or milliseconds. */
  readonly workflowTaskTimeout: string | number;
  readonly databaseUrl: string | undefined;
  /** The attributes the workers may register, by field, under their names in the namespace. */
  readonly configuredNames: ConversationSearchAttributes;
  /** The pool on {@link databaseUrl}, made by the first read of the database. */
  private pool: Promise<Pool> | undefined;
  /** Set by {@link close}: no pool is made after it. */
  private closed = false;
  /** The attributes of {@link configuredNames} the namespace has, as last listed. */
  private listedNames: { names: ConversationSearchAttributes; at: number } | undefined;

  constructor(
    readonly temporal: Client,
    /** The connection the client opened, closed by {@link close}; unset for a `Client` of the caller's. */
    private readonly ownConnection: Connection | undefined,
    settings: ClientSettings,
    readonly tables: AgentTables,
  ) {
    this.workflowTaskTimeout = workflowTaskTimeoutOf(settings.workflowTaskTimeoutMs);
    const badPrefix = describeBadSearchAttributePrefix(settings.searchAttributes?.prefix ?? '');
    if (badPrefix) throw new TypeError(`AgentClient: searchAttributes.prefix: ${badPrefix}.`);
    this.configuredNames = searchAttributeNames(settings.searchAttributes?.prefix, settings.searchAttributes?.groups);
    this.queryTimeoutMs = settings.queryTimeoutMs;
    this.taskQueue = settings.taskQueue ?? 'agent';
    this.databaseUrl = settings.databaseUrl;
  }

  /**
   * The pool on `databaseUrl`, opened (and `pg` loaded) by the first call; an error when the client has no
   * `databaseUrl` or is closed.
   */
  async database(): Promise<Pool> {
    const databaseUrl = this.databaseUrl;
    if (!databaseUrl)
      throw new Error(
        'This client has no databaseUrl, so it cannot read transcripts. Pass databaseUrl to AgentClient.connect.',
      );
    if (this.closed) throw new Error('This client is closed: connect a new AgentClient to read the database.');
    this.pool ??= import('../db/pool.js').then(({ createPool }) => createPool(databaseUrl, 2));
    return this.pool;
  }

  /** The visibility clause of this client's task queue. */
  taskQueueClause(): string {
    return `TaskQueue = '${this.taskQueue.replace(/'/g, "''")}'`;
  }

  /**
   * The configured attributes the namespace has, with the right type: read
   * from the namespace at most once per {@link SEARCH_ATTRIBUTE_LIST_TTL_MS}.
   * Where the namespace's list may not be read (no permission, or a server
   * without the operator service), every configured attribute.
   */
  async searchAttributeNamesInUse(): Promise<ConversationSearchAttributes> {
    if (this.listedNames && Date.now() - this.listedNames.at < SEARCH_ATTRIBUTE_LIST_TTL_MS)
      return this.listedNames.names;
    let names: ConversationSearchAttributes;
    try {
      const listed = await this.temporal.connection.operatorService.listSearchAttributes({
        namespace: this.temporal.options.namespace,
      });
      const registered = listed.customAttributes ?? {};
      names = {};
      for (const field of CONVERSATION_SEARCH_ATTRIBUTE_FIELDS) {
        const name = this.configuredNames[field];
        if (
          name !== undefined &&
          registered[name] === encodeSearchAttributeIndexedValueType(CONVERSATION_SEARCH_ATTRIBUTES[field].type)
        )
          names[field] = name;
      }
    } catch (err) {
      // PERMISSION_DENIED, UNIMPLEMENTED: the workers' configuration is all there is to go by.
      if (!(isGrpcServiceError(err) && (err.code === 7 || err.code === 12))) throw err;
      names = { ...this.configuredNames };
    }
    this.listedNames = { names, at: Date.now() };
    return names;
  }

  /** Closes the pool and the connection this client opened. */
  async close(): Promise<void> {
    this.closed = true;
    await (await this.pool)?.end();
    await this.ownConnection?.close();
  }
}
