import type { ModelCallInput, ModelCallResult, ToolCallPlan } from '../../src/activities/contracts';
import type { BatchCall } from '../../src/core/batch';
import type { ConversationInput, TokenUsage, TurnRecord } from '../../src/core/contract';
import { ConversationCore, type CoreEnvironment, type SearchAttributeValues, type StoreEntry, type ToolFailure } from '../../src/core/conversation';
import type { ChatMessage } from '../../src/core/messages';

/**
 * A synchronous stand-in for the workflow edge, for tests of the pure core.
 *
 * It sequences the core's methods the way `src/workflows/conversation.ts`
 * does (take a turn, store, ask the model, run ready calls, store results,
 * settle on a stop), with every activity finishing when the test says so and
 * an in-memory list for the stored messages. It holds no rule of its own:
 * outcomes, decisions, the inbox, limits and carry-over are the core's.
 */
export class CoreDriver {
  core: ConversationCore;
  /** Stored messages, by seq. */
  readonly stored: ChatMessage[] = [];
  /** Where the edge is: between turns, waiting for the model, or running the calls of a batch. */
  stage: 'idle' | 'model' | 'calls' = 'idle';
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
  };
  /** Every change the core published (each one `upsertSearchAttributes` command of the workflow), in order. */
  readonly upserts: SearchAttributeValues[] = [];
  closed = false;
  clock = Date.parse('2026-11-23T10:00:00.000Z');
  readonly warnings: string[] = [];
  private ids = 0;
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
    if (system) this.store([system]);
  }

  /** Publishes the search attribute changes, as the edge does. */
  publish(): void {
    const changed = this.core.searchAttributeChanges();
    if (!changed) return;
    this.upserts.push(changed);
    this.published = { ...this.published, ...changed };
  }

  /** Stores entries as the append activity does, then tells the core. Returns the first seq. */
  store(entries: StoreEntry[]): number {
    const input = this.core.appendInput(entries);
    input.messages.forEach((m, i) => {
      if (m.seq !== this.stored.length) throw new Error(`append at seq ${m.seq}, expected ${this.stored.length}`);
      this.stored.push(entries[i].message);
    });
    return this.core.stored(entries);
  }

  /** Moves the edge on as far as it goes without an outside event: new turns, ready calls, settled batches. */
  advance(): void {
    for (;;) {
      if (this.stage === 'idle') {
        if (this.closed || !this.core.hasWork()) return;
        const taken = this.core.takeTurn();
        if (!taken) {
          this.core.close();
          this.publish();
          this.closed = true;
          return;
        }
        this.store(taken);
        const stoppedAlready = this.core.beginTurn();
        this.publish();
        if (stoppedAlready) this.stop(false);
        else this.askModel();
        continue;
      }
      if (this.stage !== 'calls') return;
      for (const call of this.calls) {
        if (!this.core.isReady(call)) continue;
        this.core.startCall(call);
        this.starts.set(call.key, (this.starts.get(call.key) ?? 0) + 1);
      }
      if (this.calls.some((c) => c.phase !== 'settled')) return;
      const finished = this.storeBatch();
      if (finished) this.finish(finished);
      else this.askModel();
    }
  }

  /** The model answers the pending request; `spent` is what the provider counted and, for a priced model, the call's cost. */
  modelAnswers(message: Extract<ChatMessage, { role: 'assistant' }>, plans: ToolCallPlan[], spent?: { usage: TokenUsage; costUsd?: number }): void {
    if (this.stage !== 'model') throw new Error('no model call is pending');
    const result: ModelCallResult = {
      message,
      responseKey: `resp-${this.stored.length}`,
      calls: plans,
      finishReason: 'stop',
      ...(spent ? { usage: spent.usage, ...(spent.costUsd === undefined ? {} : { costUsd: spent.costUsd }) } : {}),
    };
    const entry = this.core.modelAnswered(result);
    this.publish();
    const next = this.core.answerStored(this.store([entry]));
    if ('finished' in next) return this.finish(next.finished);
    this.stage = 'calls';
    this.calls = next.calls;
    this.advance();
  }

  /** The model call failed for good. */
  modelFails(error: string): void {
    if (this.stage !== 'model') throw new Error('no model call is pending');
    this.finish(this.core.modelFailed(error));
  }

  /** A running call's tool reports back. */
  toolReports(call: BatchCall, outcome: { content: string } | ToolFailure): void {
    if ('content' in outcome) this.core.callSucceeded(call, outcome);
    else if (this.core.callFailed(call, outcome) === 'effect_unknown') this.publish();
    this.advance();
  }

  /** The approval deadline's timer fires. */
  deadlinePasses(): void {
    if (this.stage !== 'calls' || !this.calls.some((c) => this.core.awaitsApproval(c))) return;
    this.clock = Math.max(this.clock, ...this.calls.map((c) => c.requestedAt + (this.input.approvalTimeoutMs ?? 7 * 86_400_000)));
    this.core.approvalsTimedOut();
    this.publish();
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

  /** A decision signal (or update): refused, or applied. Returns the refusal or the result. */
  decide(decision: unknown, via: 'signal' | 'update' = 'signal'): { refusal: string } | { applied: boolean; ids: string[] } {
    const checked = this.core.checkDecision(decision as never);
    if ('refusal' in checked) {
      if (via === 'signal') this.core.refuseDecision(decision, checked.refusal);
      return checked;
    }
    const { result, record } = this.core.applyDecision(decision as never, checked.ids, via);
    if (record) this.publish();
    this.advance();
    return { applied: result.applied, ids: result.toolCallIds };
  }

  /** The turn's cancellation scope is cancelled (a stop, or the whole workflow): settle and store, as the edge does. */
  stop(workflowCancelled: boolean): void {
    if (this.stage === 'idle') throw new Error('the core stopped a turn while none ran');
    const record = this.core.turnStopped(workflowCancelled);
    if (workflowCancelled) this.closed = true; // the workflow ends once the turn is settled
    if (this.core.hasOpenBatch()) this.storeBatch();
    this.finish(record);
  }

  /** Continues as new (between turns only): a new core from what this one carries. */
  continueAsNew(): void {
    if (this.stage !== 'idle') throw new Error('continue-as-new only between turns');
    this.core = new ConversationCore(this.conversationId, { ...this.input, carried: this.core.carryOver() }, this.env);
    this.published = { status: 'idle', pendingApprovals: 0, unknownEffects: 0 };
    this.publish();
    this.advance();
  }

  /** Stores the open batch's results and closes it. */
  private storeBatch(): TurnRecord | undefined {
    this.store(this.core.batchResults());
    const finished = this.core.batchStored();
    this.publish();
    this.closedCalls.push(...this.calls);
    this.calls = [];
    return finished;
  }

  private askModel(): void {
    this.request = this.core.modelRequest();
    this.stage = 'model';
  }

  private finish(record: TurnRecord): void {
    this.core.finishTurn(record);
    if (this.closed) this.core.close();
    this.publish();
    this.turns.push(record);
    this.stage = 'idle';
    this.calls = [];
    this.advance();
  }
}

/** An assistant message asking for these calls, and a plan for each. */
export function assistantWithCalls(
  calls: { id: string; name?: string; needsApproval?: boolean; idempotent?: boolean; problem?: ToolCallPlan['problem'] }[],
): { message: Extract<ChatMessage, { role: 'assistant' }>; plans: ToolCallPlan[] } {
  return {
    message: {
      role: 'assistant',
      content: null,
      tool_calls: calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name ?? 'tool', arguments: '{}' } })),
    },
    plans: calls.map((c) => ({
      toolCallId: c.id,
      name: c.name ?? 'tool',
      needsApproval: c.needsApproval ?? false,
      idempotent: c.idempotent ?? true,
      timeoutMs: 60_000,
      maxAttempts: 3,
      ...(c.problem ? { problem: c.problem } : {}),
    })),
  };
}
