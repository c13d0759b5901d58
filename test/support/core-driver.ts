import type { ApprovalRequest, ModelCallInput, ModelCallResult, ToolCallPlan } from '../../src/contract/activities';
import type { BatchCall } from '../../src/core/batch';
import type { ConversationInput, ConversationSummary, TokenUsage, TurnRecord } from '../../src/contract';
import { ConversationCore, type CallRun, type PendingDecision, type ToolFailure } from '../../src/core/conversation';
import type { ChatMessage } from '../../src/contract/messages';

import { DriverWorld } from './driver-world';

export { assistantWithCalls } from './assistant-calls';
export { STORE_REFUSAL } from './stored-transcript';
export { deadlinePasses, decide, verdict } from './decision-driver';

/**
 * A synchronous edge for tests of the pure core: it interprets the core's turn
 * and call steps as the workflow does (decisions: decision-driver.ts), each
 * activity finishing when the test says so, in a world held in memory
 * (driver-world.ts). It holds no rule of its own.
 */
export class CoreDriver extends DriverWorld {
  core: ConversationCore;
  stage: 'idle' | 'model' | 'flushing' | 'calls' = 'idle';
  readonly closedCalls: BatchCall[] = [];
  request: ModelCallInput | undefined;
  /** Times each call (by effect key) was started, and how each call last ran. */
  readonly starts = new Map<string, number>();
  readonly runs = new Map<BatchCall, CallRun>();
  readonly turns: TurnRecord[] = [];
  readonly verifying: PendingDecision[] = [];
  closed = false;
  private endingTurn = false;
  private readonly reruns = new Set<BatchCall>();

  /** `before`: patches the run predates from its start (its first publish included). */
  constructor(
    readonly input: ConversationInput = {},
    readonly conversationId = 'conv-1',
    before: readonly string[] = [],
  ) {
    super(before);
    this.core = new ConversationCore(conversationId, input, this.env);
    this.publish();
    this.core.start();
  }

  /** Moves on as far as it goes without an outside event: new turns, calls that may start, a batch all settled. */
  advance(): void {
    if (this.stage === 'idle' && !this.closed && this.core.hasWork()) {
      if (!this.core.takeTurn()) return ((this.stage = 'flushing'), this.flush(() => this.ended()));
      const stoppedAlready = this.core.beginTurn();
      this.publish();
      return stoppedAlready ? ((this.stage = 'model'), this.stop(false)) : this.next();
    }
    if (this.stage !== 'calls') return;
    for (const call of this.calls) {
      if (this.core.nextCallStep(call).kind !== 'start') continue;
      this.started(call, this.core.startCall(call));
    }
    if (this.calls.every((c) => c.phase === 'settled')) {
      this.closeBatch();
      this.next();
    }
  }

  private started(call: BatchCall, run: CallRun): void {
    this.runs.set(call, run);
    this.starts.set(call.key, (this.starts.get(call.key) ?? 0) + 1);
  }

  /** The conversation's end is written: it closes. */
  private ended(): void {
    this.core.close();
    this.publish();
    this.closed = true;
    this.stage = 'idle';
  }

  /** Performs the turn's next step, as far as it goes without the test. */
  private next(): void {
    const step = this.core.nextTurnStep();
    if (step.kind === 'discoverTools') throw new Error('the driver runs no MCP servers');
    if (step.kind === 'callModel') return void ((this.request = step.request), (this.stage = 'model'));
    if (step.kind === 'supersede') return (this.db.supersede(step.input.supersedeFrom ?? 0), this.next());
    if (step.kind === 'write') return ((this.stage = 'flushing'), this.flush(() => this.next(), step.waiting));
    if (step.kind === 'endTurn') return this.finish(step.record);
    this.stage = 'calls';
    this.advance();
  }

  /** The model answers the pending request (after writing what it was given). */
  modelAnswers(
    message: Extract<ChatMessage, { role: 'assistant' }>,
    plans: ToolCallPlan[],
    spent?: { usage: TokenUsage; costUsd?: number },
    found?: Pick<ModelCallResult, 'output' | 'guardrail'>,
  ): void {
    if (this.stage !== 'model' || !this.request) throw new Error('no model call is pending');
    this.db.write(this.request.append ?? [], (refused, refusal) => this.core.writeRefused(refused, refusal));
    this.db.mustHoldThrough(this.request.throughSeq); // the model activity reads the transcript through throughSeq
    const responseKey = this.db.keepResponse(message);
    const usage = spent
      ? { usage: spent.usage, ...(spent.costUsd === undefined ? {} : { costUsd: spent.costUsd }) }
      : {};
    const written = this.db.writeFinalAnswer(this.request, responseKey);
    this.core.modelAnswered({
      message,
      responseKey,
      calls: plans,
      finishReason: 'stop',
      ...usage,
      ...found,
      ...written,
    });
    this.publish();
    this.next();
  }

  modelFails(error: string): void {
    if (this.stage !== 'model') throw new Error('no model call is pending');
    this.core.modelFailed(error);
    this.next();
  }

  subAgentEnds(call: BatchCall, summary: ConversationSummary): void {
    this.core.subAgentEnded(call, summary);
    this.advance();
  }

  /** A running call's tool reports back (a failure may have the core run it once more). */
  toolReports(call: BatchCall, outcome: { content: string } | ToolFailure): void {
    const after =
      'content' in outcome
        ? this.core.callSucceeded(call, outcome)
        : this.core.callFailed(call, outcome, this.reruns.has(call));
    if (after?.kind === 'runTool') {
      this.reruns.add(call);
      this.started(call, after);
    } else if (after?.kind === 'settled' && after.outcome === 'effect_unknown') this.publish();
    this.advance();
  }

  userMessage(message: unknown): void {
    if (this.core.receiveUserMessage(message)) this.stop(false);
    this.advance();
  }

  cancelTurn(reason?: string): void {
    if (this.core.cancelTurn(reason ? { reason } : undefined)) this.stop(false);
    this.advance();
  }

  /** The turn's scope is cancelled (a stop, or the whole workflow): settle and store, as the workflow does. */
  stop(workflowCancelled: boolean): void {
    if (this.stage === 'idle') throw new Error('the core stopped a turn while none ran');
    if (this.endingTurn) return; // the turn's end is written outside its scope: nothing to stop
    this.db.completeFlush(false); // a write is never cancelled half-way
    const record = this.core.turnStopped(workflowCancelled);
    if (workflowCancelled) this.closed = true;
    this.closeBatch();
    this.finish(record);
  }

  continueAsNew(): void {
    if (this.stage !== 'idle') throw new Error('continue-as-new only between turns');
    this.core = new ConversationCore(this.conversationId, { ...this.input, carried: this.core.carryOver() }, this.env);
    this.published = DriverWorld.unpublished();
    this.publish();
    this.core.start();
    this.advance();
  }

  /** Writes what is unwritten, then `then` (a test may hold it open: `db.holdFlushes`). */
  private flush(then: () => void, waiting?: ApprovalRequest[]): void {
    this.db.flush(this.core, then, waiting, !this.closed);
  }

  /** The transcript the pending model call reads: what is stored, with what the call writes first. */
  modelView(): ChatMessage[] {
    return this.db.with(this.stage === 'model' ? this.request?.append : undefined);
  }

  /** The messages as they are once written: stored, with what the next model call or a held flush writes. */
  transcript(): ChatMessage[] {
    return this.db.with(this.stage === 'model' ? this.request?.append : undefined, this.db.heldEntries);
  }

  private closeBatch(): void {
    this.closedCalls.push(...this.calls);
    this.core.closeBatch();
    this.publish();
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
      this.advance();
    });
  }
}
