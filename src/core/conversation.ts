/**
 * The rules of a conversation, in one place: the inbox (interrupt or queue),
 * the turn (model call, tool calls, final answer, maxSteps), decisions
 * (validation, deadlines, deduplication), outcomes, tokens and cost, the
 * search attribute values and what continue-as-new carries.
 *
 * Pure: no Temporal, no I/O. Time, fresh ids and logging come in through a
 * {@link CoreEnvironment}. The workflow (`src/workflows/conversation.ts`) is
 * its edge: it calls these methods from its handlers and its turn loop, and
 * turns what they return into activities, timers and search attributes. The
 * property test (`test/unit/turn-property.test.ts`) drives the same class with
 * random events, with a synchronous stand-in for that edge.
 *
 * The guarantee lives here: every call of an assistant message is settled
 * with exactly one outcome before the next model call or the end of the
 * turn, whatever ends it.
 */
import type {
  AppendEntry,
  ApprovalRequest,
  DecisionRecord,
  ModelCallInput,
  ModelCallResult,
  ToolCallInput,
  ToolCallResult,
  ToolDiscoveryInput,
  ToolDiscoveryResult,
  ToolCallPlan,
  VerifyDecisionInput,
} from '../contract/activities';
import { describePendingApproval, requestedCalls, ToolCallBatch, type BatchCall } from './batch';
import {
  CONVERSATION_DEFAULTS,
  CONVERSATION_SEARCH_ATTRIBUTE_FIELDS,
  describeBadDecision,
  describeOversizedDecision,
  describeOversizedUserMessage,
  describeBadUserMessage,
  describeUnstorableCancel,
  describeUnstorableDecision,
  describeUnstorableUserMessage,
  RECENT_TURNS_KEPT,
  REFUSED_DECISIONS_KEPT,
  CARRIED_INBOX_MAX_BYTES,
  DEDUP_MEMORY,
  TURN_INPUT_MAX_BYTES,
  UNKNOWN_EFFECTS_KEPT,
  type ApprovalDecision,
  type CancelTurnRequest,
  type CarriedConversation,
  type ConversationInput,
  type ConversationSearchAttributes,
  type ConversationState,
  type OpenCall,
  type ConversationStatus,
  type ConversationUsage,
  type ConversationSummary,
  type DecisionResult,
  type PendingBelow,
  type SubAgentTurn,
  type SubAgentWaitingReport,
  type RefusedDecision,
  type TokenUsage,
  type TurnRecord,
  type UnknownEffect,
  type UserMessage,
} from '../contract/conversation';
import { roundUsd } from './pricing';
import { Inbox } from './inbox';
import { describeMessage, type ChatMessage, type MessageMeta } from '../contract/messages';
import { effectUnknownContent, handoffContent, notStoredContent, toolFailedContent, type OutcomeKind, type ToolFailureReason } from './outcomes';
import { toStorableText } from '../contract/text';
import { TranscriptWrites } from './writes';
import { NOT_RUN_TOOL_LABEL } from '../contract/metrics';
import {
  approvalTimerSummary,
  currentDetails,
  decisionRecordSummary,
  modelCallSummary,
  toolCallSummary,
  toolDiscoverySummary,
  whoDecided,
  type CallLine,
} from './summaries';
import { planStoredRepair } from './pairing';
import {
  STOP_REASONS,
  type AfterAnswer,
  type CoreEnvironment,
  type PublishedUsage,
  type SearchAttributeValues,
  type StoreEntry,
  type SubAgentStart,
  type ToolFailure,
} from './edge';

export * from './edge';

type Phase = 'idle' | 'running' | 'failed' | 'closed';

/** One conversation's state and rules. Made once per workflow run, from the input and what the previous run carried. */
export class ConversationCore {
  private readonly maxSteps: number;
  private readonly approvalTimeoutMs: number;
  private readonly onNewMessage: 'interrupt' | 'queue';
  private readonly maxHandoffsPerTurn: number;
  /** The agent that answers now (conversations with named agents). */
  private agent: string | undefined;
  /** The agent a handoff of the open batch moves the conversation to, once the batch closes. */
  private nextAgent: string | undefined;
  /** Handoffs made in the current turn. */
  private turnHandoffs = 0;
  private readonly maxAgentDepth: number;
  /** Calls waiting for a person below the running calls of agents as tools, by the calling call's key, as their agents last reported. */
  private readonly below = new Map<string, PendingBelow[]>();
  /** What this conversation (an agent called as a tool) last reported to its caller, as JSON. */
  private reported: string | undefined;
  /** The last final answer: its model response and text (a preview when long). */
  private lastAnswer: { responseKey: string; text: string } | undefined;
  /** Events in one run's history after which the conversation continues as new (between turns). */
  readonly continueAsNewAfterEvents: number;
  /** Structure of the messages of this run; earlier runs' messages are stored and settled. */
  private readonly messages: MessageMeta[] = [];
  /** The run's messages between their seqs and PostgreSQL. */
  private readonly writes: TranscriptWrites;
  /** Seqs of notes stored in place of messages PostgreSQL refused. */
  private readonly notes = new Set<number>();
  /** Decisions whose signature an activity is checking now (each was sent in time for its calls). */
  private verifying = 0;
  private readonly inbox: Inbox;
  private readonly decisions: Map<string, DecisionResult>;
  private readonly recentTurns: TurnRecord[];
  private readonly refusedDecisions: RefusedDecision[];
  private readonly unknownEffects: UnknownEffect[];
  private unknownEffectsCount: number;
  private phase: Phase;
  private steps: number;
  private lastError: string | undefined;
  /** What the database refused to store during the current turn; kept as `lastError` even when the turn answers. */
  private storeProblem: string | undefined;
  private transcriptRepairs: number;
  private ending: boolean;
  private readonly runs: number;
  /** A turn is taken (its messages may still be being stored) and not yet finished. */
  private turnActive = false;
  private turnMessageIds: string[] = [];
  /** Seq of the current turn's first message. */
  private turnFirstSeq = 0;
  /** Who sent the current turn's messages (their `sentBy`), each once. */
  private turnRequesters: string[] = [];
  private turnSteps = 0;
  /** Answers of the current turn asked for again because they did not match its typed output. */
  private turnOutputRetries = 0;
  /** Turns taken, all runs together (from this run on, for runs begun before it was carried). */
  private turns: number;
  /** The number, within its turn, of each call started in this turn. */
  private callNumbers = new Map<string, number>();
  /** The calls of the last batch stored, for the workflow's current details. */
  private lastCalls: CallLine[] = [];
  private turnUsage: TokenUsage | undefined;
  /** Cost of the turn's priced calls, and how many calls had no price. */
  private turnCost = { usd: 0, unpriced: 0 };
  /** The turn's MCP tools, by reference, once discovered. */
  private turnToolset: string | undefined;
  /** Tokens and cost of the whole conversation (from this run on, for runs begun before they were carried). */
  private usage: ConversationUsage;
  /** Why the current (or the next, when set before it starts) turn stops. */
  private stopReason: string | undefined;
  /** The current turn has its record (it answered, failed or stopped) and only writes its end. */
  private turnRecorded = false;
  /** A cancel that came while the turn wrote its end, with a message waiting: its turn starts cancelled. */
  private cancelNextTurn: string | undefined;
  /** The calls of the last assistant message, until their results are stored. */
  private batch: ToolCallBatch | undefined;
  /** The open batch was asked for after the turn reached maxSteps: none of it ran, and the turn fails. */
  private batchOverLimit = false;
  private answerSeq = -1;
  private published: { status: ConversationStatus; pending: number; approvals: string | undefined } | undefined;
  private publishedUnknownEffects = 0;
  /** The spending this run last published; unset until its first publish. */
  private publishedUsage: PublishedUsage | undefined;
  /** The value each search attribute was last set to in this run (JSON), to upsert only what changed. */
  private readonly upserted = new Map<keyof ConversationSearchAttributes, string>();

  constructor(
    readonly conversationId: string,
    private readonly input: ConversationInput,
    private readonly env: CoreEnvironment,
  ) {
    const carried = input.carried;
    this.maxSteps = input.maxSteps ?? CONVERSATION_DEFAULTS.maxSteps;
    this.approvalTimeoutMs = input.approvalTimeoutMs ?? CONVERSATION_DEFAULTS.approvalTimeoutMs;
    this.onNewMessage = input.onNewMessage ?? CONVERSATION_DEFAULTS.onNewMessage;
    this.maxHandoffsPerTurn = input.maxHandoffsPerTurn ?? CONVERSATION_DEFAULTS.maxHandoffsPerTurn;
    this.maxAgentDepth = input.maxAgentDepth ?? CONVERSATION_DEFAULTS.maxAgentDepth;
    this.agent = carried?.agent ?? input.agent;
    this.continueAsNewAfterEvents = input.continueAsNewAfterEvents ?? CONVERSATION_DEFAULTS.continueAsNewAfterEvents;
    this.writes = new TranscriptWrites(carried?.nextSeq ?? 0);
    this.inbox = new Inbox(carried);
    this.decisions = new Map((carried?.decisions ?? []).map((d) => [d.decisionId, d]));
    this.recentTurns = [...(carried?.recentTurns ?? [])];
    this.refusedDecisions = [...(carried?.refusedDecisions ?? [])];
    this.unknownEffects = [...(carried?.unknownEffects?.recent ?? [])];
    this.unknownEffectsCount = carried?.unknownEffects?.count ?? 0;
    this.phase = carried?.phase ?? 'idle';
    this.steps = carried?.steps ?? 0;
    this.turns = carried?.turns ?? 0;
    this.usage = carried?.usage ? { ...carried.usage } : { promptTokens: 0, completionTokens: 0, costUsd: 0, unpricedCalls: 0 };
    this.lastError = carried?.lastError;
    this.transcriptRepairs = carried?.transcriptRepairs ?? 0;
    this.ending = carried?.ending ?? false;
    this.runs = (carried?.runs ?? 0) + 1;
    this.stopReason = carried?.pendingCancel;
    // An agent called as a tool answers its task in one turn, then ends.
    if (input.calledBy && !carried) {
      this.inbox.receive({ text: toStorableText(input.calledBy.task), messageId: `task-of-${input.calledBy.callKey}` });
      this.ending = true;
    }
  }

  /** Where the conversation stands. */
  status(): ConversationStatus {
    return this.phase === 'running' && this.pendingCount() > 0 ? 'awaiting_approval' : this.phase;
  }

  /**
   * The search attribute values, when they changed since the last call (which
   * counts as publishing them). The conversation's tokens and cost
   * ({@link SearchAttributeValues.usage}) come only beside another change:
   * a model call alone never makes the edge upsert, a turn's end always does.
   */
  searchAttributeChanges(): SearchAttributeValues | undefined {
    const approvals = this.approvalIndex();
    const now = { status: this.status(), pending: this.pendingCount(), approvals: JSON.stringify(approvals) };
    const unknownChanged = this.unknownEffectsCount !== this.publishedUnknownEffects;
    const same = this.published?.status === now.status && this.published.pending === now.pending && this.published.approvals === now.approvals;
    if (same && !unknownChanged) return undefined;
    this.published = now;
    this.publishedUnknownEffects = this.unknownEffectsCount;
    const usage = this.usageChange();
    return {
      status: now.status,
      pendingApprovals: now.pending,
      ...(unknownChanged ? { unknownEffects: this.unknownEffectsCount } : {}),
      approvals,
      ...(usage ? { usage } : {}),
    };
  }

  /**
   * The search attributes to set now, by field: those the conversation's
   * input names (all of them when it names none) whose values changed since
   * this run last set them; empty when nothing changed. `awaitingApprovalSince`
   * is ms since the epoch (null: unset). See {@link searchAttributeChanges}.
   */
  searchAttributeUpdates(): { field: keyof ConversationSearchAttributes; value: unknown }[] {
    const changed = this.searchAttributeChanges();
    if (!changed) return [];
    const names = this.input.searchAttributes;
    const values: Record<keyof ConversationSearchAttributes, unknown> = {
      status: changed.status,
      pendingApprovals: changed.pendingApprovals,
      unknownEffects: changed.unknownEffects,
      pendingApprovalTags: changed.approvals?.tags,
      awaitingApprovalSince: changed.approvals?.since,
      tokens: changed.usage?.tokens,
      costUsd: changed.usage?.costUsd,
    };
    return CONVERSATION_SEARCH_ATTRIBUTE_FIELDS.flatMap((field) => {
      const value = values[field];
      if (value === undefined || (names !== undefined && names[field] === undefined)) return [];
      const json = JSON.stringify(value);
      if (this.upserted.get(field) === json) return [];
      this.upserted.set(field, json);
      return [{ field, value }];
    });
  }

  /**
   * The conversation's spending to publish with the other changes: when it
   * differs from what this run last published (nothing, at a run's first
   * publish).
   */
  private usageChange(): PublishedUsage | undefined {
    const now: PublishedUsage = { tokens: this.usage.promptTokens + this.usage.completionTokens, costUsd: this.usage.costUsd };
    if (this.publishedUsage?.tokens === now.tokens && this.publishedUsage.costUsd === now.costUsd) return undefined;
    this.publishedUsage = now;
    return now;
  }

  /** What visibility indexes about the calls awaiting approval: see {@link SearchAttributeValues.approvals}. */
  private approvalIndex(): { tags: string[]; since: number | null } {
    // Calls waiting inside agents called as tools count as this conversation's: it waits on them.
    const waiting = [
      ...(this.batch?.awaitingApproval() ?? []).map((c) => ({ key: c.key, name: c.name, requestedAt: c.requestedAt })),
      ...this.waitingBelow().map((b) => ({ key: b.callKey, name: b.toolName, requestedAt: Date.parse(b.requestedAt) })),
    ];
    if (waiting.length === 0) return { tags: [], since: null };
    const tags = new Set<string>();
    for (const call of waiting) tags.add(`call:${call.key}`);
    for (const call of waiting) tags.add(`tool:${call.name}`);
    for (const who of this.turnRequesters) tags.add(`requester:${who}`);
    return { tags: [...tags], since: Math.min(...waiting.map((call) => call.requestedAt)) };
  }

  /** The calls of the open batch waiting for a person, as approvers' lists hold them (see {@link ApprovalRequest}). */
  approvalRequests(): ApprovalRequest[] {
    const calls = this.batch?.all() ?? [];
    const agentPath = this.agentPath();
    return calls.flatMap((call, callIndex) =>
      call.phase === 'awaiting_approval'
        ? [
            {
              callKey: call.key,
              toolCallId: call.id,
              toolName: call.name,
              assistantSeq: this.answerSeq,
              callIndex,
              requestedAt: call.requestedAt,
              requestedBy: [...this.turnRequesters],
              ...(this.input.calledBy ? { rootConversationId: this.input.calledBy.rootConversationId } : {}),
              ...(agentPath ? { agentPath } : {}),
              ...(call.decisions ? { decisions: [...call.decisions] } : {}),
            },
          ]
        : [],
    );
  }

  /** The agents from the top-level conversation's down to this one's current agent; undefined for one unnamed agent. */
  private agentPath(): string[] | undefined {
    const caller = this.input.calledBy;
    if (caller) return [...caller.path.slice(0, -1), this.agent ?? caller.path[caller.path.length - 1]];
    return this.agent === undefined ? undefined : [this.agent];
  }

  /** The calls waiting for a person below the running calls of agents as tools, as their agents last reported. */
  private waitingBelow(): PendingBelow[] {
    if (this.below.size === 0) return [];
    const running = new Set((this.batch?.all() ?? []).filter((c) => c.phase === 'running').map((c) => c.key));
    return [...this.below].flatMap(([key, waiting]) => (running.has(key) ? waiting : []));
  }

  /**
   * An agent called as a tool reported the calls waiting in it and below it
   * (`subAgentWaiting`). Kept while its call runs. Returns true when it
   * changed what this conversation waits on; a report of no running call, or
   * malformed, changes nothing.
   */
  subAgentWaiting(report: unknown): boolean {
    const r = report as Partial<SubAgentWaitingReport> | null;
    if (typeof r?.callKey !== 'string' || !Array.isArray(r.waiting) || r.waiting.length > 1000) {
      this.env.log.warn('Ignored a malformed subAgentWaiting report', { conversationId: this.conversationId });
      return false;
    }
    const call = this.batch?.all().find((c) => c.key === r.callKey);
    if (call?.subAgent === undefined || call.phase !== 'running') return false;
    this.below.set(
      r.callKey,
      r.waiting.map((w) => ({ ...w })),
    );
    return true;
  }

  /**
   * For an agent called as a tool: what to report to its caller now (the
   * calls waiting in it, once the messages asking for them are written, and
   * below it), when that changed since the last report; else undefined.
   */
  reportForCaller(): SubAgentWaitingReport | undefined {
    const caller = this.input.calledBy;
    if (!caller || !this.writes.allWritten) return undefined;
    const path = this.agentPath() ?? [];
    const now = this.env.now();
    const own = (this.batch?.awaitingApproval() ?? []).map((call): PendingBelow => ({
      ...describePendingApproval(call, now, this.turnRequesters),
      conversationId: this.conversationId,
      agentPath: path,
    }));
    const waiting = [...own, ...this.waitingBelow()];
    const json = JSON.stringify(waiting.map(({ ageMs: _age, ...w }) => w));
    if (json === this.reported || (this.reported === undefined && waiting.length === 0)) return undefined;
    this.reported = json;
    return { callKey: caller.callKey, waiting };
  }

  /** The state shown to clients (the `state` query). */
  state(): ConversationState {
    const below = this.waitingBelow();
    return {
      conversationId: this.conversationId,
      status: this.status(),
      steps: this.steps,
      lastError: this.lastError,
      messages: this.messages.map((m) => ({ ...m })),
      messageCount: this.writes.nextSeq,
      runs: this.runs,
      ...(this.agent !== undefined ? { agent: this.agent } : {}),
      ...(this.input.calledBy ? { calledBy: { ...this.input.calledBy, task: this.input.calledBy.task.slice(0, 500) } } : {}),
      queuedMessages: this.inbox.length,
      // A call is shown waiting for a person once the message that asked for it is written: whoever sees it may read the transcript.
      pendingApprovals: this.writes.inProgress
        ? []
        : (this.batch?.awaitingApproval() ?? []).map((call) => describePendingApproval(call, this.env.now(), this.turnRequesters)),
      ...(below.length > 0 ? { waitingBelow: below.map((b) => ({ ...b, ageMs: this.env.now() - Date.parse(b.requestedAt) })) } : {}),
      ...(this.batch ? { openCalls: this.batch.all().map(describeOpenCall) } : {}),
      runningToolCalls: (this.batch?.all() ?? []).filter((c) => c.phase === 'running').map((c) => c.id),
      decisionsApplied: this.decisions.size,
      refusedDecisions: this.refusedDecisions.map((r) => ({ ...r })),
      recentTurns: this.recentTurns.map((t) => ({ ...t })),
      ...(this.turnActive ? { currentTurn: { messageIds: [...this.turnMessageIds], firstSeq: this.turnFirstSeq } } : {}),
      unknownEffects: this.unknownEffects.map((u) => ({ ...u })),
      unknownEffectsCount: this.unknownEffectsCount,
      transcriptRepairs: this.transcriptRepairs,
      usage: { ...this.usage },
    };
  }

  /**
   * Before a model call: when a limit of the conversation's budget is
   * reached, the turn's record (`budget_exceeded`, saying which limit, what
   * was spent and how to go on); otherwise undefined. Only between steps, so
   * every call of the turn is answered by then.
   */
  budgetStop(): TurnRecord | undefined {
    const budget = this.input.budget;
    if (!budget) return undefined;
    const costUnknown = "a limit in dollars needs a price for the model (AGENT_MODEL_PRICES, or the plugin's model.prices)";
    const scopes = [
      {
        what: 'turn',
        tokens: (this.turnUsage?.promptTokens ?? 0) + (this.turnUsage?.completionTokens ?? 0),
        usd: this.turnCost.usd,
        unpriced: this.turnCost.unpriced,
        limits: { tokens: budget.turnTokens, usd: budget.turnCostUsd },
        then: 'No further model call was made in this turn; the next message starts a turn with a budget of its own.',
      },
      {
        what: 'conversation',
        tokens: this.usage.promptTokens + this.usage.completionTokens,
        usd: this.usage.costUsd,
        unpriced: this.usage.unpricedCalls,
        limits: { tokens: budget.conversationTokens, usd: budget.conversationCostUsd },
        then: 'No further model call is made in this conversation: its budget is fixed when it starts (ConversationInput.budget); go on in a new conversation with a higher one.',
      },
    ];
    for (const s of scopes) {
      const { tokens, usd } = s.limits;
      const reached =
        tokens !== undefined && s.tokens >= tokens
          ? `The ${s.what} used ${s.tokens} tokens, its budget is ${tokens} (budget.${s.what}Tokens).`
          : usd !== undefined && s.unpriced > 0
            ? `The ${s.what}'s cost is unknown: ${costUnknown}.`
            : usd !== undefined && s.usd >= usd
              ? `The ${s.what} cost $${s.usd}, its budget is $${usd} (budget.${s.what}CostUsd).`
              : undefined;
      if (reached) return this.record('budget_exceeded', { error: `${reached} ${s.then}` });
    }
    return undefined;
  }

  /** What the workflow returns when the conversation ends. */
  summary(): ConversationSummary {
    const summary = { conversationId: this.conversationId, steps: this.steps, messages: this.writes.nextSeq, transcriptRepairs: this.transcriptRepairs };
    return this.input.calledBy ? { ...summary, ...this.subAgentTurn() } : summary;
  }

  /** How the one turn of an agent called as a tool ended, for its caller. */
  private subAgentTurn(): { lastTurn?: SubAgentTurn } {
    const last = this.recentTurns[this.recentTurns.length - 1];
    if (!last) return {};
    const answered = last.outcome === 'answered' && this.lastAnswer;
    return {
      lastTurn: {
        ...(this.agent !== undefined ? { agent: this.agent } : {}),
        outcome: last.outcome,
        ...(last.error !== undefined ? { error: last.error } : {}),
        ...(answered ? { answer: { ...this.lastAnswer! } } : {}),
      },
    };
  }

  /**
   * A user message arrived. Malformed and already-received messages change
   * nothing. Returns true when it stops the running turn (policy `interrupt`):
   * the edge then cancels the turn.
   */
  receiveUserMessage(message: unknown): boolean {
    const problem = describeBadUserMessage(message);
    if (problem) return this.refuse('userMessage signal', problem);
    const caller = this.input.calledBy;
    if (caller) {
      return this.refuse(
        'userMessage signal',
        `this conversation runs agent ${this.agent ?? ''} for tool call ${caller.toolName} of conversation ${caller.conversationId}, and answers only that task; send messages to ${caller.rootConversationId}`,
      );
    }
    const { text, messageId: given, sentBy } = message as UserMessage;
    const oversized = describeOversizedUserMessage(text);
    if (oversized) return this.refuse('userMessage signal', oversized);
    const unstorable = describeUnstorableUserMessage(message as UserMessage);
    if (unstorable) return this.refuse('userMessage signal', unstorable);
    const messageId = given ?? this.env.newId();
    if (!this.inbox.receive({ text, messageId, ...(sentBy === undefined ? {} : { sentBy }) })) {
      this.env.log.info('Ignored a user message already received', { conversationId: this.conversationId, messageId });
      return false;
    }
    return this.onNewMessage === 'interrupt' && this.stopTurn(STOP_REASONS.interruptedByMessage);
  }

  /**
   * The user asked to cancel the turn. Returns true when the running turn
   * stops (the edge cancels it). Messages received but not yet taken into a
   * turn make their turn start cancelled (also while a turn that already has
   * its outcome writes its end); with neither, nothing happens.
   */
  cancelTurn(request?: CancelTurnRequest): boolean {
    const unstorable = describeUnstorableCancel(request);
    if (unstorable) return this.refuse('cancelTurn signal', unstorable);
    const why = request?.reason ? `${STOP_REASONS.cancelledByUser} (${request.reason})` : STOP_REASONS.cancelledByUser;
    // A turn that has its record only writes its end: the cancel is for the turn of a message that waits, if any.
    if (this.turnActive && this.turnRecorded && this.inbox.length > 0 && this.env.allows('cancel-while-turn-ends-stops-next-turn')) {
      this.cancelNextTurn ??= why;
      return false;
    }
    if (this.turnActive) return this.stopTurn(why);
    if (this.inbox.length > 0 && !this.stopReason) this.stopReason = why;
    else this.env.log.info('cancelTurn received while no turn runs; nothing to cancel', { conversationId: this.conversationId });
    return false;
  }

  /** The conversation ends once the current turn and queued messages are done. */
  end(): void {
    this.ending = true;
  }

  /** True when there is something to do: a message to answer, or the conversation to end. */
  hasWork(): boolean {
    return this.inbox.length > 0 || this.ending;
  }

  /** Takes every queued message into a new turn and returns them to store; undefined when none is queued (the conversation ends). */
  takeTurn(): StoreEntry[] | undefined {
    if (this.inbox.length === 0) return undefined;
    const taken = this.inbox.take(TURN_INPUT_MAX_BYTES);
    this.turnActive = true;
    this.turnMessageIds = taken.map((m) => m.messageId);
    this.turnFirstSeq = this.writes.nextSeq;
    this.turnRequesters = [...new Set([...(this.input.calledBy?.requestedBy ?? []), ...taken.flatMap((m) => (m.sentBy === undefined ? [] : [m.sentBy]))])];
    return taken.map((m) => ({ message: { role: 'user', content: m.text } }));
  }

  /** The system prompt to store first, in the conversation's first run only. */
  systemMessage(): StoreEntry | undefined {
    return this.input.systemPrompt && !this.input.carried ? { message: { role: 'system', content: this.input.systemPrompt } } : undefined;
  }

  /**
   * Gives messages the next seqs and queues them for writing (by reference
   * when an activity stored the body): the next model call writes them
   * first, or the next flush ({@link takeWrites}). Returns the first seq.
   */
  store(entries: readonly StoreEntry[]): number {
    const first = this.writes.nextSeq;
    this.writes.add(entries.map(({ message, ref }) => (ref ? { ref } : { message })));
    entries.forEach(({ message, ref }, i) => {
      const meta = describeMessage(first + i, message);
      this.messages.push(ref?.kind === 'model_response' ? { ...meta, responseKey: ref.key } : meta);
    });
    return first;
  }

  /** Takes every unwritten message for a flush: before anyone may read them. Call {@link writesDone} when the write ends. */
  takeWrites(): AppendEntry[] {
    return this.writes.takeForFlush();
  }

  /** A flush's write ended (written, or given up). */
  writesDone(): void {
    this.writes.flushed();
  }

  /**
   * PostgreSQL refused to store some of `entries` (a value no retry can fix;
   * text it cannot hold is replaced before any write, so this should not
   * happen). Returns what to write next: notes in place of the refused
   * messages, with the same roles and tool-call ids so every call keeps its
   * result; nothing when `entries` were such notes already (the transcript
   * then lacks them, and `lastError` says so).
   */
  writeRefused(entries: readonly AppendEntry[], refusal: { message: string; refusedSeqs: readonly number[] }): AppendEntry[] {
    const seqs = refusal.refusedSeqs.length > 0 ? [...refusal.refusedSeqs] : entries.map((e) => e.seq);
    if (seqs.every((seq) => this.notes.has(seq))) {
      this.notesNotStored(seqs, refusal.message);
      return [];
    }
    return this.messagesNotStored(seqs, refusal.message);
  }

  /**
   * PostgreSQL refused to store the messages at `seqs` (a value no retry can
   * fix; text it cannot hold is replaced before any write, so this should not
   * happen). Returns what to store in their place: the same roles and
   * tool-call ids, so every call keeps its result, with a note instead of the
   * body, at their seqs. `lastError` says so, also when the turn goes on to answer.
   */
  private messagesNotStored(seqs: readonly number[], error: string): { seq: number; message: ChatMessage }[] {
    const why = toStorableText(error);
    this.storeProblem = `PostgreSQL refused to store message${seqs.length === 1 ? '' : 's'} ${seqs.join(', ')}, stored a note in their place: ${why}`;
    this.lastError = this.storeProblem;
    this.env.log.warn(this.storeProblem, { conversationId: this.conversationId });
    return seqs.flatMap((seq) => {
      const index = this.messages.findIndex((m) => m.seq === seq);
      if (index < 0) return [];
      const meta = this.messages[index];
      const content = notStoredContent(meta.role, why);
      const message: ChatMessage =
        meta.role === 'tool'
          ? { role: 'tool', tool_call_id: meta.toolCallId ?? '', content }
          : meta.role === 'assistant'
            ? {
                role: 'assistant',
                content,
                ...(meta.toolCalls
                  ? { tool_calls: meta.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: '{}' } })) }
                  : {}),
              }
            : { role: meta.role, content };
      this.messages[index] = describeMessage(seq, message);
      this.notes.add(seq);
      return [{ seq, message }];
    });
  }

  /** PostgreSQL refused to store the notes of {@link messagesNotStored} too: the messages are missing from the stored transcript. */
  private notesNotStored(seqs: readonly number[], error: string): void {
    this.storeProblem = `PostgreSQL refused to store message${seqs.length === 1 ? '' : 's'} ${seqs.join(', ')} and the notes in their place (${toStorableText(error)}); the stored transcript lacks them, so later model calls fail until they are stored`;
    this.lastError = this.storeProblem;
    this.env.log.warn(this.storeProblem, { conversationId: this.conversationId });
  }

  /** PostgreSQL refused the record of an applied decision (the decision still applies; only the record for people is missing). */
  decisionNotRecorded(record: DecisionRecord, error: string): void {
    this.storeProblem = `PostgreSQL refused the record of decision ${record.decisionId} (${record.decision} ${record.toolCallIds.join(', ')}); it applied, only its record is missing: ${toStorableText(error)}`;
    this.lastError = this.storeProblem;
    this.env.log.warn(this.storeProblem, { conversationId: this.conversationId });
  }

  /** The turn's messages are stored and it starts. Returns true when it was stopped already (it starts cancelled). */
  beginTurn(): boolean {
    this.phase = 'running';
    this.turnSteps = 0;
    this.turnOutputRetries = 0;
    this.turns++;
    this.callNumbers.clear();
    this.turnUsage = undefined;
    this.turnCost = { usd: 0, unpriced: 0 };
    this.turnToolset = undefined;
    this.turnHandoffs = 0;
    return this.stopReason !== undefined;
  }

  /**
   * What to discover before the turn's first model call: the tools of the
   * conversation's MCP servers. Undefined for conversations without MCP
   * servers (no activity, so no command), and once the turn has its list.
   */
  toolDiscovery(): ToolDiscoveryInput | undefined {
    const servers = this.input.mcpServers ?? [];
    if (servers.length === 0 || this.turnToolset !== undefined) return undefined;
    return { conversationId: this.conversationId, servers, ...(this.input.tools ? { tools: this.input.tools } : {}) };
  }

  /** The summary of the discovery activity: `tools of MCP servers crm, tickets for turn 3`. */
  toolDiscoverySummary(): string {
    return toolDiscoverySummary(this.input.mcpServers ?? [], this.turns);
  }

  /** The turn's MCP tools were listed and stored: its model and tool calls carry the reference. */
  toolsDiscovered(result: ToolDiscoveryResult): void {
    this.turnToolset = result.toolset;
    for (const problem of result.skipped) this.env.log.warn(problem, { conversationId: this.conversationId });
  }

  /** The MCP servers' tools could not be listed: the turn fails, before any model call, saying why. */
  toolDiscoveryFailed(error: string): TurnRecord {
    return this.record('failed', { error: `Could not list the tools of the conversation's MCP servers: ${error}` });
  }

  /**
   * The next model call: the transcript so far by reference, with the
   * unwritten messages it writes first, tools off once the turn reached maxSteps.
   */
  modelRequest(): ModelCallInput {
    const append = this.writes.forModelCall();
    return {
      conversationId: this.conversationId,
      throughSeq: this.writes.nextSeq - 1,
      ...this.modelView(),
      settings: this.input.model ?? {},
      tools: this.input.tools,
      toolChoice: this.turnSteps >= this.maxSteps ? 'none' : 'auto',
      ...(this.turnToolset ? { toolset: this.turnToolset } : {}),
      ...(append ? { append } : {}),
      ...(this.agent !== undefined ? { agent: this.agent } : {}),
      ...(this.input.output ? { output: this.input.output } : {}),
      ...(this.turnSteps === 0 ? { turnFromSeq: this.turnFirstSeq } : {}),
    };
  }

  /** The model call failed for good: the turn fails. */
  modelFailed(error: string): TurnRecord {
    return this.record('failed', { error: `Model call failed: ${error}` });
  }

  /**
   * The model answered (and wrote the messages it was given). Its answer is
   * stored by reference; its calls are pending from now on (whatever ends the
   * turn settles them), each with the effect key of its call instance; calls
   * asked for past maxSteps, or that cannot run, are settled at once as
   * `tool_failed`. Returns the turn's end, or the calls to run.
   */
  modelAnswered(result: ModelCallResult): AfterAnswer {
    this.writes.modelCallAnswered();
    const calls = result.message.tool_calls ?? [];
    const overLimit = this.turnSteps >= this.maxSteps && calls.length > 0;
    this.turnSteps++;
    this.steps++;
    if (result.usage) {
      const sum = this.turnUsage ?? { promptTokens: 0, completionTokens: 0 };
      this.turnUsage = { promptTokens: sum.promptTokens + result.usage.promptTokens, completionTokens: sum.completionTokens + result.usage.completionTokens };
      this.usage.promptTokens += result.usage.promptTokens;
      this.usage.completionTokens += result.usage.completionTokens;
      if (result.costUsd === undefined) {
        this.turnCost.unpriced++;
        this.usage.unpricedCalls++;
      } else {
        this.turnCost.usd = roundUsd(this.turnCost.usd + result.costUsd);
        this.usage.costUsd = roundUsd(this.usage.costUsd + result.costUsd);
      }
    }
    const notRun = { reason: 'not_run_max_steps' as const, message: `The turn reached maxSteps (${this.maxSteps}); the call was not run.` };
    // A conversation that named no agent is with the worker's default agent, which names itself in its answers: from now on it stays with that agent.
    if (result.message.name !== undefined && this.agent === undefined) this.agent = result.message.name;
    const seq = this.store([{ message: result.message, ref: { kind: 'model_response', key: result.responseKey } }]);
    this.answerSeq = seq;
    const requested = requestedCalls(this.conversationId, seq, calls, result.calls, overLimit ? notRun : undefined).map((r) => this.withinAgentDepth(r));
    if (calls.length === 0) this.lastAnswer = { responseKey: result.responseKey, text: result.message.content ?? '' };
    this.batch = calls.length === 0 ? undefined : new ToolCallBatch(requested, this.env.now());
    this.batchOverLimit = overLimit;
    if (!this.batch) return this.finalAnswer(result, seq);
    this.takeHandoffs(result.calls);
    return { calls: this.batch.all() };
  }

  /**
   * A final answer (no tool calls). When a typed output was asked for and the
   * answer does not match it, the mismatch is said to the model in a user
   * message and it is asked again (`calls` empty), within the retries the
   * output allows; past them the turn ends as `invalid_output`. Otherwise the
   * turn answered, with its typed output when one was asked for.
   */
  private finalAnswer(result: ModelCallResult, seq: number): AfterAnswer {
    if (result.guardrail) {
      const { on, guardrail, reason } = result.guardrail;
      const error = `The ${on} guardrail "${guardrail}" stopped the turn: ${reason}`;
      return { finished: this.record('guardrail_tripped', { answerSeq: seq, error, guardrail: { ...result.guardrail } }) };
    }
    const check = result.output;
    if (check && !check.ok) {
      const attempts = `${this.turnOutputRetries + 1} of ${check.retries + 1}`;
      if (this.turnOutputRetries >= check.retries) {
        const error = `The model's answer did not match the output schema "${check.schemaName}" (answer ${attempts}): ${check.problem}`;
        return { finished: this.record('invalid_output', { answerSeq: seq, error }) };
      }
      this.turnOutputRetries++;
      this.store([{ message: { role: 'user', content: outputRetryNote(check.schemaName, check.problem, attempts) } }]);
      return { calls: [] };
    }
    const typed = check?.ok ? (check.inAnswer ? { outputInAnswer: true } : { output: check.value }) : {};
    return { finished: this.record('answered', { answerSeq: seq, ...typed }) };
  }

  /**
   * Every call of the open batch is settled: its tool messages are stored, in
   * call order, and it closes (a stopped turn closes it after
   * {@link turnStopped}; nothing happens without one). Returns how its calls
   * ended, for the metrics (the tool's name, or {@link NOT_RUN_TOOL_LABEL} for
   * a call that could never run), and the turn's record when the turn ends
   * here (calls past maxSteps).
   */
  closeBatch(): { settled: { tool: string; outcome: OutcomeKind }[]; finished?: TurnRecord } {
    const batch = this.batch;
    if (!batch) return { settled: [] };
    this.store(
      batch.results().map(({ toolCallId, outcome }) => ({
        message: { role: 'tool', tool_call_id: toolCallId, content: outcome.content },
        ref: outcome.storedResultKey
          ? { kind: 'tool_result', key: outcome.storedResultKey, toolCallId }
          : outcome.storedAnswerKey
            ? { kind: 'agent_answer', key: outcome.storedAnswerKey, toolCallId }
            : undefined,
      })),
    );
    const settled = batch.all().flatMap((c) => (c.outcome ? [{ tool: c.problem ? NOT_RUN_TOOL_LABEL : c.name, outcome: c.outcome.kind }] : []));
    this.lastCalls = batch.all().map((c) => ({
      name: c.name,
      id: c.id,
      outcome: c.outcome?.kind,
      decidedBy: c.decision ? whoDecided(c.decision.decidedBy, c.decision.authenticated) : undefined,
      approved: c.decision?.approved,
      fromLedger: c.outcome?.fromLedger,
    }));
    const overLimit = this.batchOverLimit;
    this.batch = undefined;
    this.below.clear();
    this.batchOverLimit = false;
    this.handOff();
    if (!overLimit) return { settled };
    return {
      settled,
      finished: this.record('failed', { error: `The model asked for tools after the turn reached maxSteps (${this.maxSteps}); the calls were not run.` }),
    };
  }

  /** The summary of the next model call's activity: `model call 2 of turn 5 (gpt-4.1)`. */
  modelCallSummary(): string {
    return modelCallSummary(this.turns, this.turnSteps + 1, this.input.model?.model, this.agent);
  }

  /** The summary of a started call's activity: `issue_refund, call 2 of turn 5, approved by alice`. */
  toolCallSummary(call: BatchCall): string {
    const approvedBy = call.decision?.approved ? whoDecided(call.decision.decidedBy, call.decision.authenticated) : undefined;
    return toolCallSummary(call.name, this.callNumbers.get(call.id) ?? this.callNumbers.size, this.turns, approvedBy);
  }

  /** The summary of a decision record's activity: `record: approve issue_refund (call_1) by alice`. */
  decisionRecordSummary(record: DecisionRecord): string {
    const calls = record.toolCallIds.map((id) => ({ id, name: this.batch?.get(id)?.name ?? 'tool' }));
    return decisionRecordSummary(record.decision, calls, whoDecided(record.decidedBy, record.authenticated));
  }

  /** The summary of the timer of a call's approval deadline. */
  approvalTimerSummary(call: BatchCall): string {
    return approvalTimerSummary(call.name, call.id);
  }

  /** The workflow's current details: what it does or waits for, and how the last calls ended. */
  currentDetails(): string {
    const waiting = [
      ...(this.batch?.awaitingApproval() ?? []).map((c) => ({ name: c.name, id: c.id, since: c.requestedAt })),
      ...this.waitingBelow().map((b) => ({ name: `${b.toolName} (in ${b.agentPath.join(' > ')})`, id: b.toolCallId, since: Date.parse(b.requestedAt) })),
    ];
    const status = { idle: 'Idle', running: 'Running a turn', awaiting_approval: 'Waiting for approval', failed: 'Last turn failed', closed: 'Ended' }[
      this.status()
    ];
    return currentDetails({ status, turn: this.turns, waiting }, this.lastCalls);
  }

  /** For each of the calls, its tool and how long it has waited for a decision (ms, workflow time). */
  approvalWaits(ids: readonly string[]): { tool: string; waitedMs: number }[] {
    return ids.flatMap((id) => {
      const call = this.batch?.get(id);
      return call ? [{ tool: call.name, waitedMs: Math.max(this.env.now() - call.requestedAt, 0) }] : [];
    });
  }

  /**
   * The turn was cancelled (by {@link receiveUserMessage} or {@link cancelTurn},
   * or the whole workflow): running calls settle as `interrupted`, calls not
   * started as `cancelled`, finished results are kept. The edge then closes
   * the batch ({@link closeBatch}). Returns the turn's record.
   */
  turnStopped(workflowCancelled: boolean): TurnRecord {
    const why = workflowCancelled ? STOP_REASONS.workflowCancelled : (this.stopReason ?? STOP_REASONS.cancelledByUser);
    this.batch?.interrupt(why);
    const interrupted = this.stopReason === STOP_REASONS.interruptedByMessage && !workflowCancelled;
    return this.record(interrupted ? 'interrupted' : 'cancelled', { error: why });
  }

  /** The turn is over: keeps its record for clients, sets the status. */
  finishTurn(record: TurnRecord): void {
    this.turnActive = false;
    this.turnRecorded = false;
    this.stopReason = this.cancelNextTurn;
    this.cancelNextTurn = undefined;
    this.recentTurns.push(record);
    if (this.recentTurns.length > RECENT_TURNS_KEPT) this.recentTurns.shift();
    if (record.outcome === 'failed' || record.outcome === 'invalid_output')
      this.lastError = [record.error, this.storeProblem].filter(Boolean).join(' Before that: ');
    else if (record.outcome === 'answered') this.lastError = this.storeProblem;
    this.storeProblem = undefined;
    this.phase = record.outcome === 'failed' ? 'failed' : 'idle';
  }

  /** The conversation ended (or was cancelled). */
  close(): void {
    this.phase = 'closed';
  }

  /** True while the call waits for a person's decision. */
  awaitsApproval(call: BatchCall): boolean {
    return call.phase === 'awaiting_approval';
  }

  /** How long the call may still wait for its decision, ms (at least 1). */
  approvalWaitMs(call: BatchCall): number {
    return Math.max(this.approvalTimeoutMs - (this.env.now() - call.requestedAt), 1);
  }

  /**
   * The call's approval deadline passed and no decision being verified can
   * still apply to it: when it still waits, every call of the batch still
   * waiting settles as `approval_timeout`. Returns true when some did.
   */
  approvalDeadlinePassed(call: BatchCall): boolean {
    if (!this.awaitsApproval(call)) return false;
    return (this.batch?.timeOutApprovals() ?? []).length > 0;
  }

  /**
   * True while the decision of a signal or an update is being verified by an
   * activity: it was sent in time for the calls it names, so their deadline
   * waits for its verdict (a decision sent in time counts even when its
   * worker handles it after the deadline).
   */
  decisionsVerifying(): boolean {
    return this.verifying > 0;
  }

  /**
   * A decision's verification began ({@link decisionsVerifying}), for the
   * calls `ids` as {@link checkDecision} found them. Returns their call
   * instances (effect keys): the scope to check the decision against again
   * once it is verified.
   */
  verificationStarted(ids: readonly string[]): string[] {
    this.verifying++;
    return this.decisionScope(ids);
  }

  /** A decision's verification ended, with a verdict or none. */
  verificationEnded(): void {
    this.verifying = Math.max(this.verifying - 1, 0);
  }

  /** True when the call may run now (approved, or it needs no approval). */
  isReady(call: BatchCall): boolean {
    return call.phase === 'ready';
  }

  /** The call's activity is being scheduled: from now on a stop settles it as `interrupted`. Returns the activity's input. */
  startCall(call: BatchCall): ToolCallInput {
    this.batch?.markRunning(call.id);
    this.callNumbers.set(call.id, this.callNumbers.size + 1);
    const edited = call.decision?.kind === 'edit' ? call.decision.arguments : undefined;
    return {
      conversationId: this.conversationId,
      toolCallId: call.id,
      name: call.name,
      arguments: edited ?? call.arguments,
      idempotencyKey: call.key,
      ...(this.turnToolset ? { toolset: this.turnToolset } : {}),
      ...(edited !== undefined ? { edited: { ...(call.decision?.decidedBy ? { by: call.decision.decidedBy } : {}), modelArguments: call.arguments } } : {}),
    };
  }

  /**
   * What the decision's verification activity checks: its signature, and for
   * an `edit` that the new arguments fit the tool of the call it decides
   * (`ids`, as {@link checkDecision} found them).
   */
  verificationInput(decision: ApprovalDecision, ids: readonly string[]): VerifyDecisionInput {
    const call = decision.decision === 'edit' ? this.batch?.get(ids[0]) : undefined;
    const edit = call
      ? { toolName: call.name, ...(this.turnToolset ? { toolset: this.turnToolset } : {}), ...(this.agent !== undefined ? { agent: this.agent } : {}) }
      : undefined;
    return { conversationId: this.conversationId, decision, ...(edit ? { edit } : {}) };
  }

  /**
   * The child conversation that runs a started call of an agent as a tool
   * (see {@link SubAgentStart}): the agent, the task the model gave, and this
   * conversation's settings, which it inherits (its model, limits, budget,
   * timeouts and search attributes, each its own to spend).
   */
  subAgentStart(call: BatchCall): SubAgentStart {
    const agent = call.subAgent ?? '';
    let task: unknown;
    try {
      task = (JSON.parse(call.arguments) as { input?: unknown }).input;
    } catch {
      task = undefined;
    }
    const index = this.batch?.all().indexOf(call) ?? 0;
    const caller = this.input.calledBy;
    const i = this.input;
    const inherited: ConversationInput = {
      ...(i.model ? { model: i.model } : {}),
      ...(i.timeouts ? { timeouts: i.timeouts } : {}),
      ...(i.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: i.approvalTimeoutMs } : {}),
      ...(i.maxSteps !== undefined ? { maxSteps: i.maxSteps } : {}),
      ...(i.maxHandoffsPerTurn !== undefined ? { maxHandoffsPerTurn: i.maxHandoffsPerTurn } : {}),
      ...(i.maxAgentDepth !== undefined ? { maxAgentDepth: i.maxAgentDepth } : {}),
      ...(i.localActivities ? { localActivities: i.localActivities } : {}),
      ...(i.mcpServers ? { mcpServers: i.mcpServers } : {}),
      ...(i.budget ? { budget: i.budget } : {}),
      ...(i.searchAttributes ? { searchAttributes: i.searchAttributes } : {}),
    };
    return {
      workflowId: `${this.conversationId}~${agent}~${this.answerSeq}-${index}`,
      input: {
        ...inherited,
        agent,
        calledBy: {
          conversationId: this.conversationId,
          rootConversationId: caller?.rootConversationId ?? this.conversationId,
          callKey: call.key,
          toolName: call.name,
          path: [...(caller?.path ?? [this.agent ?? 'agent']), agent],
          requestedBy: [...this.turnRequesters],
          task: typeof task === 'string' ? task : String(task ?? ''),
        },
      },
      summary: `${agent} agent for ${this.toolCallSummary(call)}`,
      ...(call.timeoutMs > 0 ? { timeoutMs: call.timeoutMs } : {}),
    };
  }

  /**
   * The child conversation of a call of an agent as a tool ended: its answer
   * (in full, by reference) is the call's result; a turn that did not answer
   * settles the call as `tool_failed`, saying why.
   */
  subAgentEnded(call: BatchCall, summary: ConversationSummary): void {
    if (!this.isOpen(call)) return;
    const turn = summary.lastTurn;
    if (turn?.outcome === 'answered' && turn.answer) {
      this.batch!.settle(call.id, { kind: 'ok', content: turn.answer.text, storedAnswerKey: turn.answer.responseKey });
      return;
    }
    const why = turn ? `its turn ended as ${turn.outcome}${turn.error ? `: ${turn.error}` : ''}` : 'it ended without a turn';
    this.batch!.settle(call.id, {
      kind: 'tool_failed',
      content: toolFailedContent(`The ${call.subAgent} agent did not answer (${summary.conversationId}): ${why}`),
    });
  }

  /** The tool reported its result. */
  callSucceeded(call: BatchCall, result: ToolCallResult): void {
    if (this.isOpen(call)) {
      this.batch!.settle(call.id, {
        kind: 'ok',
        content: result.content,
        storedResultKey: result.storedResultKey,
        ...(result.fromLedger ? { fromLedger: true } : {}),
      });
    }
  }

  /**
   * The call's activity failed. A tool that is not idempotent whose run was
   * cut off settles as `effect_unknown` (and is kept for operators); any
   * other failure as `tool_failed`. Returns the outcome.
   */
  callFailed(call: BatchCall, failure: ToolFailure): OutcomeKind | undefined {
    if (!this.isOpen(call)) return undefined;
    if (call.idempotent === false && failure.cutOff) {
      this.batch!.settle(call.id, { kind: 'effect_unknown', content: effectUnknownContent(failure.cutOff) });
      this.noteUnknownEffect(call, failure.cutOff);
      return 'effect_unknown';
    }
    this.batch!.settle(call.id, { kind: 'tool_failed', content: toolFailedContent(failure.message, failure.reason) });
    return 'tool_failed';
  }

  /**
   * Checks a decision against the pending calls without applying it. Returns
   * the calls it decides, or why it is refused. A decision id already applied
   * returns that decision's calls (applying it again changes nothing).
   *
   * `scope`: the call instances (keys, as {@link verificationStarted} returned them) it was checked
   * against before its verification. Checked again after it, it decides those
   * calls only: a turn that ended meanwhile may have left calls of a later
   * batch waiting under the same ids, which nobody decided on.
   */
  checkDecision(decision: ApprovalDecision, scope?: readonly string[]): { ids: string[] } | { refusal: string } {
    const shape = describeBadDecision(decision);
    if (shape) return { refusal: shape };
    const oversized = describeOversizedDecision(decision);
    if (oversized) return { refusal: oversized };
    const unstorable = describeUnstorableDecision(decision);
    if (unstorable) return { refusal: unstorable };
    const earlier = this.decisions.get(decision.decisionId);
    if (earlier) return { ids: earlier.toolCallIds };
    const batch = this.batch;
    if (!batch) {
      return {
        refusal: decision.toolCallId
          ? `No tool call "${decision.toolCallId}" is pending in conversation ${this.conversationId}.`
          : `No tool call is waiting for approval in conversation ${this.conversationId}.`,
      };
    }
    const checked = batch.checkDecision(decision.toolCallId, decision.callKey);
    if (!('ids' in checked)) return { refusal: `${checked.message} (conversation ${this.conversationId})` };
    const kindRefused = batch.refusedKind(checked.ids, decision.decision);
    if (kindRefused) return { refusal: `${kindRefused} Nothing was decided; the call still waits (conversation ${this.conversationId}).` };
    // It counts when sent before the deadline and arriving while the call still waits.
    const sentAt = decision.sentAt === undefined ? this.env.now() : Date.parse(decision.sentAt);
    const timely = batch.inTime(checked.ids, sentAt, this.approvalTimeoutMs, decision.sentAt !== undefined);
    if (!('ids' in timely)) return { refusal: timely.message };
    if (!scope) return timely;
    const kept = timely.ids.filter((id) => scope.includes(batch.get(id)?.key ?? ''));
    if (kept.length === timely.ids.length || !this.env.allows('decision-keeps-its-calls')) return timely;
    if (kept.length > 0) return { ids: kept };
    return {
      refusal:
        `The calls this decision was for (${scope.join(', ')}) no longer wait: their turn ended while the decision was being verified, ` +
        `and the calls waiting now (${timely.ids.join(', ')}) are others. Nothing was decided; decide the waiting calls by their ids and keys (conversation ${this.conversationId}).`,
    };
  }

  /** The call instances (effect keys) of checked decision ids: what the decision, checked again after its verification, may still decide. */
  private decisionScope(ids: readonly string[]): string[] {
    return ids.map((id) => this.batch?.get(id)?.key ?? '');
  }

  /** Throws an error saying why when {@link checkDecision} refuses the decision: an update's validator, which refuses it before it is accepted. */
  validateDecision(decision: ApprovalDecision): void {
    const checked = this.checkDecision(decision);
    if ('refusal' in checked) throw new Error(checked.refusal);
  }

  /**
   * Applies a checked decision, once per decision id: approved calls become
   * ready, rejected ones settle as `rejected`. Returns what it did, and the
   * record to store when it was applied now.
   */
  applyDecision(
    decision: ApprovalDecision,
    ids: string[],
    via: 'signal' | 'update',
    authenticated?: boolean,
  ): { result: DecisionResult; record?: DecisionRecord } {
    const earlier = this.decisions.get(decision.decisionId);
    if (earlier) return { result: { ...earlier, applied: false } };
    const decidedAt = this.env.now();
    const approved = decision.decision === 'approve' || decision.decision === 'edit';
    const edited = decision.decision === 'edit' && decision.arguments ? JSON.stringify(decision.arguments) : undefined;
    const modelArguments = edited === undefined ? undefined : this.batch?.get(ids[0])?.arguments;
    this.batch?.decide(ids, {
      decisionId: decision.decisionId,
      approved,
      ...(decision.decision === 'edit' ? { kind: 'edit' as const, arguments: edited } : {}),
      ...(decision.decision === 'respond' ? { kind: 'respond' as const, response: decision.response } : {}),
      reason: decision.reason,
      decidedBy: decision.decidedBy,
      ...(authenticated === undefined ? {} : { authenticated }),
      decidedAt,
    });
    const result: DecisionResult = { decisionId: decision.decisionId, applied: true, toolCallIds: ids };
    this.decisions.set(decision.decisionId, result);
    const record: DecisionRecord = {
      conversationId: this.conversationId,
      decisionId: decision.decisionId,
      decision: decision.decision,
      toolCallIds: ids,
      callKeys: ids.map((id) => this.batch?.get(id)?.key ?? ''),
      reason: decision.reason,
      decidedBy: decision.decidedBy,
      decidedAt,
      via,
      ...(edited !== undefined ? { arguments: edited, modelArguments } : {}),
      ...(decision.decision === 'respond' ? { response: decision.response } : {}),
      ...(authenticated === undefined ? {} : { authenticated }),
    };
    return { result, record };
  }

  /** A decision signal was refused: a signal gets no answer, so the refusal is kept in the state for its sender. */
  refuseDecision(decision: unknown, problem: string): void {
    const fields = (typeof decision === 'object' && decision !== null ? decision : {}) as Record<string, unknown>;
    const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
    this.refusedDecisions.push({ decisionId: text(fields.decisionId), toolCallId: text(fields.toolCallId), problem });
    if (this.refusedDecisions.length > REFUSED_DECISIONS_KEPT) this.refusedDecisions.shift();
    this.refuse('decision signal', problem);
  }

  /**
   * Whether to continue as new now, between turns, given the run's history
   * (the workflow's `workflowInfo()`): past {@link continueAsNewAfterEvents}
   * events or when the server suggests it, unless more queued messages wait
   * than a run carries (they are answered first).
   */
  shouldContinueAsNew(history: { historyLength: number; continueAsNewSuggested: boolean }): boolean {
    if (this.input.calledBy) return false; // it ends after its one turn, returning what a new run would not carry
    if (!(history.continueAsNewSuggested || history.historyLength >= this.continueAsNewAfterEvents)) return false;
    return this.inbox.bytes() <= CARRIED_INBOX_MAX_BYTES;
  }

  /** The state the next run starts from. Called only between turns: no call is pending. */
  carryOver(): CarriedConversation {
    const inbox = this.inbox.carry();
    return {
      nextSeq: this.writes.nextSeq,
      steps: this.steps,
      transcriptRepairs: this.transcriptRepairs,
      lastError: this.lastError,
      phase: this.phase === 'failed' ? 'failed' : 'idle',
      recentTurns: this.recentTurns.map((t) => ({ ...t })),
      receivedMessageIds: inbox.receivedMessageIds,
      decisions: [...this.decisions.values()].slice(-DEDUP_MEMORY),
      refusedDecisions: this.refusedDecisions.map((r) => ({ ...r })),
      inbox: inbox.inbox,
      pendingCancel: this.stopReason,
      ending: this.ending,
      runs: this.runs,
      turns: this.turns,
      usage: { ...this.usage },
      unknownEffects: { count: this.unknownEffectsCount, recent: this.unknownEffects.map((u) => ({ ...u })) },
      ...(this.agent !== this.input.agent ? { agent: this.agent } : {}),
    };
  }

  /** The calls this conversation waits on a person for: its own, and those below its agents called as tools. */
  private pendingCount(): number {
    return (this.batch?.awaitingApproval().length ?? 0) + this.waitingBelow().length;
  }

  private record(outcome: TurnRecord['outcome'], extra: Pick<TurnRecord, 'error' | 'answerSeq' | 'output' | 'outputInAnswer' | 'guardrail'>): TurnRecord {
    this.turnRecorded = true;
    const requestedBy = this.turnRequesters.length > 0 ? { requestedBy: [...this.turnRequesters] } : {};
    const usage = this.turnUsage ? { ...this.turnUsage, ...(this.turnCost.unpriced === 0 ? { costUsd: this.turnCost.usd } : {}) } : undefined;
    return {
      messageIds: this.turnMessageIds,
      firstSeq: this.turnFirstSeq,
      outcome,
      steps: this.turnSteps,
      ...requestedBy,
      ...extra,
      ...(usage ? { usage } : {}),
    };
  }

  /** Stops the turn taken (also one about to start). Returns true when the edge should cancel it now. */
  private stopTurn(why: string): boolean {
    if (!this.turnActive || this.stopReason) return false;
    this.stopReason = why;
    return true;
  }

  private refuse(what: string, problem: string): false {
    this.lastError = `Ignored a ${what}: ${problem}`;
    this.env.log.warn(this.lastError, { conversationId: this.conversationId });
    return false;
  }

  /** True when the call belongs to the open batch (a call of a closed batch changes nothing). */
  private isOpen(call: BatchCall): boolean {
    if (this.batch?.all().includes(call)) return true;
    this.env.log.warn('A result arrived for a call whose batch is closed; ignored', { conversationId: this.conversationId, toolCallId: call.id });
    return false;
  }

  /**
   * Settles the handoffs of the answer just stored, at once (no activity runs
   * one): the first within the turn's limit gets its result and moves the
   * conversation to its agent when the batch closes, after the response's
   * other calls (run, or waited on for a person: a handoff cancels nothing);
   * any other is refused with a result saying why.
   */
  private takeHandoffs(plans: readonly ToolCallPlan[]): void {
    for (const plan of plans) {
      const call = plan.handoff === undefined ? undefined : this.batch?.get(plan.toolCallId);
      if (!call || call.phase === 'settled' || plan.handoff === undefined) continue;
      const refusal =
        this.nextAgent !== undefined
          ? `Only the first handoff of a response is taken (to ${this.nextAgent}); this one was ignored.`
          : this.turnHandoffs >= this.maxHandoffsPerTurn
            ? `This turn made ${this.turnHandoffs} handoffs, its limit (maxHandoffsPerTurn); the conversation stays with agent ${this.agent}, which should answer now.`
            : undefined;
      if (refusal) {
        this.batch!.settle(call.id, { kind: 'tool_failed', content: toolFailedContent(refusal, 'handoff_refused') });
        continue;
      }
      this.nextAgent = plan.handoff;
      this.batch!.settle(call.id, { kind: 'ok', content: handoffContent(plan.handoff) });
    }
  }

  /** The batch closed: a handoff it made takes effect, whatever closed it (its result is stored, so the next model call must see the new agent). */
  private handOff(): void {
    const next = this.nextAgent;
    if (next === undefined) return;
    this.env.log.info('Handed the conversation to another agent', { conversationId: this.conversationId, from: this.agent, to: next });
    this.agent = next;
    this.nextAgent = undefined;
    this.turnHandoffs++;
  }

  /** A call of an agent as a tool past {@link ConversationInput.maxAgentDepth} cannot run: it is settled at once, saying why. */
  private withinAgentDepth<T extends { subAgent?: string; problem?: { reason: ToolFailureReason; message: string } }>(call: T): T {
    const depth = (this.input.calledBy?.path.length ?? 1) - 1;
    if (call.subAgent === undefined || call.problem || depth < this.maxAgentDepth) return call;
    return {
      ...call,
      problem: {
        reason: 'agent_too_deep',
        message: `Agents called as tools nest at most ${this.maxAgentDepth} deep (maxAgentDepth), and this one is ${depth} deep (${this.input.calledBy?.path.join(' > ')}); do the task here.`,
      },
    };
  }

  /** Keeps a call whose effect is unknown for operators: the state lists it, the search attribute counts it. */
  private noteUnknownEffect(call: BatchCall, why: string): void {
    this.unknownEffectsCount++;
    this.unknownEffects.push({ toolCallId: call.id, callKey: call.key, toolName: call.name, why, settledAt: new Date(this.env.now()).toISOString() });
    if (this.unknownEffects.length > UNKNOWN_EFFECTS_KEPT) this.unknownEffects.shift();
    this.env.log.warn('A tool that is not idempotent did not report back; its effect is unknown', {
      conversationId: this.conversationId,
      toolCallId: call.id,
      callKey: call.key,
      tool: call.name,
      why,
    });
  }

  /** Checks the pairing rules on the transcript the model is about to see; repairs if needed (it should never be). */
  private modelView(): Pick<ModelCallInput, 'omitSeqs' | 'synthesized'> {
    // Earlier runs ended settled, so checking this run's messages covers everything still open.
    const { problems, omitSeqs, synthesized } = planStoredRepair(this.messages);
    if (problems.length > 0) {
      this.transcriptRepairs++;
      this.env.log.warn('Transcript broke the pairing rules before a model call; repaired it (this is a bug)', {
        conversationId: this.conversationId,
        problems,
      });
    }
    return { omitSeqs, synthesized };
  }
}

/** A call of the open batch as the state shows it: settled ones with their outcome (the result's text, a preview when long). */
function describeOpenCall(call: BatchCall): OpenCall {
  return {
    callKey: call.key,
    toolCallId: call.id,
    toolName: call.name,
    ...(call.outcome ? { outcome: { kind: call.outcome.kind, content: call.outcome.content } } : {}),
  };
}

/** The user message that asks the model again after an answer that did not match the typed output. */
function outputRetryNote(schemaName: string, problem: string, attempts: string): string {
  return (
    `[output check] Your answer (${attempts}) does not match the required output schema "${schemaName}":\n${problem}\n` +
    'Answer again with only a JSON value that matches the schema, nothing else.'
  );
}
