import type { AppendEntry, ApprovalRequest, ModelCallInput, ModelCallResult, ToolCallPlan } from '../../src/contract/activities';
import type { BatchCall } from '../../src/core/batch';
import type { ApprovalDecision, ConversationInput, ConversationSummary, DecisionKind, TokenUsage, TurnRecord } from '../../src/contract';
import { ConversationCore, type CoreEnvironment, type SearchAttributeValues, type ToolFailure } from '../../src/core/conversation';
import type { ChatMessage } from '../../src/contract/messages';

/**
 * A synchronous stand-in for the workflow edge, for tests of the pure core.
 *
 * It sequences the core's methods the way `src/workflows/conversation.ts`
 * does (take a turn, store, ask the model, which writes what is unwritten
 * first, flush before a wait for a person and at a turn's end, run ready
 * calls, close the batch, settle on a stop; decisions checked, verified and
 * checked again), with every activity finishing when the test says so and an
 * in-memory list for what PostgreSQL holds. A flush can be held open
 * (`holdFlushes`) and a decision's verification left in flight
 * (`decide(..., { verified: false })`), so tests see the state between. It
 * holds no rule of its own: outcomes, decisions, the inbox, limits, writes
 * and carry-over are the core's.
 */
export class CoreDriver {
  core: ConversationCore;
  /** What PostgreSQL holds, by seq (written by model calls and flushes). */
  readonly stored: ChatMessage[] = [];
  /** Where the edge is: between turns, waiting for the model, writing before a wait for a person, or running a batch's calls. */
  stage: 'idle' | 'model' | 'flushing' | 'calls' = 'idle';
  /** The calls of the open batch. */
  calls: readonly BatchCall[] = [];
  /** The calls of batches already closed. */
  readonly closedCalls: BatchCall[] = [];
  /** The last model request. */
  request: ModelCallInput | undefined;
  /** Times each call (by effect key) was started. */
  readonly starts = new Map<string, number>();
  /** Every finished turn's record, in order. */
  readonly turns: TurnRecord[] = [];
  /** The search attribute values as last published. */
  published: Omit<SearchAttributeValues, 'unknownEffects'> & { unknownEffects: number } = {
    status: 'idle',
    pendingApprovals: 0,
    unknownEffects: 0,
    approvals: { tags: [], since: null },
  };
  /** Every change the core published (each one `upsertSearchAttributes` command of the workflow), in order. */
  readonly upserts: SearchAttributeValues[] = [];
  /** The calls listed for approvers (the waiting calls written with the flush before a wait). */
  readonly listed: ApprovalRequest[] = [];
  /** Hold the next flush open until {@link completeFlush} (a write that takes time). */
  holdFlushes = false;
  /** Flushes held open so far. */
  flushesHeld = 0;
  /** PostgreSQL refuses the first message of the next write (a value no retry can fix): the core's notes take its place. */
  refuseNextWrite = false;
  /** The seqs PostgreSQL refused, in order. */
  readonly refusedSeqs: number[] = [];
  /** A flush taken and not yet written: its messages, and what follows it. */
  private heldFlush: { entries: AppendEntry[]; waiting?: ApprovalRequest[]; then: () => void } | undefined;
  /** The flush of a turn's end is under way (outside the turn's scope: a stop finds nothing to stop). */
  private endingTurn = false;
  /** Decisions whose verification is in flight: they apply (or not) at {@link verdict}. */
  readonly verifying: { decision: ApprovalDecision; via: 'signal' | 'update'; scope: string[] }[] = [];
  closed = false;
  clock = Date.parse('2026-11-23T10:00:00.000Z');
  readonly warnings: string[] = [];
  private ids = 0;
  /** Model answers by response key: what a message stored by reference is. */
  private readonly responses = new Map<string, ChatMessage>();
  readonly env: CoreEnvironment = {
    now: () => this.clock,
    newId: () => `generated-${++this.ids}`,
    log: { info: () => undefined, warn: (message) => void this.warnings.push(message) },
    allows: (patchId) => {
      this.asked.push(patchId);
      return !this.before.includes(patchId);
    },
  };
  /** Every patch the core asked about, in order. */
  readonly asked: string[] = [];
  /** Patches this run predates (the core keeps the old rule for them). */
  before: string[] = [];

  /** `before`: patches the run predates from its start (its first publish included). */
  constructor(
    readonly input: ConversationInput = {},
    readonly conversationId = 'conv-1',
    before: readonly string[] = [],
  ) {
    this.before = [...before];
    this.core = new ConversationCore(conversationId, input, this.env);
    this.publish();
    const system = this.core.systemMessage();
    if (system) this.core.store([system]);
  }

  /** Publishes the search attribute changes, as the edge does. */
  publish(): void {
    const changed = this.core.searchAttributeChanges();
    if (!changed) return;
    this.upserts.push(changed);
    this.published = { ...this.published, ...changed };
  }

  /** Moves the edge on as far as it goes without an outside event: new turns, ready calls, settled batches. */
  advance(): void {
    for (;;) {
      if (this.stage === 'idle') {
        if (this.closed || !this.core.hasWork()) return;
        const taken = this.core.takeTurn();
        if (!taken) {
          this.stage = 'flushing';
          this.flush(() => {
            this.core.close();
            this.publish();
            this.closed = true;
            this.stage = 'idle';
          });
          return;
        }
        this.core.store(taken);
        const stoppedAlready = this.core.beginTurn();
        this.publish();
        if (stoppedAlready) {
          // A cancel that came before the turn began (the workflow's turn scope starts cancelled): it stops at once.
          this.stage = 'model';
          this.stop(false);
        } else this.askModel();
        continue;
      }
      if (this.stage !== 'calls') return;
      for (const call of this.calls) {
        if (!this.core.isReady(call)) continue;
        this.core.startCall(call);
        this.starts.set(call.key, (this.starts.get(call.key) ?? 0) + 1);
      }
      if (this.calls.some((c) => c.phase !== 'settled')) return;
      const finished = this.closeBatch();
      if (finished) this.finish(finished);
      else this.askModel();
    }
  }

  /** The model answers the pending request (after writing what it was given); `spent` is what the provider counted and, for a priced model, the call's cost. */
  modelAnswers(
    message: Extract<ChatMessage, { role: 'assistant' }>,
    plans: ToolCallPlan[],
    spent?: { usage: TokenUsage; costUsd?: number },
    /** What the activity found about a final answer: its typed output's check, or the guardrail that stopped the turn. */
    found?: Pick<ModelCallResult, 'output' | 'guardrail'>,
  ): void {
    if (this.stage !== 'model' || !this.request) throw new Error('no model call is pending');
    this.write(this.request.append ?? []);
    // The model activity reads the transcript through throughSeq: every message must be stored by now.
    if (this.stored.length !== this.request.throughSeq + 1 || this.stored.some((m) => m === undefined)) {
      throw new Error(`the model would read ${this.stored.length} stored messages through seq ${this.request.throughSeq}`);
    }
    const responseKey = `resp-${this.stored.length}`;
    this.responses.set(responseKey, message);
    const result: ModelCallResult = {
      message,
      responseKey,
      calls: plans,
      finishReason: 'stop',
      ...(spent ? { usage: spent.usage, ...(spent.costUsd === undefined ? {} : { costUsd: spent.costUsd }) } : {}),
      ...found,
    };
    const next = this.core.modelAnswered(result);
    this.publish();
    if ('finished' in next) return this.finish(next.finished);
    this.calls = next.calls;
    const waiting = this.core.approvalRequests();
    this.stage = 'flushing';
    const run = () => {
      this.stage = 'calls';
      this.advance();
    };
    // Whoever decides may read the transcript: the calls they decide on are written first.
    if (waiting.length > 0) this.flush(run, waiting);
    else run();
  }

  /** The model call failed for good. */
  modelFails(error: string): void {
    if (this.stage !== 'model') throw new Error('no model call is pending');
    this.finish(this.core.modelFailed(error));
  }

  /** The child conversation of a running call of an agent as a tool ends with `summary`. */
  subAgentEnds(call: BatchCall, summary: ConversationSummary): void {
    this.core.subAgentEnded(call, summary);
    this.advance();
  }

  /** A running call's tool reports back. */
  toolReports(call: BatchCall, outcome: { content: string } | ToolFailure): void {
    if ('content' in outcome) this.core.callSucceeded(call, outcome);
    else if (this.core.callFailed(call, outcome) === 'effect_unknown') this.publish();
    this.advance();
  }

  /** The approval deadline's timer fires (a decision in verification holds it until its verdict). */
  deadlinePasses(): void {
    if (this.stage !== 'calls' || !this.calls.some((c) => this.core.awaitsApproval(c))) return;
    this.clock = Math.max(this.clock, ...this.calls.map((c) => c.requestedAt + (this.input.approvalTimeoutMs ?? 7 * 86_400_000)));
    if (this.core.decisionsVerifying()) return;
    const waiting = this.calls.find((c) => this.core.awaitsApproval(c));
    if (waiting && this.core.approvalDeadlinePassed(waiting)) this.publish();
    this.advance();
  }

  /** A user message signal. */
  userMessage(message: unknown): void {
    if (this.core.receiveUserMessage(message)) this.stop(false);
    this.advance();
  }

  /** A cancelTurn signal. */
  cancelTurn(reason?: string): void {
    if (this.core.cancelTurn(reason ? { reason } : undefined)) this.stop(false);
    this.advance();
  }

  /**
   * A decision signal (or update), as the workflow's one way in: checked,
   * verified, checked again, applied. With `verified: false` its
   * verification stays in flight until {@link verdict}. Returns the refusal
   * or the result (`verifying` while in flight).
   */
  decide(
    decision: unknown,
    via: 'signal' | 'update' = 'signal',
    options: { verified?: boolean } = {},
  ): { refusal: string } | { applied: boolean; ids: string[] } | { verifying: true } {
    const checked = this.core.checkDecision(decision as ApprovalDecision);
    if ('refusal' in checked) return this.refuse(decision, checked.refusal, via);
    const scope = this.core.verificationStarted(checked.ids);
    const pending = { decision: decision as ApprovalDecision, via, scope };
    if (options.verified === false) {
      this.verifying.push(pending);
      return { verifying: true };
    }
    return this.conclude(pending);
  }

  /** The oldest decision in verification gets its verdict (valid): it is checked again and applied. */
  verdict(): { refusal: string } | { applied: boolean; ids: string[] } {
    const pending = this.verifying.shift();
    if (!pending) throw new Error('no decision is being verified');
    return this.conclude(pending);
  }

  /** A decision's verification ended (valid): checked again, applied. */
  private conclude(pending: {
    decision: ApprovalDecision;
    via: 'signal' | 'update';
    scope: string[];
  }): { refusal: string } | { applied: boolean; ids: string[] } {
    this.core.verificationEnded();
    const checked = this.core.checkDecision(pending.decision, pending.scope);
    if ('refusal' in checked) {
      const refused = this.refuse(pending.decision, checked.refusal, pending.via);
      this.resumeDeadline();
      return refused;
    }
    const { result, record } = this.core.applyDecision(pending.decision, checked.ids, pending.via, false);
    if (record) this.publish();
    this.resumeDeadline();
    this.advance();
    return { applied: result.applied, ids: result.toolCallIds };
  }

  /** The turn's cancellation scope is cancelled (a stop, or the whole workflow): settle and store, as the edge does. */
  stop(workflowCancelled: boolean): void {
    if (this.stage === 'idle') throw new Error('the core stopped a turn while none ran');
    if (this.endingTurn) return; // the turn's end is being written, outside its scope: nothing to stop
    if (this.heldFlush) this.completeFlush(false); // a write is never cancelled half-way; the calls after it never start
    const record = this.core.turnStopped(workflowCancelled);
    if (workflowCancelled) this.closed = true; // the workflow ends once the turn is settled
    this.closeBatch();
    this.finish(record);
  }

  /** Continues as new (between turns only): a new core from what this one carries. */
  continueAsNew(): void {
    if (this.stage !== 'idle') throw new Error('continue-as-new only between turns');
    this.core = new ConversationCore(this.conversationId, { ...this.input, carried: this.core.carryOver() }, this.env);
    this.published = { status: 'idle', pendingApprovals: 0, unknownEffects: 0, approvals: { tags: [], since: null } };
    this.publish();
    this.advance();
  }

  /** Ends the held flush: its messages are written, and the edge goes on (unless a stop ends it: `goOn` false). */
  completeFlush(goOn = true): void {
    const held = this.heldFlush;
    if (!held) return;
    this.heldFlush = undefined;
    this.write(held.entries, held.waiting);
    this.core.writesDone();
    if (goOn) held.then();
  }

  /** True while a flush is held open. */
  get flushHeld(): boolean {
    return this.heldFlush !== undefined;
  }

  private refuse(decision: unknown, refusal: string, via: 'signal' | 'update'): { refusal: string } {
    if (via === 'signal') this.core.refuseDecision(decision, refusal);
    return { refusal };
  }

  /** A deadline that passed while a decision was verified settles once no verification is left, as the workflow's wait does. */
  private resumeDeadline(): void {
    if (this.stage !== 'calls' || this.core.decisionsVerifying()) return;
    const deadline = this.input.approvalTimeoutMs ?? 7 * 86_400_000;
    const due = this.calls.find((c) => this.core.awaitsApproval(c) && this.clock >= c.requestedAt + deadline);
    if (due && this.core.approvalDeadlinePassed(due)) this.publish();
  }

  /** Writes what is unwritten (held open with {@link holdFlushes}), then `then`. */
  private flush(then: () => void, waiting?: ApprovalRequest[]): void {
    const entries = this.core.takeWrites();
    if (entries.length === 0) return then();
    if (this.holdFlushes && !this.closed) {
      this.holdFlushes = false;
      this.flushesHeld++;
      this.heldFlush = { entries, waiting, then };
      return;
    }
    this.write(entries, waiting);
    this.core.writesDone();
    then();
  }

  /**
   * Stores entries as the append activity does (upserts at their seqs; a body
   * by reference from the response stored). With {@link refuseNextWrite}, the
   * first is refused and the others stored, and the core's notes are written
   * in its place, as the workflow does.
   */
  private write(entries: readonly AppendEntry[], waiting?: readonly ApprovalRequest[]): void {
    if (this.refuseNextWrite && entries.length > 0) {
      this.refuseNextWrite = false;
      const [refused, ...rest] = entries;
      this.refusedSeqs.push(refused.seq);
      this.store(rest);
      this.write(this.core.writeRefused(entries, { message: STORE_REFUSAL, refusedSeqs: [refused.seq] }), waiting);
      return;
    }
    this.store(entries);
    if (waiting) this.listed.push(...waiting);
  }

  private store(entries: readonly AppendEntry[]): void {
    for (const entry of entries) this.stored[entry.seq] = this.body(entry);
  }

  /** The transcript the pending model call reads: what is stored, with what the call writes first. */
  modelView(): ChatMessage[] {
    const view = [...this.stored];
    if (this.stage === 'model') for (const entry of this.request?.append ?? []) view[entry.seq] = this.body(entry);
    return view;
  }

  /** The conversation's messages as they are once written: what is stored, with what the next model call or a held flush writes. */
  transcript(): ChatMessage[] {
    const view = this.modelView();
    for (const entry of this.heldFlush?.entries ?? []) view[entry.seq] = this.body(entry);
    return view;
  }

  private body(entry: AppendEntry): ChatMessage {
    const message =
      'message' in entry
        ? entry.message
        : entry.ref.kind === 'model_response'
          ? this.responses.get(entry.ref.key)
          : entry.ref.kind === 'agent_answer'
            ? ({ role: 'tool', tool_call_id: entry.ref.toolCallId, content: `answer stored under ${entry.ref.key}` } as ChatMessage)
            : ({ role: 'tool', tool_call_id: entry.ref.toolCallId, content: `stored under ${entry.ref.key}` } as ChatMessage);
    if (!message) throw new Error(`nothing is stored under ${JSON.stringify('ref' in entry ? entry.ref : entry)}`);
    return message;
  }

  /** Closes the open batch: its tool messages are stored, in call order. */
  private closeBatch(): TurnRecord | undefined {
    const { finished } = this.core.closeBatch();
    this.publish();
    this.closedCalls.push(...this.calls);
    this.calls = [];
    return finished;
  }

  private askModel(): void {
    this.request = this.core.modelRequest();
    this.stage = 'model';
  }

  /** The turn's answer is written before its record shows. */
  private finish(record: TurnRecord): void {
    this.stage = 'flushing';
    this.endingTurn = true;
    this.flush(() => {
      this.endingTurn = false;
      this.core.finishTurn(record);
      if (this.closed) this.core.close();
      this.publish();
      this.turns.push(record);
      this.stage = 'idle';
      this.calls = [];
      this.advance();
    });
  }
}

/** What PostgreSQL says when the driver refuses a write ({@link CoreDriver.refuseNextWrite}). */
export const STORE_REFUSAL = 'a CHECK constraint refused it';

/** An assistant message asking for these calls, and a plan for each. */
export function assistantWithCalls(
  calls: {
    id: string;
    name?: string;
    needsApproval?: boolean;
    idempotent?: boolean;
    problem?: ToolCallPlan['problem'];
    handoff?: string;
    subAgent?: string;
    arguments?: string;
    decisions?: DecisionKind[];
    blocked?: ToolCallPlan['blocked'];
  }[],
): {
  message: Extract<ChatMessage, { role: 'assistant' }>;
  plans: ToolCallPlan[];
} {
  return {
    message: {
      role: 'assistant',
      content: null,
      tool_calls: calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name ?? 'tool', arguments: c.arguments ?? '{}' } })),
    },
    plans: calls.map((c) => ({
      toolCallId: c.id,
      name: c.name ?? 'tool',
      needsApproval: c.needsApproval ?? false,
      idempotent: c.idempotent ?? true,
      timeoutMs: 60_000,
      maxAttempts: 3,
      ...(c.problem ? { problem: c.problem } : {}),
      ...(c.handoff ? { handoff: c.handoff } : {}),
      ...(c.subAgent ? { subAgent: c.subAgent } : {}),
      ...(c.decisions ? { decisions: c.decisions } : {}),
      ...(c.blocked ? { blocked: c.blocked } : {}),
    })),
  };
}
