/**
 * The typed client: send messages (signal-with-start), read state, wait for
 * turns, read transcripts. Runs anywhere; talks to Temporal and, for message
 * bodies, to PostgreSQL.
 */
import { randomUUID } from 'node:crypto';
import {
  Client,
  Connection,
  isGrpcServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowUpdateFailedError,
  type ClientPlugin,
  type ConnectionOptions,
} from '@temporalio/client';
import { WorkflowIdReusePolicy, type DataConverter } from '@temporalio/common';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import type { Pool } from 'pg';
import { z } from 'zod';
import {
  ConversationClosedError,
  DecisionRefusedError,
  InvalidConversationInputError,
  MessageTooLargeError,
  OutputMismatchError,
  UnstorableTextError,
} from '../common/errors';
import { resolveOutput, resolveOutputSpec } from '../common/typed-output';
import { describeUnstorableText, parseJsonOrText } from '../contract/text';
import { readModelResponses, readTranscript, readTranscriptPage, type StoredMessage } from '../db/transcript-store';
import { readWaitingCalls } from '../db/approval-store';
import type { SearchAttributeOptions } from '../contract';
import { createPool } from '../db/pool';
import { agentTables, type AgentTables } from '../db/schema';
import { readKeptDeltas, type StreamEvent } from '../db/stream-channel';
import { APPROVAL_AGE_THRESHOLDS } from '../contract/metrics';
import { subscribeToStream, type Unsubscribe } from './stream';
import {
  cancelTurnSignal,
  CONVERSATION_SEARCH_ATTRIBUTE_FIELDS,
  CONVERSATION_SEARCH_ATTRIBUTES,
  conversationSearchAttributeKeys,
  CONVERSATION_WORKFLOW_TYPE,
  decisionSignal,
  decisionUpdate,
  describeBadDecision,
  describeOversizedDecision,
  describeUnstorableCancel,
  describeUnstorableDecision,
  describeUnstorableUserMessage,
  describeOversizedUserMessage,
  describeInvalidInput,
  endConversationSignal,
  searchAttributeNames,
  stateQuery,
  userMessageSignal,
  USER_MESSAGE_MAX_BYTES,
  utf8Bytes,
  type ApprovalDecision,
  type AssistantMessage,
  type ConversationInput,
  type ConversationSearchAttributes,
  type ConversationState,
  type DecisionResult,
  type PendingApproval,
  type PendingBelow,
  type DecisionKind,
  type TurnRecord,
  type UnknownEffect,
  describeBadSearchAttributePrefix,
} from '../contract';
import { STALE_QUERY_TASK_MESSAGE } from '../contract';

/**
 * The conversations' workflow task timeout unless {@link AgentClientOptions.workflowTaskTimeoutMs}
 * says otherwise: how long a task held by a dead worker blocks its conversation.
 */
export const WORKFLOW_TASK_TIMEOUT = '5 seconds';

/** The shortest and longest {@link AgentClientOptions.workflowTaskTimeoutMs} (Temporal caps a task timeout at 120 s). */
export const WORKFLOW_TASK_TIMEOUT_LIMITS_MS = { min: 1_000, max: 120_000 } as const;

/** How often {@link AgentClient.state} asks again when a worker declined a query it could not answer safely. */
const STALE_QUERY_RETRIES = 20;

/** Where the client connects. */
export interface AgentClientOptions {
  /** Temporal frontend, host:port. */
  temporalAddress: string;
  namespace?: string;
  /** Task queue the worker polls. Default `agent`. */
  taskQueue?: string;
  /** PostgreSQL with the transcripts; needed for {@link AgentClient.transcript} and answers. */
  databaseUrl?: string;
  /** PostgreSQL schema the worker keeps its tables in (its `schema` option). Default `durable_agent`. */
  schema?: string;
  /** TLS (`true`, or certificates), a Temporal Cloud API key and gRPC metadata, as the SDK's `Connection` takes them. */
  tls?: ConnectionOptions['tls'];
  apiKey?: string;
  metadata?: Record<string, string>;
  /**
   * How long a state query may wait for a worker to answer before it fails
   * with a {@link NoWorkerAnsweredError}. Unset: as long as Temporal lets it
   * (a query waits for a worker to take it).
   */
  queryTimeoutMs?: number;
  /** How long {@link AgentClient.connect} tries to reach Temporal before it fails; unset: the SDK's 10 s. */
  connectTimeoutMs?: number;
  /**
   * The workflow task timeout of the conversations this client starts (kept
   * through continue-as-new), 1,000 to 120,000 ms; default 5,000. A task
   * held by a worker that died blocks its conversation this long. With local
   * activities it also bounds how late a signal (a cancel, a new message)
   * reaches a turn whose local model call runs: the task is renewed at 80%
   * of it (docs/how-it-works.md, "Local activities").
   */
  workflowTaskTimeoutMs?: number;
  /** Payload codecs and failure converter, the same as the workers' (encrypted payloads: `encryptingDataConverter`). */
  dataConverter?: DataConverter;
  /** Plugins of the Temporal `Client`, e.g. Temporal's `OpenTelemetryPlugin`, whose span of each start roots the conversation's trace. */
  plugins?: ClientPlugin[];
  /**
   * The search attribute groups and prefix the workers were given (their
   * `searchAttributes`; `AGENT_SEARCH_ATTRIBUTES` and
   * `AGENT_SEARCH_ATTRIBUTE_PREFIX` for `npm start`). Conversations this
   * client starts set the attributes of these groups that the namespace has
   * (listed at most once a minute); where the namespace's list may not be
   * read, all of them. Default: every group, no prefix.
   */
  searchAttributes?: SearchAttributeOptions;
}

/** How long the client trusts the namespace's list of search attributes before it reads it again. */
export const SEARCH_ATTRIBUTE_LIST_TTL_MS = 60_000;

/** Conversation ids one visibility query checks at most (`WorkflowId IN (...)`). */
const IDS_PER_VISIBILITY_QUERY = 100;

/** No worker answered a query in time: none runs on the task queue, or none reaches the server. */
export class NoWorkerAnsweredError extends Error {
  constructor(conversationId: string, taskQueue: string, timeoutMs: number) {
    super(
      `No worker answered conversation ${conversationId} within ${Math.round(timeoutMs / 1000)} s. Is a worker running on task queue "${taskQueue}" (npm start)? Nothing was changed.`,
    );
    this.name = 'NoWorkerAnsweredError';
  }
}

/** Options of {@link AgentClient.sendMessage}. */
export interface SendMessageOptions {
  /** Used only if this message starts the conversation. */
  input?: ConversationInput;
  /** Id for deduplication and for {@link AgentClient.waitForTurn}; a random UUID when unset. */
  messageId?: string;
  /** Who sends it, as your authentication knows them; shown as `requestedBy` of the approvals its turn asks for. */
  sentBy?: string;
}

/** One tool call waiting for a person, as approvers' lists show it (from PostgreSQL, no query per conversation). */
export interface PendingApprovalView {
  conversationId: string;
  toolCallId: string;
  /** The call instance's effect key: name it in a decision, so a later call under the same id is never decided by accident. */
  callKey: string;
  toolName: string;
  /** The arguments, parsed (or the raw text when they are not JSON). */
  arguments: unknown;
  /** When the model asked for it. */
  requestedAt: Date;
  ageMs: number;
  /** Who sent the messages of the turn that asked (their `sentBy`): for a call inside an agent called as a tool, the top-level turn's. */
  requestedBy: string[];
  /** The top-level conversation the call serves: `conversationId` itself, unless it waits inside an agent called as a tool (decide it in `conversationId`). */
  rootConversationId: string;
  /** The agents from the top-level conversation's down to the one asking, e.g. `["triage", "refunds", "auditor"]`; empty for one unnamed agent. */
  agentPath: string[];
  /** What may be decided on it (its tool's `decisions`); absent: approve or reject. */
  decisions?: DecisionKind[];
}

/** Narrows {@link AgentClient.pendingApprovals}. */
export interface PendingApprovalFilter {
  /** Only calls of this conversation, and of the agents it called as tools when it is a top-level conversation. */
  conversationId?: string;
  /** Only calls of this tool. */
  tool?: string;
  /** Only calls of turns this subject started. */
  requester?: string;
  /** Only calls waiting at least this long. */
  minAgeMs?: number;
}

/** A turn's record and, when it answered, the text of its answer and its typed output. */
export interface TurnAnswer<T = unknown> {
  turn: TurnRecord;
  answer?: string;
  /**
   * The typed output, when the conversation asks for one
   * (`ConversationInput.output` or the agent's `outputType`) and the turn
   * answered: parsed with the schema given to {@link AgentClient.ask}, when given.
   */
  output?: T;
}

/** Options of {@link AgentClient.ask}. */
export interface AskOptions<T> extends SendMessageOptions {
  /** How long to wait for the turn, ms. Default 120,000. */
  timeoutMs?: number;
  /**
   * The answer's type, as a zod schema: it becomes the conversation's
   * `input.output` when this message starts it (and `input.output` is
   * unset), and the turn's output is parsed with it into `output`.
   */
  output?: z.ZodType<T>;
}

/** A decision as a caller gives it; the id is generated when unset. */
export type DecisionInput = Omit<ApprovalDecision, 'decisionId'> & { decisionId?: string };

/** A conversation waiting for a person, with what it waits on. */
export interface ConversationAwaitingApproval {
  conversationId: string;
  pendingApprovals: PendingApproval[];
  /** Calls waiting inside agents it called as tools, each decided in its own conversation. */
  waitingBelow: PendingBelow[];
}

/** A conversation waiting for a person, as the list of waiting calls and Temporal's visibility show it. */
export interface ConversationAwaitingApprovalSummary {
  conversationId: string;
  /** Calls waiting for a decision. */
  pendingApprovals: number;
  /** When the conversation's current run started (a conversation continues as new between turns). */
  runStartedAt: Date;
}

/** A conversation with tool calls whose effect is unknown, for someone to check. */
export interface ConversationWithUnknownEffects {
  conversationId: string;
  /** Calls settled as `effect_unknown` in the whole conversation. */
  count: number;
  /** The most recent of them. */
  unknownEffects: UnknownEffect[];
}

/** The workflow task timeout to start conversations with; a `TypeError` when `ms` is outside {@link WORKFLOW_TASK_TIMEOUT_LIMITS_MS}. */
function workflowTaskTimeoutOf(ms: number | undefined): string | number {
  if (ms === undefined) return WORKFLOW_TASK_TIMEOUT;
  const { min, max } = WORKFLOW_TASK_TIMEOUT_LIMITS_MS;
  if (!Number.isInteger(ms) || ms < min || ms > max) {
    throw new TypeError(`AgentClient: workflowTaskTimeoutMs must be a whole number of milliseconds from ${min} to ${max}, got ${String(ms)}.`);
  }
  return ms;
}

/** The client of the durable agent worker. */
export class AgentClient {
  private readonly taskQueue: string;
  private readonly queryTimeoutMs: number | undefined;
  /** Workflow task timeout of the conversations it starts: a duration string or milliseconds. */
  private readonly workflowTaskTimeout: string | number;
  private readonly pool: Pool | undefined;
  private readonly databaseUrl: string | undefined;
  /** The attributes the workers may register, by field, under their names in the namespace. */
  private readonly configuredNames: ConversationSearchAttributes;
  /** The attributes of {@link configuredNames} the namespace has, as last listed. */
  private listedNames: { names: ConversationSearchAttributes; at: number } | undefined;

  private constructor(
    readonly temporal: Client,
    /** The connection this client opened, closed by {@link AgentClient.close}; unset for a `Client` of the caller's. */
    private readonly ownConnection: Connection | undefined,
    options: Pick<AgentClientOptions, 'taskQueue' | 'databaseUrl' | 'queryTimeoutMs' | 'searchAttributes' | 'workflowTaskTimeoutMs'>,
    private readonly tables: AgentTables,
  ) {
    this.workflowTaskTimeout = workflowTaskTimeoutOf(options.workflowTaskTimeoutMs);
    const badPrefix = describeBadSearchAttributePrefix(options.searchAttributes?.prefix ?? '');
    if (badPrefix) throw new TypeError(`AgentClient: searchAttributes.prefix: ${badPrefix}.`);
    this.configuredNames = searchAttributeNames(options.searchAttributes?.prefix, options.searchAttributes?.groups);
    this.queryTimeoutMs = options.queryTimeoutMs;
    this.taskQueue = options.taskQueue ?? 'agent';
    this.databaseUrl = options.databaseUrl;
    this.pool = options.databaseUrl ? createPool(options.databaseUrl, 2) : undefined;
  }

  /**
   * Connects to Temporal (and PostgreSQL when `databaseUrl` is given). Throws a
   * `ConfigError` when `schema` is not a usable name.
   */
  static async connect(options: AgentClientOptions): Promise<AgentClient> {
    const tables = agentTables(options.schema);
    workflowTaskTimeoutOf(options.workflowTaskTimeoutMs); // before a connection is opened
    const { temporalAddress: address, tls, apiKey, metadata, connectTimeoutMs } = options;
    const connection = await Connection.connect({ address, tls, apiKey, metadata, ...(connectTimeoutMs ? { connectTimeout: connectTimeoutMs } : {}) });
    const temporal = new Client({
      connection,
      namespace: options.namespace ?? 'default',
      ...(options.dataConverter ? { dataConverter: options.dataConverter } : {}),
      ...(options.plugins ? { plugins: options.plugins } : {}),
    });
    return new AgentClient(temporal, connection, options, tables);
  }

  /**
   * Works through a Temporal `Client` of yours, with its connection,
   * namespace, data converter and plugins (e.g. `DurableAgentPlugin` with
   * payload codecs). {@link AgentClient.close} leaves that client open.
   * Throws a `ConfigError` when `schema` is not a usable name.
   */
  static fromClient(
    temporal: Client,
    options: Pick<AgentClientOptions, 'taskQueue' | 'databaseUrl' | 'schema' | 'queryTimeoutMs' | 'searchAttributes' | 'workflowTaskTimeoutMs'> = {},
  ): AgentClient {
    return new AgentClient(temporal, undefined, options, agentTables(options.schema));
  }

  /** Sends a user message, starting the conversation if it is not running. Returns the message id. */
  async sendMessage(conversationId: string, text: string, options: SendMessageOptions = {}): Promise<string> {
    if (typeof text !== 'string' || text.trim() === '') {
      throw new TypeError('A message needs some text: got an empty message.');
    }
    const oversized = describeOversizedUserMessage(text);
    if (oversized) {
      throw new MessageTooLargeError(
        `${oversized.charAt(0).toUpperCase()}${oversized.slice(1)} (USER_MESSAGE_MAX_BYTES). ` +
          'Nothing was sent. Put a large document where a tool can read it (a file, a table) and send a short message about it, or split it.',
        utf8Bytes(text),
        USER_MESSAGE_MAX_BYTES,
      );
    }
    const messageId = options.messageId ?? randomUUID();
    const unstorable =
      describeUnstorableText('The conversation id', conversationId) ?? describeUnstorableUserMessage({ text, messageId, sentBy: options.sentBy });
    if (unstorable) throw new UnstorableTextError(`${unstorable}. Nothing was sent.`);
    const problems = describeInvalidInput(options.input);
    // Only the workflow starts a conversation for an agent called as a tool: a caller typed by hand would place its calls under another conversation.
    if (options.input?.calledBy !== undefined) problems.push('calledBy is set by the workflow for an agent called as a tool, never by a sender');
    if (problems.length === 0 && options.input?.output) problems.push(...uncompilableOutput(options.input.output));
    if (problems.length > 0) throw new InvalidConversationInputError(`Invalid conversation input: ${problems.join('; ')}.`);
    const input = await this.withSearchAttributeNames(options.input ?? {});
    try {
      await this.temporal.workflow.signalWithStart(CONVERSATION_WORKFLOW_TYPE, {
        workflowId: conversationId,
        taskQueue: this.taskQueue,
        args: [input],
        signal: userMessageSignal,
        signalArgs: [{ text, messageId, ...(options.sentBy === undefined ? {} : { sentBy: options.sentBy }) }],
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        // A workflow task held by a worker that died is handed to another one after this long
        // (Temporal's default is 10 s). Conversation tasks take milliseconds; continue-as-new keeps it.
        workflowTaskTimeout: this.workflowTaskTimeout,
      });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) throw new ConversationClosedError(conversationId);
      throw err;
    }
    return messageId;
  }

  /**
   * The conversation's state (from the workflow). `timeoutMs` overrides the
   * client's `queryTimeoutMs` for this call.
   */
  async state(conversationId: string, options: { timeoutMs?: number } = {}): Promise<ConversationState> {
    const handle = this.temporal.workflow.getHandle(conversationId);
    const timeoutMs = options.timeoutMs ?? this.queryTimeoutMs;
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      try {
        if (timeoutMs === undefined) return await handle.query(stateQuery);
        return await this.temporal.connection.withDeadline(started + timeoutMs, () => handle.query(stateQuery));
      } catch (err) {
        if (timeoutMs !== undefined && Date.now() - started >= timeoutMs - 50) throw new NoWorkerAnsweredError(conversationId, this.taskQueue, timeoutMs);
        // A worker that took over a conversation declines a query whose history has unhandled
        // events (see src/workflows/interceptors.ts); the next workflow task answers it.
        const declined = err instanceof Error && err.message.includes(STALE_QUERY_TASK_MESSAGE);
        if (!declined || attempt >= STALE_QUERY_RETRIES) throw err;
        await new Promise((resolve) => setTimeout(resolve, Math.min(100 * attempt, 1_000)));
      }
    }
  }

  /**
   * Waits until the turn that took `messageId` has finished. A state query
   * that fails for want of a worker to answer it ({@link isWorkerOutage}: the
   * worker that cached the conversation was killed and its sticky queue is
   * failing over, the only worker restarts, the server restarts) is asked
   * again until `timeoutMs`.
   */
  async waitForTurn(conversationId: string, messageId: string, timeoutMs = 120_000): Promise<TurnRecord> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let state: ConversationState;
      try {
        state = await this.state(conversationId);
      } catch (err) {
        if (!isWorkerOutage(err) || Date.now() > deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, 200));
        continue;
      }
      const turn = state.recentTurns.find((t) => t.messageIds.includes(messageId));
      if (turn) return turn;
      if (Date.now() > deadline) {
        throw new Error(
          `Conversation ${conversationId}: the turn for message ${messageId} did not finish within ${timeoutMs} ms (status ${state.status}). Is a worker running on task queue "${this.taskQueue}"?`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /**
   * Sends a message, waits for its turn, and returns the answer's text and,
   * when the conversation asks for a typed output, its value (typed by
   * `options.output`). Throws {@link OutputMismatchError} when the value does
   * not parse with `options.output`.
   */
  async ask<T = unknown>(conversationId: string, text: string, options: AskOptions<T> = {}): Promise<TurnAnswer<T>> {
    const { output: type, timeoutMs, ...send } = options;
    const input = type && !send.input?.output ? { ...send.input, output: { schema: resolveOutput(type, { what: 'ask' }).schema } } : send.input;
    const messageId = await this.sendMessage(conversationId, text, { ...send, ...(input ? { input } : {}) });
    const turn = await this.waitForTurn(conversationId, messageId, timeoutMs);
    if (turn.answerSeq === undefined) return { turn };
    const messages = await this.transcript(conversationId, turn.answerSeq);
    const stored = messages.find((m) => m.seq === turn.answerSeq)?.message;
    const answer = stored?.role === 'assistant' ? (stored.content ?? '') : undefined;
    const typed =
      turn.outcome !== 'answered'
        ? undefined
        : turn.outputInAnswer
          ? { value: JSON.parse(answer ?? 'null') as unknown }
          : 'output' in turn
            ? { value: turn.output }
            : undefined;
    if (!typed) return { turn, answer };
    if (!type) return { turn, answer, output: typed.value as T };
    const parsed = type.safeParse(typed.value);
    if (!parsed.success) {
      throw new OutputMismatchError(
        `Conversation ${conversationId}: the turn's output does not match the schema given to ask() (the conversation asks for another): ${z.prettifyError(parsed.error)}`,
        turn,
        answer,
      );
    }
    return { turn, answer, output: parsed.data };
  }

  /** The stored transcript (message bodies), through `throughSeq` when given. */
  async transcript(conversationId: string, throughSeq?: number): Promise<StoredMessage[]> {
    return readTranscript(this.database(), this.tables, conversationId, throughSeq);
  }

  /**
   * The stored model responses under `keys` (`MessageMeta.responseKey`): an
   * assistant message's full body, readable as soon as the model answered,
   * before its transcript row is written. Missing keys are left out.
   */
  async modelResponses(keys: readonly string[]): Promise<Map<string, AssistantMessage>> {
    return readModelResponses(this.database(), this.tables, keys);
  }

  /**
   * The text the conversation's running model calls streamed so far, as the
   * stream events that carried it (kept until each call ends): replay these,
   * then follow {@link AgentClient.subscribe}, to lose nothing after a reconnect.
   */
  async streamedSoFar(conversationId: string): Promise<StreamEvent[]> {
    return readKeptDeltas(this.database(), this.tables, conversationId);
  }

  /** At most `limit` stored messages, those after seq `after` (-1: from the start), in order. */
  async transcriptPage(conversationId: string, after: number, limit: number): Promise<StoredMessage[]> {
    return readTranscriptPage(this.database(), this.tables, conversationId, after, limit);
  }

  private database(): Pool {
    if (!this.pool) throw new Error('This client has no databaseUrl, so it cannot read transcripts. Pass databaseUrl to AgentClient.connect.');
    return this.pool;
  }

  /**
   * Applies a decision and answers synchronously (an update): a decision for
   * an unknown, settled or not-awaiting call is refused with an error saying
   * which ({@link DecisionRefusedError}), and changes nothing. Sending the same
   * decision id again returns `applied: false`.
   */
  async decide(conversationId: string, decision: DecisionInput): Promise<DecisionResult> {
    const full = this.completeDecision(decision);
    try {
      return await this.temporal.workflow.getHandle(conversationId).executeUpdate(decisionUpdate, { args: [full] });
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError && err.cause) throw new DecisionRefusedError(err.cause.message);
      throw err;
    }
  }

  /**
   * Sends a decision as a signal (fire and forget). A refused one is listed in the
   * state's `refusedDecisions` (and named in `lastError`). Returns its id.
   */
  async signalDecision(conversationId: string, decision: DecisionInput): Promise<string> {
    const full = this.completeDecision(decision);
    await this.temporal.workflow.getHandle(conversationId).signal(decisionSignal, full);
    return full.decisionId;
  }

  private completeDecision(decision: DecisionInput): ApprovalDecision {
    const full: ApprovalDecision = {
      ...decision,
      decisionId: decision.decisionId ?? randomUUID(),
      sentAt: decision.sentAt ?? new Date().toISOString(),
    };
    const problem = describeBadDecision(full) ?? describeOversizedDecision(full);
    if (problem) throw new TypeError(`Invalid decision: ${problem}.`);
    const unstorable = describeUnstorableDecision(full);
    if (unstorable) throw new UnstorableTextError(`Invalid decision: ${unstorable}. Nothing was sent.`);
    return full;
  }

  /** Cancels the current turn ("Esc"): finished results are kept, running calls interrupted, the rest cancelled. */
  async cancelTurn(conversationId: string, reason?: string): Promise<void> {
    const unstorable = describeUnstorableCancel({ reason });
    if (unstorable) throw new UnstorableTextError(`Invalid cancel: ${unstorable}. Nothing was sent.`);
    await this.temporal.workflow.getHandle(conversationId).signal(cancelTurnSignal, reason ? { reason } : {});
  }

  /**
   * The conversations waiting for a person: the list of waiting calls in
   * PostgreSQL (no search attribute needed) and one visibility list of the
   * running ones among them, no query per conversation. Oldest run first.
   * Needs `databaseUrl`.
   */
  async listAwaitingApproval(): Promise<ConversationAwaitingApprovalSummary[]> {
    const calls = await readWaitingCalls(this.database(), this.tables);
    const running = await this.runningConversations([...new Set(calls.flatMap((c) => [c.conversationId, c.rootConversationId]))]);
    // A call inside an agent called as a tool counts for the top-level conversation it serves.
    const counts = new Map<string, number>();
    for (const call of calls)
      if (running.has(call.conversationId) && running.has(call.rootConversationId))
        counts.set(call.rootConversationId, (counts.get(call.rootConversationId) ?? 0) + 1);
    return [...counts]
      .map(([conversationId, pendingApprovals]) => ({ conversationId, pendingApprovals, runStartedAt: running.get(conversationId)! }))
      .sort((a, b) => a.runStartedAt.getTime() - b.runStartedAt.getTime());
  }

  /**
   * How many conversations of this client's task queue wait for a person:
   * `any`, and for each threshold those whose oldest waiting call is older.
   * Where the namespace has the `approvals` group, counted by Temporal's
   * visibility (one count per figure, the same cost for ten conversations as
   * for ten thousand); else from the waiting calls in PostgreSQL, with one
   * visibility list per hundred waiting conversations.
   */
  async approvalBacklog(thresholds: readonly { waited: string; ms: number }[] = APPROVAL_AGE_THRESHOLDS): Promise<{ waited: string; conversations: number }[]> {
    const names = await this.searchAttributeNamesInUse();
    const now = Date.now();
    if (names.pendingApprovals && names.awaitingApprovalSince) {
      // A conversation counts the calls waiting inside the agents it called as tools: those child workflows are left out.
      const waiting = `${names.pendingApprovals} > 0 AND ExecutionStatus = 'Running' AND ParentWorkflowId IS NULL AND ${this.taskQueueClause()}`;
      const figures = [{ waited: 'any', query: waiting }].concat(
        thresholds.map((t) => ({ waited: t.waited, query: `${waiting} AND ${names.awaitingApprovalSince} <= '${new Date(now - t.ms).toISOString()}'` })),
      );
      return Promise.all(figures.map(async (f) => ({ waited: f.waited, conversations: (await this.temporal.workflow.count(f.query)).count })));
    }
    const calls = await readWaitingCalls(this.database(), this.tables);
    const running = await this.runningConversations([...new Set(calls.flatMap((c) => [c.conversationId, c.rootConversationId]))], { ownQueue: true });
    const oldest = new Map<string, number>();
    for (const call of calls)
      if (running.has(call.conversationId) && running.has(call.rootConversationId) && !oldest.has(call.rootConversationId))
        oldest.set(call.rootConversationId, call.requestedAt.getTime());
    const since = [...oldest.values()];
    return [{ waited: 'any', conversations: since.length }].concat(
      thresholds.map((t) => ({ waited: t.waited, conversations: since.filter((at) => at <= now - t.ms).length })),
    );
  }

  /**
   * Every tool call waiting for a person, oldest first, with its tool,
   * arguments, requester and age: one PostgreSQL read (the calls are listed
   * as their conversations ask for them, with their arguments from the
   * transcript) and one visibility list per hundred conversations to leave
   * out those no longer running (terminated, failed). Needs no search
   * attribute, and `databaseUrl`.
   */
  async pendingApprovals(filter: PendingApprovalFilter = {}): Promise<PendingApprovalView[]> {
    const now = Date.now();
    const calls = await readWaitingCalls(this.database(), this.tables, {
      conversationId: filter.conversationId,
      toolName: filter.tool,
      requestedBy: filter.requester,
      requestedBefore: filter.minAgeMs === undefined ? undefined : new Date(now - filter.minAgeMs),
    });
    const running = await this.runningConversations(calls.map((c) => c.conversationId));
    return calls
      .filter((call) => running.has(call.conversationId))
      .map((call) => ({
        conversationId: call.conversationId,
        toolCallId: call.toolCallId,
        callKey: call.callKey,
        toolName: call.toolName,
        arguments: parseJsonOrText(call.arguments),
        requestedAt: call.requestedAt,
        ageMs: now - call.requestedAt.getTime(),
        requestedBy: call.requestedBy,
        rootConversationId: call.rootConversationId,
        agentPath: call.agentPath,
        ...(call.decisions ? { decisions: call.decisions } : {}),
      }));
  }

  /**
   * Of these conversations, those Temporal's visibility says are running
   * (on this client's task queue, with `ownQueue`), with the start of their
   * current run: one list per hundred ids (`WorkflowId IN (...)`, system
   * attributes only).
   */
  private async runningConversations(ids: readonly string[], options: { ownQueue?: boolean } = {}): Promise<Map<string, Date>> {
    const running = new Map<string, Date>();
    const unique = [...new Set(ids)];
    // An id a query cannot quote plainly is asked about on its own.
    const plain = unique.filter((id) => !/['"\\]/.test(id));
    for (const id of unique.filter((i) => !plain.includes(i))) {
      const execution = await this.temporal.workflow
        .getHandle(id)
        .describe()
        .catch(() => undefined);
      if (execution?.status.name === 'RUNNING' && (!options.ownQueue || execution.taskQueue === this.taskQueue)) running.set(id, execution.startTime);
    }
    const queue = options.ownQueue ? ` AND ${this.taskQueueClause()}` : '';
    for (let i = 0; i < plain.length; i += IDS_PER_VISIBILITY_QUERY) {
      const list = plain
        .slice(i, i + IDS_PER_VISIBILITY_QUERY)
        .map((id) => `'${id}'`)
        .join(', ');
      for await (const execution of this.temporal.workflow.list({ query: `ExecutionStatus = 'Running' AND WorkflowId IN (${list})${queue}` })) {
        running.set(execution.workflowId, execution.startTime);
      }
    }
    return running;
  }

  /** The visibility clause of this client's task queue. */
  private taskQueueClause(): string {
    return `TaskQueue = '${this.taskQueue.replace(/'/g, "''")}'`;
  }

  /**
   * The calls of one conversation waiting for a decision, asked of its worker
   * (a state query) for at most `timeoutMs`. When no worker answers in that
   * time, they are read from the list of waiting calls instead
   * (`workerAnswered: false`): what the conversation last wrote, which is
   * what a decision sent now as a signal will meet when a worker runs again.
   */
  async waitingCalls(conversationId: string, timeoutMs: number): Promise<{ calls: PendingApproval[]; workerAnswered: boolean }> {
    try {
      return { calls: (await this.state(conversationId, { timeoutMs })).pendingApprovals, workerAnswered: true };
    } catch (err) {
      if (!(err instanceof NoWorkerAnsweredError)) throw err;
      const execution = await this.temporal.workflow.getHandle(conversationId).describe();
      if (execution.status.name !== 'RUNNING') throw err;
      const calls = (await this.pendingApprovals({ conversationId })).filter((c) => c.conversationId === conversationId);
      return {
        calls: calls.map(({ conversationId: _id, rootConversationId: _root, agentPath: _path, requestedAt, ...call }) => ({
          ...call,
          requestedAt: requestedAt.toISOString(),
        })),
        workerAnswered: false,
      };
    }
  }

  /** Every conversation waiting for a person, with its pending approvals (a state query each). */
  async awaitingApproval(): Promise<ConversationAwaitingApproval[]> {
    const found: ConversationAwaitingApproval[] = [];
    for (const { conversationId } of await this.listAwaitingApproval()) {
      const state = await this.state(conversationId).catch(() => undefined);
      const below = state?.waitingBelow ?? [];
      if (state && state.pendingApprovals.length + below.length > 0)
        found.push({ conversationId, pendingApprovals: state.pendingApprovals, waitingBelow: below });
    }
    return found;
  }

  /**
   * Every conversation with tool calls whose effect is unknown (a tool that
   * is not idempotent timed out or lost its worker), found through the
   * `UnknownEffects` search attribute (group `unknownEffects`; an error says
   * so when the namespace does not have it). Closed conversations are listed
   * too: an unknown effect needs checking whatever became of its conversation.
   */
  async withUnknownEffects(): Promise<ConversationWithUnknownEffects[]> {
    const attribute = conversationSearchAttributeKeys(await this.searchAttributeNamesInUse()).unknownEffects;
    if (!attribute) {
      throw new Error(
        `Listing conversations with unknown effects needs the search attribute ${this.configuredNames.unknownEffects ?? CONVERSATION_SEARCH_ATTRIBUTES.unknownEffects.name} (group unknownEffects), ` +
          `which namespace "${this.temporal.options.namespace}" does not have or this client leaves out. The worker logs why at start; docs/search-attributes.md says how to have it. ` +
          "Each conversation's own state still lists its unknown effects (npm run cli -- state <id>).",
      );
    }
    const found: ConversationWithUnknownEffects[] = [];
    const seen = new Set<string>();
    for await (const execution of this.temporal.workflow.list({ query: `${attribute.name} > 0` })) {
      // Every run of a conversation that continued as new carries the count: list the conversation once.
      if (seen.has(execution.workflowId)) continue;
      seen.add(execution.workflowId);
      const state = await this.state(execution.workflowId).catch(() => undefined);
      const count = state?.unknownEffectsCount ?? Number(execution.typedSearchAttributes.get(attribute) ?? 0);
      found.push({ conversationId: execution.workflowId, count, unknownEffects: state?.unknownEffects ?? [] });
    }
    return found;
  }

  /**
   * Follows the model's text while it streams: `onEvent` gets every delta and
   * end event of the conversation (feed them to a {@link StreamView}). Needs
   * `databaseUrl`. Returns the function that stops following.
   */
  async subscribe(conversationId: string, onEvent: (event: StreamEvent) => void): Promise<Unsubscribe> {
    if (!this.databaseUrl) throw new Error('This client has no databaseUrl, so it cannot follow streams. Pass databaseUrl to AgentClient.connect.');
    return subscribeToStream(this.databaseUrl, conversationId, onEvent);
  }

  /** Ends the conversation after its current turn and queued messages. */
  async end(conversationId: string): Promise<void> {
    await this.temporal.workflow.getHandle(conversationId).signal(endConversationSignal);
  }

  /**
   * The input a conversation starts with: the caller's, with the names of the
   * search attributes it sets (those of the configured groups that the
   * namespace has). Left out when they are the seven under their own names,
   * which is what a conversation without them sets.
   */
  private async withSearchAttributeNames(input: ConversationInput): Promise<ConversationInput> {
    if (input.searchAttributes !== undefined) return input;
    const names = await this.searchAttributeNamesInUse();
    const everyOneUnderItsName = CONVERSATION_SEARCH_ATTRIBUTE_FIELDS.every((field) => names[field] === CONVERSATION_SEARCH_ATTRIBUTES[field].name);
    return everyOneUnderItsName ? input : { ...input, searchAttributes: names };
  }

  /**
   * The configured attributes the namespace has, with the right type: read
   * from the namespace at most once per {@link SEARCH_ATTRIBUTE_LIST_TTL_MS}.
   * Where the namespace's list may not be read (no permission, or a server
   * without the operator service), every configured attribute.
   */
  private async searchAttributeNamesInUse(): Promise<ConversationSearchAttributes> {
    if (this.listedNames && Date.now() - this.listedNames.at < SEARCH_ATTRIBUTE_LIST_TTL_MS) return this.listedNames.names;
    let names: ConversationSearchAttributes;
    try {
      const listed = await this.temporal.connection.operatorService.listSearchAttributes({ namespace: this.temporal.options.namespace });
      const registered = listed.customAttributes ?? {};
      names = {};
      for (const field of CONVERSATION_SEARCH_ATTRIBUTE_FIELDS) {
        const name = this.configuredNames[field];
        if (name !== undefined && registered[name] === encodeSearchAttributeIndexedValueType(CONVERSATION_SEARCH_ATTRIBUTES[field].type)) names[field] = name;
      }
    } catch (err) {
      // PERMISSION_DENIED, UNIMPLEMENTED: the workers' configuration is all there is to go by.
      if (!(isGrpcServiceError(err) && (err.code === 7 || err.code === 12))) throw err;
      names = { ...this.configuredNames };
    }
    this.listedNames = { names, at: Date.now() };
    return names;
  }

  /** Closes the connections this client opened. */
  async close(): Promise<void> {
    await this.pool?.end();
    await this.ownConnection?.close();
  }
}

/** Why a conversation's typed output cannot be used (its JSON Schema does not compile), before anything is sent. */
function uncompilableOutput(spec: NonNullable<ConversationInput['output']>): string[] {
  try {
    resolveOutputSpec(spec);
    return [];
  } catch (err) {
    return [(err as Error).message.replace(/\.$/, '')];
  }
}

/**
 * A query that failed because no worker could answer it now, not for what it
 * asked: no worker answering within the client's query timeout; gRPC
 * CANCELLED, DEADLINE_EXCEEDED or UNAVAILABLE (as when the worker that cached
 * the conversation was killed, or the server restarts); or the server saying
 * no worker polls the task queue (FAILED_PRECONDITION "no poller seen", as
 * while the only worker restarts). What waits for a turn asks again; a
 * one-off read fails with it.
 */
export function isWorkerOutage(err: unknown): boolean {
  if (err instanceof NoWorkerAnsweredError) return true;
  const grpc = isGrpcServiceError(err) ? err : err instanceof Error && isGrpcServiceError(err.cause) ? err.cause : undefined;
  if (grpc === undefined) return false;
  return [1, 4, 14].includes(grpc.code) || (grpc.code === 9 && /no poller/i.test(`${grpc.message} ${grpc.details}`));
}
