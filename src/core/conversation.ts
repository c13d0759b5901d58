/**
 * A conversation's rules, behind one facade. The state is a plain record
 * (state.ts); the rules are free functions by concern: the turn (turn.ts,
 * budget.ts), the calls of a batch (calls.ts, batch.ts), decisions
 * (decisions.ts), what arrives from people (messages.ts, inbox.ts), writes
 * (transcript.ts, writes.ts), agents (agents.ts), and what others see
 * (views.ts, visibility.ts). What happens next is said in the steps of
 * steps.ts, which the workflow and the property test's driver interpret.
 *
 * Pure: no Temporal, no I/O. Time, fresh ids, logging and patches come in
 * through a {@link CoreEnvironment}. The guarantee lives here: every call of
 * an assistant message is settled with exactly one outcome before the next
 * model call or the end of the turn, whatever ends it.
 */
import type {
  AppendEntry,
  ApprovalRequest,
  DecisionRecord,
  EscalationRecord,
  GrantRevocationRecord,
  ModelCallInput,
  ModelCallResult,
  ToolCallResult,
  ToolDiscoveryResult,
} from '../contract/activities';
import type { CarriedConversation } from '../contract/carried-conversation';
import type { ConversationInput } from '../contract/conversation-input';
import type { ConversationState, ConversationSummary } from '../contract/conversation-state';
import type { ApprovalDecision } from '../contract/decisions';
import type { ConversationSearchAttributes } from '../contract/search-attribute-names';
import type { TurnRecord } from '../contract/turn-records';
import type { TurnEndNotice } from '../contract/turn-ends';
import type { CancelTurnRequest } from '../contract/user-messages';
import type { SubAgentWaitingReport } from '../contract/waiting-calls';
import * as agents from './agents';
import type { BatchCall } from './batch';
import * as calls from './calls';
import * as decisions from './decisions';
import type { CoreEnvironment, SearchAttributeValues, StoreEntry, ToolFailure } from './edge';
import * as messages from './messages';
import * as regen from './regenerate';
import * as grants from './grants';
import { refuse } from './problems';
import type { GrantRevocation } from '../contract/grants';
import type { OutcomeKind } from './outcomes';
import { carryOver, newState, type CoreState } from './state';
import type { ActivityRun, CallRun, CallStep, DecisionStep, PendingDecision, PendingWrite, TurnStep } from './steps';
import * as transcript from './transcript';
import * as turn from './turn';
import * as eventWaits from './event-waits';
import * as comeBacks from './comebacks';
import { turnEndNotice } from './turn-end-notice';
import * as views from './views';
import { escalationRecordSummary } from './summaries';
import * as visibility from './visibility';

export * from './edge';
export type * from './steps';

/** One conversation's state and rules. Made once per workflow run, from the input and what the previous run carried. */
export class ConversationCore {
  /** The state, as a plain record (read it through the views; change it through the methods). */
  readonly s: CoreState;

  constructor(
    readonly conversationId: string,
    input: ConversationInput,
    env: CoreEnvironment,
  ) {
    this.s = newState(conversationId, input, env);
    messages.receiveTask(this.s);
    messages.receiveScheduledMessage(this.s);
  }

  /** A user message arrived. Returns true when it stops the running turn: the edge then cancels the turn. */
  receiveUserMessage(message: unknown): boolean {
    return messages.receiveUserMessage(this.s, message);
  }

  /** The user asked to cancel the turn. Returns true when the running turn stops (the edge cancels it). */
  cancelTurn(request?: CancelTurnRequest): boolean {
    return messages.cancelTurn(this.s, request);
  }

  /** The conversation ends once the current turn and queued messages are done. */
  end(): void {
    this.s.kept.ending = true;
  }

  /** A decision arrived (signal or update): refused at once, or to verify (then {@link decisionVerified}). */
  receiveDecision(decision: ApprovalDecision, via: 'signal' | 'update'): DecisionStep {
    return decisions.receiveDecision(this.s, decision, via);
  }

  /** A decision's verification ended, with a verdict or none: its calls' deadline may pass again. */
  verificationEnded(): void {
    decisions.verificationEnded(this.s);
  }

  /** A decision was verified: checked again, then applied (and to record when applied now), or refused. */
  decisionVerified(pending: PendingDecision, verdict: { refusal?: string; authenticated?: boolean }): DecisionStep {
    return decisions.decisionVerified(this.s, pending, verdict);
  }

  /** An update's validator: throws an error saying why the decision is refused, before it is accepted. */
  validateDecision(decision: ApprovalDecision): void {
    const checked = decisions.checkDecision(this.s, decision);
    if ('refusal' in checked) throw new Error(checked.refusal);
  }

  /**
   * A request to revoke a standing grant: the grant covers nothing from now on. Returns what to record (and its
   * summary), or undefined when refused (no such grant, revoked already: said in `lastError` and the log).
   */
  revokeGrant(request: GrantRevocation): { record: GrantRevocationRecord; summary: string } | undefined {
    const done = grants.revokeGrant(this.s, request);
    if ('refusal' in done) {
      refuse(this.s, 'grant revocation', done.refusal);
      return undefined;
    }
    return { record: done.record, summary: `revoke grant ${done.record.grantId}` };
  }

  /** A regenerate request (`check`: an update's validator, throwing why it is refused); undefined when refused. */
  readonly regenerate = (request: unknown, via: 'signal' | 'update' | 'check') => regen.receive(this.s, request, via);

  /** An agent called as a tool reported what waits in it and below it. True when that changed anything. */
  subAgentWaiting(report: unknown): boolean {
    return agents.subAgentWaiting(this.s, report);
  }

  /** Stores the system prompt, in the conversation's first run only. */
  start(): void {
    const system = transcript.systemMessage(this.s);
    if (system) transcript.store(this.s, [system]);
  }

  /** A come-back was asked for (the `comeBack` signal). True when the conversation now holds it. */
  requestComeBack(request: unknown): boolean {
    return comeBacks.requestComeBack(this.s, request);
  }

  /** A come-back was cancelled (the `cancelComeBack` signal). True when the conversation held it. */
  cancelComeBack(cancel: unknown): boolean {
    return comeBacks.cancelComeBack(this.s, cancel);
  }

  /**
   * Between turns: come-backs now due become the next turn's messages. Returns how the edge waits for more work: for
   * ever, or until the next come-back (`inMs`); `version` changes when the come-backs do (wait again then).
   */
  waitBetweenTurns(): { taken: number; inMs?: number; version: number } {
    const taken = comeBacks.takeDueComeBacks(this.s);
    const inMs = comeBacks.nextComeBackInMs(this.s);
    return { taken, ...(inMs !== undefined ? { inMs } : {}), version: this.s.comeBackVersion };
  }

  /** The timer's summary of the wait for the next come-back: `come back at <time>: <note>`. */
  nextComeBackSummary(): string {
    const next = this.s.kept.comeBacks?.[0];
    return next ? `come back at ${new Date(next.at).toISOString()}: ${next.note.slice(0, 80)}` : 'come back';
  }

  /** Changes whenever the come-backs do. */
  comeBackVersion(): number {
    return this.s.comeBackVersion;
  }

  /** True when there is something to do: a message to answer, or the conversation to end. */
  hasWork(): boolean {
    return this.s.inbox.length > 0 || this.s.kept.ending || this.s.kept.regenerate !== undefined;
  }

  /** Takes every queued message into a new turn and stores them; false when none is queued (the conversation ends). */
  takeTurn(): boolean {
    return regen.takeRegeneration(this.s) || turn.takeTurn(this.s);
  }

  /** The turn's messages are stored and it starts. Returns true when it was stopped already (it starts cancelled). */
  beginTurn(): boolean {
    return turn.beginTurn(this.s);
  }

  /** What the running turn does next. */
  nextTurnStep(): TurnStep {
    return turn.nextTurnStep(this.s);
  }

  /** The next model call's input again (its first try's writes were refused, and notes took their place). */
  modelRequest(): ModelCallInput {
    return turn.modelRequest(this.s);
  }

  /** The turn's MCP tools were listed and stored. */
  toolsDiscovered(result: ToolDiscoveryResult): void {
    turn.toolsDiscovered(this.s, result);
  }

  /** The MCP servers' tools could not be listed: the turn fails. */
  toolDiscoveryFailed(error: string): void {
    turn.toolDiscoveryFailed(this.s, error);
  }

  /** The model answered (and wrote what it was given). */
  modelAnswered(result: ModelCallResult): void {
    turn.modelAnswered(this.s, result);
  }

  /** The model call failed for good (the turn fails), or was not made as its budget is spent (`overBudget`). */
  modelFailed(error: string, overBudget = false): void {
    turn.modelFailed(this.s, error, overBudget);
  }

  /** Every call of the open batch is settled: its results are stored and it closes. Returns how its calls ended. */
  closeBatch(): { settled: { tool: string; outcome: OutcomeKind }[]; finished?: TurnRecord } {
    return turn.closeBatch(this.s);
  }

  /** The turn was cancelled: what runs is interrupted, what waits cancelled. Its record; then close the batch. */
  turnStopped(workflowCancelled: boolean): TurnRecord {
    return turn.turnStopped(this.s, workflowCancelled);
  }

  /**
   * The announcement of the turn's end when some of its calls waited for a person (`announceTurnEnd`, before
   * {@link finishTurn}); undefined otherwise, and for runs begun before announcements.
   */
  turnEndNotice(record: TurnRecord): { notice: TurnEndNotice; summary: string } | undefined {
    return turnEndNotice(this.s, record);
  }

  /** The turn is over, its end written: its record is kept and the status set. */
  finishTurn(record: TurnRecord): void {
    turn.finishTurn(this.s, record);
  }

  /** Whether to continue as new now, between turns, given the run's history (the workflow's `workflowInfo()`). */
  shouldContinueAsNew(history: { historyLength: number; continueAsNewSuggested: boolean }): boolean {
    return messages.shouldContinueAsNew(this.s, history);
  }

  /** The state the next run starts from. Called only between turns: no call is pending. */
  carryOver(): CarriedConversation {
    return carryOver(this.s);
  }

  /** The conversation ended (or was cancelled). */
  close(): void {
    this.s.kept.phase = 'closed';
  }

  /** What the call does next: wait for a person, start, or nothing. */
  nextCallStep(call: BatchCall): CallStep {
    return calls.nextCallStep(this.s, call);
  }

  /** True while the call waits for a person's decision. */
  awaitsApproval(call: BatchCall): boolean {
    return call.phase === 'awaiting_approval';
  }

  /**
   * An event arrived (the `event` signal, or taken when a wait was listed): the calls waiting for it are settled with
   * it. A malformed one (a raw signal) is refused and logged. Returns whether some call took it.
   */
  receiveEvent(event: unknown): boolean {
    return eventWaits.receiveCheckedEvent(this.s, event);
  }

  /** True while the call waits for its event. */
  waitsForEvent(call: BatchCall): boolean {
    return eventWaits.waitsForEvent(call);
  }

  /** The call's wait for its event ended without it: it settles as `event_timeout`. */
  eventWaitTimedOut(call: BatchCall): boolean {
    return eventWaits.eventWaitTimedOut(this.s, call);
  }

  /**
   * The call's next escalation step is due and nobody decided it: the step is taken. Returns what to record (and its
   * summary), or undefined when the call no longer waits.
   */
  escalate(call: BatchCall): { record: EscalationRecord; summary: string } | undefined {
    const record = calls.escalate(this.s, call);
    if (!record) return undefined;
    return { record, summary: escalationRecordSummary(call.name, call.id, record.step, record.addedGroups) };
  }

  /** True while a decision sent in time is being verified: the deadline of the calls it names waits for its verdict. */
  decisionsVerifying(): boolean {
    return this.s.verifying > 0;
  }

  /** The call's deadline passed, no decision in verification applies: waiting calls time out. True when some did. */
  approvalDeadlinePassed(call: BatchCall): boolean {
    return calls.approvalDeadlinePassed(this.s, call);
  }

  /** The call starts: from now on a stop settles it as `interrupted`. Returns how it runs. */
  startCall(call: BatchCall): CallRun {
    return calls.startCall(this.s, call);
  }

  /** The tool reported its result. */
  callSucceeded(call: BatchCall, result: ToolCallResult): void {
    calls.callSucceeded(this.s, call, result);
  }

  /** The call's run failed (`rerun`: its run once more). Returns that run, or the outcome it settled with. */
  callFailed(
    call: BatchCall,
    failure: ToolFailure,
    rerun = false,
  ): ActivityRun | { kind: 'settled'; outcome?: OutcomeKind } {
    return calls.callFailed(this.s, call, failure, rerun);
  }

  /** The child conversation of an agent called as a tool ended with this summary. */
  subAgentEnded(call: BatchCall, summary: ConversationSummary): void {
    agents.subAgentEnded(this.s, call, summary);
  }

  /** Gives messages the next seqs and queues them for writing. Returns the first seq. */
  store(entries: readonly StoreEntry[]): number {
    return transcript.store(this.s, entries);
  }

  /** Takes every unwritten message for a flush, before anyone may read them; {@link writesDone} when it ends. */
  takeWrites(): PendingWrite {
    return this.s.writes.takeForFlush();
  }

  /** A flush's write ended (written, or given up). */
  writesDone(): void {
    this.s.writes.flushed();
  }

  /** PostgreSQL refused some of `entries`: what to write in their place (nothing when they were notes already). */
  writeRefused(
    entries: readonly AppendEntry[],
    refusal: { message: string; refusedSeqs: readonly number[] },
  ): AppendEntry[] {
    return transcript.writeRefused(this.s, entries, refusal);
  }

  /** PostgreSQL refused the record of an applied decision (the decision still applies). */
  decisionNotRecorded(record: DecisionRecord, error: string): void {
    transcript.decisionNotRecorded(this.s, record, error);
  }

  /** The state shown to clients (the `state` query). */
  state(): ConversationState {
    return views.conversationState(this.s);
  }

  /** The calls of the open batch waiting for a person, as approvers' lists hold them. */
  approvalRequests(): ApprovalRequest[] {
    return views.approvalRequests(this.s);
  }

  /** The workflow's current details: what it does or waits for, and how the last calls ended. */
  currentDetails(): string {
    return views.currentDetails(this.s);
  }

  /** For each of the calls, its tool and how long it has waited for a decision. */
  approvalWaits(ids: readonly string[]): { tool: string; waitedMs: number }[] {
    return views.approvalWaits(this.s, ids);
  }

  /** What the workflow returns when the conversation ends. */
  summary(): ConversationSummary {
    return views.summary(this.s);
  }

  /** The search attribute values, when they changed since the last call (which counts as publishing them). */
  searchAttributeChanges(): SearchAttributeValues | undefined {
    return visibility.searchAttributeChanges(this.s);
  }

  /** The search attributes to set now, by field (those the input names, whose values changed). */
  searchAttributeUpdates(): { field: keyof ConversationSearchAttributes; value: unknown }[] {
    return visibility.searchAttributeUpdates(this.s);
  }

  /** For an agent called as a tool: what to report to its caller now, when that changed since the last report. */
  reportForCaller(): SubAgentWaitingReport | undefined {
    return agents.reportForCaller(this.s);
  }
}
