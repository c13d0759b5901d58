/**
 * The typed client: {@link AgentClient}, one object over the parts it is made
 * of, each in a module by what it serves: `conversations.ts` (send, ask,
 * wait, cancel, end), `approvals.ts` (waiting calls, decisions),
 * `transcripts.ts` (stored messages and streamed text) and `state-query.ts`.
 * Runs anywhere; talks to Temporal and, for message bodies and the list of
 * waiting calls, to PostgreSQL, loading `pg` only for the first such read.
 */
import { randomUUID } from 'node:crypto';
import { comeBackProblem, type ComeBackRequest } from '../contract/comebacks';
import { cancelComeBackSignal, comeBackSignal } from '../contract/workflow';
import { revokeGrantSignal } from '../contract/workflow';
import type { GrantRevocation } from '../contract/grants';
import { Client, Connection, type ClientPlugin, type ConnectionOptions } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type {
  AssistantMessage,
  ConversationState,
  DecisionResult,
  RegenerateResult,
  SearchAttributeOptions,
  TurnRecord,
} from '../contract';
import { APPROVAL_AGE_THRESHOLDS } from '../contract/metrics';
import { agentTables, type AgentTables } from '../db/schema';
import type { StreamEvent } from '../db/stream-channel';
import type { StoredMessage, SupersededMessage } from '../db/transcript-store';
import { readHistorySource } from '../db/ui-history-reads';
import { readCallDecisions, type CallDecisionRecord } from '../db/call-decisions';
import { readNotifications, resendNotification, type NotificationFilter } from '../db/outbox';
import type { NotificationDelivery } from '../contract/notifications';
import { readAuditRecords } from '../db/audit';
import { sendEvent, type EventToSend, type SendEventOptions, type SentEvent } from '../db/events';
import type { AuditRecord } from '../audit/record';
import type { AuditRange } from '../audit/range';
import * as approvals from './approvals';
import type { DecisionInput, WaitingCallQuery, WaitingCalls } from './approvals';
import { ClientContext, workflowTaskTimeoutOf, type ClientSettings } from './context';
import * as conversations from './conversations';
import * as forks from './fork';
import * as messageFiles from './message-files';
import type { MessageFileUpload } from './message-files';
import type { MessageFile } from '../contract/message-files';
import type { StoredMessageFile } from '../db/message-files';
import type { ForkAt, ForkOptions, ForkResult } from './fork';
import type { AskOptions, ConversationWithUnknownEffects, SendMessageOptions, TurnAnswer } from './conversations';
import * as regenerating from './regenerate';
import type { RegenerateOptions } from './regenerate';
import { queryState } from './state-query';
import type { Unsubscribe } from './stream-listener';
import * as transcripts from './transcripts';
import { AgentSchedules } from '../schedules/schedules';

export { WORKFLOW_TASK_TIMEOUT, WORKFLOW_TASK_TIMEOUT_LIMITS_MS, SEARCH_ATTRIBUTE_LIST_TTL_MS } from './context';
export { isWorkerOutage, NoWorkerAnsweredError } from './state-query';
export type { AskOptions, ConversationWithUnknownEffects, SendMessageOptions, TurnAnswer } from './conversations';
export type { DecisionInput, WaitingCallQuery, WaitingCalls } from './approvals';
export { ForkPointError, ForkTargetExistsError } from './fork';
export type { ForkAt, ForkOptions, ForkResult } from './fork';
export { RegenerateRefusedError, type RegenerateOptions } from './regenerate';
export type { MessageFileUpload } from './message-files';
export type { MessageFile } from '../contract/message-files';
export type { WaitingCall } from '../contract/waiting-calls';
export { EventDeliveryError, EventIdConflictError, InvalidEventError } from '../db/events';
export type { EventTarget, EventToSend, SendEventOptions, SentEvent } from '../db/events';

/** Where the client connects. */
export interface AgentClientOptions {
  /** Temporal frontend, host:port. */
  temporalAddress: string;
  namespace?: string;
  /** Task queue the worker polls. Default `agent`. */
  taskQueue?: string;
  /**
   * PostgreSQL with the transcripts; needed for {@link AgentClient.transcript}, answers and {@link
   * AgentClient.waitingCalls}.
   */
  databaseUrl?: string;
  /** PostgreSQL schema the worker keeps its tables in (its `schema` option). Default `durable_agent`. */
  schema?: string;
  /**
   * TLS (`true`, or certificates), a Temporal Cloud API key and gRPC metadata, as the SDK's `Connection` takes them.
   */
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
  /**
   * Plugins of the Temporal `Client`, e.g. Temporal's `OpenTelemetryPlugin`, whose span of each start roots the
   * conversation's trace.
   */
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

/** The client of the durable agent worker. */
export class AgentClient {
  /** What the client's parts share: the connection, the settings and the pool. */
  private readonly context: ClientContext;
  /**
   * Conversations on a schedule (docs/schedules.md): `create`, `list`, `describe`, `pause`, `resume`, `trigger`,
   * `backfill`, `delete`. Each run starts a conversation of its own on this client's task queue, sent by
   * `schedule:<id>`.
   */
  readonly schedules: AgentSchedules;

  private constructor(
    readonly temporal: Client,
    /** The connection this client opened, closed by {@link AgentClient.close}; unset for a `Client` of the caller's. */
    ownConnection: Connection | undefined,
    settings: ClientSettings,
    tables: AgentTables,
  ) {
    this.context = new ClientContext(temporal, ownConnection, settings, tables);
    const context = this.context;
    this.schedules = new AgentSchedules({
      temporal,
      taskQueue: context.taskQueue,
      workflowTaskTimeout: context.workflowTaskTimeout,
      startInput: (input) => conversations.withSearchAttributeNames(context, input),
    });
  }

  /**
   * Connects to Temporal (PostgreSQL is opened by the first read that needs
   * it). Throws a `ConfigError` when `schema` is not a usable name.
   */
  static async connect(options: AgentClientOptions): Promise<AgentClient> {
    const tables = agentTables(options.schema);
    workflowTaskTimeoutOf(options.workflowTaskTimeoutMs); // before a connection is opened
    const { temporalAddress: address, tls, apiKey, metadata, connectTimeoutMs } = options;
    const connection = await Connection.connect({
      address,
      tls,
      apiKey,
      metadata,
      ...(connectTimeoutMs ? { connectTimeout: connectTimeoutMs } : {}),
    });
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
    options: Pick<
      AgentClientOptions,
      'taskQueue' | 'databaseUrl' | 'schema' | 'queryTimeoutMs' | 'searchAttributes' | 'workflowTaskTimeoutMs'
    > = {},
  ): AgentClient {
    return new AgentClient(temporal, undefined, options, agentTables(options.schema));
  }

  /** Sends a user message, starting the conversation if it is not running. Returns the message id. */
  sendMessage(conversationId: string, text: string, options: SendMessageOptions = {}): Promise<string> {
    return conversations.sendMessage(this.context, conversationId, text, options);
  }

  /** Checks and stores files for a message to `conversationId`; send the references it returns as `options.files`. */
  storeMessageFiles(conversationId: string, files: readonly MessageFileUpload[]): Promise<MessageFile[]> {
    return messageFiles.storeMessageFiles(this.context, conversationId, files);
  }

  /** The bytes and type of a file a user message of the conversation carries (`MessageFile.fileId`); else undefined. */
  readMessageFile(conversationId: string, fileId: string): Promise<StoredMessageFile | undefined> {
    return messageFiles.readMessageFile(this.context, conversationId, fileId);
  }

  /**
   * The conversation's state (from the workflow). `timeoutMs` overrides the
   * client's `queryTimeoutMs` for this call.
   */
  state(conversationId: string, options: { timeoutMs?: number } = {}): Promise<ConversationState> {
    return queryState(this.context, conversationId, options);
  }

  /**
   * Waits until the turn that took `messageId` has finished. A state query
   * that fails for want of a worker to answer it ({@link isWorkerOutage}: the
   * worker that cached the conversation was killed and its sticky queue is
   * failing over, the only worker restarts, the server restarts) is asked
   * again until `timeoutMs`.
   */
  waitForTurn(conversationId: string, messageId: string, timeoutMs = 120_000): Promise<TurnRecord> {
    return conversations.waitForTurn(this.context, conversationId, messageId, timeoutMs);
  }

  /**
   * Sends a message, waits for its turn, and returns the answer's text and,
   * when the conversation asks for a typed output, its value (typed by
   * `options.output`). Throws `OutputMismatchError` when the value does
   * not parse with `options.output`.
   */
  ask<T = unknown>(conversationId: string, text: string, options: AskOptions<T> = {}): Promise<TurnAnswer<T>> {
    return conversations.ask(this.context, conversationId, text, options);
  }

  /** Cancels the current turn ("Esc"): finished results are kept, running calls interrupted, the rest cancelled. */
  cancelTurn(conversationId: string, reason?: string): Promise<void> {
    return conversations.cancelTurn(this.context, conversationId, reason);
  }

  /** Ends the conversation after its current turn and queued messages. */
  end(conversationId: string): Promise<void> {
    return conversations.endConversation(this.context, conversationId);
  }

  /**
   * Every conversation with tool calls whose effect is unknown (a tool that
   * is not idempotent timed out or lost its worker), found through the
   * `UnknownEffects` search attribute (group `unknownEffects`; an error says
   * so when the namespace does not have it). Closed conversations are listed
   * too: an unknown effect needs checking whatever became of its conversation.
   */
  withUnknownEffects(): Promise<ConversationWithUnknownEffects[]> {
    return conversations.withUnknownEffects(this.context);
  }

  /**
   * The tool calls waiting for a person, with their tool, arguments,
   * requester and age: the one list, narrowed by `query` (one conversation
   * or all, with or without the calls waiting below it in agents called as
   * tools, a tool, a requester, an age). Read from PostgreSQL (no search
   * attribute needed, one visibility list per hundred conversations to leave
   * out those no longer running), oldest first; or, with `workerWaitMs`,
   * asked of one conversation's worker first. Needs `databaseUrl`.
   */
  waitingCalls(query: WaitingCallQuery = {}): Promise<WaitingCalls> {
    return approvals.waitingCalls(this.context, query);
  }

  /**
   * How many conversations of this client's task queue wait for a person:
   * `any`, and for each threshold those whose oldest waiting call is older.
   * Where the namespace has the `approvals` group, counted by Temporal's
   * visibility (one count per figure, the same cost for ten conversations as
   * for ten thousand); else from the waiting calls in PostgreSQL, with one
   * visibility list per hundred waiting conversations.
   */
  approvalBacklog(
    thresholds: readonly { waited: string; ms: number }[] = APPROVAL_AGE_THRESHOLDS,
  ): Promise<{ waited: string; conversations: number }[]> {
    return approvals.approvalBacklog(this.context, thresholds);
  }

  /**
   * Applies a decision and answers synchronously (an update): a decision for
   * an unknown, settled or not-awaiting call is refused with an error saying
   * which (`DecisionRefusedError`), and changes nothing. Sending the same
   * decision id again returns `applied: false`.
   */
  decide(conversationId: string, decision: DecisionInput): Promise<DecisionResult> {
    return approvals.decide(this.context, conversationId, decision);
  }

  /**
   * Sends a decision as a signal (fire and forget). A refused one is listed in the
   * state's `refusedDecisions` (and named in `lastError`). Returns its id.
   */
  signalDecision(conversationId: string, decision: DecisionInput): Promise<string> {
    return approvals.signalDecision(this.context, conversationId, decision);
  }

  /**
   * Revokes a standing grant given in the conversation (its id is the id of the decision that gave it): from now on
   * the calls it would have covered wait for a person. A grant unknown or revoked already changes nothing (said in the
   * state's `lastError`). The state's `grants` shows it revoked.
   */
  async revokeGrant(conversationId: string, revocation: GrantRevocation): Promise<void> {
    await this.context.temporal.workflow.getHandle(conversationId).signal(revokeGrantSignal, revocation);
  }

  /**
   * Sends an event (docs/waiting-for-events.md): the calls waiting for its name and key get its payload as their
   * result; when none waits, it is kept for the first wait to come (`options.keepMs`, default 24 hours; 0: not kept).
   * Sending the same `eventId` again is a retry: it is delivered again where it was routed, and nothing new is
   * recorded. Throws `InvalidEventError` (what is wrong and the limit), `EventIdConflictError` (the id was sent with
   * another name, key or payload) or `EventDeliveryError` (recorded, but a signal failed: send it again with the same
   * id). Needs `databaseUrl`.
   */
  async sendEvent(event: EventToSend, options: SendEventOptions = {}): Promise<SentEvent> {
    return sendEvent(await this.context.database(), this.context.temporal, this.context.tables, event, options);
  }

  /**
   * Asks a running conversation to come back at `at` with `note` (docs/coming-back-later.md): then (or when the turn
   * running then ends) a turn starts with the note as its message, sent by the conversation itself. Throws
   * `WorkflowNotFoundError` for a conversation that does not run, and a `TypeError` saying what is wrong with the
   * request (the note's limit, a time not in ISO 8601 or over a year ahead). The state lists it once taken (`comeBacks`).
   */
  async comeBackLater(
    conversationId: string,
    request: { comeBackId?: string; at: string | Date; note: string; requestedBy?: string },
  ): Promise<{ comeBackId: string; at: string; note: string }> {
    const sent: ComeBackRequest = {
      comeBackId: request.comeBackId ?? randomUUID(),
      at: typeof request.at === 'string' ? request.at : request.at.toISOString(),
      note: request.note,
      ...(request.requestedBy !== undefined ? { requestedBy: request.requestedBy } : {}),
    };
    const problem = comeBackProblem(sent, Date.now());
    if (problem) throw new TypeError(`${problem} Nothing was sent.`);
    await this.context.temporal.workflow.getHandle(conversationId).signal(comeBackSignal, sent);
    return { comeBackId: sent.comeBackId, at: new Date(sent.at).toISOString(), note: sent.note };
  }

  /** Cancels a come-back the conversation holds (by its id); one it does not hold changes nothing. */
  async cancelComeBack(conversationId: string, comeBackId: string, cancelledBy?: string): Promise<void> {
    await this.context.temporal.workflow
      .getHandle(conversationId)
      .signal(cancelComeBackSignal, { comeBackId, ...(cancelledBy !== undefined ? { cancelledBy } : {}) });
  }

  /** The stored transcript (message bodies), through `throughSeq` when given. */
  transcript(conversationId: string, throughSeq?: number): Promise<StoredMessage[]> {
    return transcripts.transcript(this.context, conversationId, throughSeq);
  }

  /** At most `limit` stored messages, those after seq `after` (-1: from the start), in order. */
  transcriptPage(conversationId: string, after: number, limit: number): Promise<StoredMessage[]> {
    return transcripts.transcriptPage(this.context, conversationId, after, limit);
  }

  /** The decisions recorded on the conversation's calls named by `callKeys` (effect keys), by call key. */
  async callDecisions(conversationId: string, callKeys: readonly string[]): Promise<Map<string, CallDecisionRecord>> {
    return readCallDecisions(await this.context.database(), this.context.tables, conversationId, callKeys);
  }

  /**
   * The audit records of the decisions made in `range` (`from` included, `to` excluded): every person's decision and
   * every approval policy rule's own, with the calls' tools and arguments and what the sender signed, oldest first, a
   * page of at most 500 at a time (each read when the previous one is taken). Needs `databaseUrl`.
   */
  async *auditRecords(range: AuditRange): AsyncGenerator<AuditRecord[]> {
    yield* readAuditRecords(await this.context.database(), this.context.tables, range);
  }

  /** The live transcript (with each row's reference key) and the decisions recorded on its calls: a chat's history. */
  async historySource(conversationId: string): Promise<Awaited<ReturnType<typeof readHistorySource>>> {
    return readHistorySource(await this.context.database(), this.context.tables, conversationId);
  }

  /**
   * The messages taken out of the conversation's transcript, oldest first: what runs abandoned by a Temporal reset
   * wrote past the reset point, and the answers regenerated turns replaced. Needs the client's `databaseUrl`.
   */
  superseded(conversationId: string): Promise<SupersededMessage[]> {
    return transcripts.superseded(this.context, conversationId);
  }

  /**
   * The stored model responses under `keys` (`MessageMeta.responseKey`): an
   * assistant message's full body, readable as soon as the model answered,
   * before its transcript row is written. Missing keys are left out.
   */
  modelResponses(keys: readonly string[]): Promise<Map<string, AssistantMessage>> {
    return transcripts.modelResponses(this.context, keys);
  }

  /**
   * The text the conversation's running model calls streamed so far, as the
   * stream events that carried it (kept until each call ends): replay these,
   * then follow {@link AgentClient.subscribe}, to lose nothing after a reconnect.
   */
  streamedSoFar(conversationId: string): Promise<StreamEvent[]> {
    return transcripts.streamedSoFar(this.context, conversationId);
  }

  /**
   * Follows the model's text while it streams: `onEvent` gets every delta and
   * end event of the conversation (feed them to a `StreamView`). Needs
   * `databaseUrl`. Returns the function that stops following.
   */
  subscribe(conversationId: string, onEvent: (event: StreamEvent) => void): Promise<Unsubscribe> {
    return transcripts.subscribe(this.context, conversationId, onEvent);
  }

  /**
   * Forks a conversation: a new conversation whose transcript is the
   * source's up to `at` (`{ seq }`: through that message; `{ turn }`: before
   * that turn, numbered from 1), started idle with the source's settings
   * (`options.input` over them) and its lineage in its state (`forkedFrom`).
   * Effects before the fork point stay done; a call still open there is
   * answered in the fork (docs/operating.md, "Fork"). The source is
   * unchanged. Needs `databaseUrl`. Throws `ForkPointError` for a fork point
   * outside the transcript, `ForkTargetExistsError` for an id in use.
   */
  fork(sourceId: string, at: ForkAt, options: ForkOptions = {}): Promise<ForkResult> {
    return forks.fork(this.context, sourceId, at, options);
  }

  /**
   * Asks for the conversation's last answer again: what its last turn stored after its user messages is superseded
   * (still readable as superseded messages) and a new turn answers them; follow it with `waitForTurn(id,
   * result.requestId)`. Throws `RegenerateRefusedError` saying why while a turn runs, with nothing to regenerate, or
   * when the conversation is ending; `ConversationClosedError` when it has ended.
   */
  regenerate(conversationId: string, options?: RegenerateOptions): Promise<RegenerateResult> {
    return regenerating.regenerate(this.context, conversationId, options);
  }

  /**
   * Webhook notifications' deliveries, one per event and endpoint (docs/notifications.md): `pending` (the default:
   * not delivered yet, failing or not, oldest first), `failing` (undelivered after the dispatcher's number of attempts)
   * or `delivered` (most recent first), at most `limit` (default 100). Read from PostgreSQL; needs `databaseUrl`.
   */
  async notifications(filter: NotificationFilter = {}): Promise<NotificationDelivery[]> {
    return readNotifications(await this.context.database(), this.context.tables, filter);
  }

  /**
   * Sends a webhook notification again, with the same event id: its deliveries (to `endpoint`, or to each endpoint
   * it was for) are due at once, delivered before or not, and a running worker posts them. Returns those endpoints;
   * none when no such event is kept (unknown, or deleted after its keep). Needs `databaseUrl`.
   */
  async resendNotification(eventId: string, endpoint?: string): Promise<string[]> {
    return resendNotification(await this.context.database(), this.context.tables, eventId, endpoint);
  }

  /** Closes the connections this client opened. */
  close(): Promise<void> {
    return this.context.close();
  }
}
