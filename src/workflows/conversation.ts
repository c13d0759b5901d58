/**
 * The conversation workflow: one per conversation, workflow ID = conversation
 * ID. It performs the steps `ConversationCore` (src/core, pure, all of the
 * conversation's state and rules) says, as activities, timers, cancellation
 * scopes, handlers and search attributes (src/core/steps.ts), and nothing
 * else: failures are read into facts here, the rules drawn from them are the
 * core's. Deterministic sandbox: no I/O here (activity-options.ts says how
 * each activity is scheduled). Every exit from a turn settles its open batch,
 * so an assistant message with tool calls is always answered by one tool
 * message per call. Changing it: docs/changing-workflow-code.md.
 */
import type { GrantRevocation } from '../contract/grants';
import * as wf from '@temporalio/workflow';
import {
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  condition,
  isCancellation,
  workflowInfo,
} from '@temporalio/workflow';
import type { ApprovalRequest, DecisionRecord, ModelCallResult } from '../contract/activities';
import type { BatchCall } from '../core/batch';
import { ConversationCore, type SubAgentStart, type TurnStep } from '../core/conversation';
import type { PendingWrite } from '../core/steps';
import type { EventWaitRun } from '../core/event-waits';
import { storeSummary } from '../core/summaries';
import {
  conversationSchedules,
  describeSubAgentFailure,
  describeToolFailure,
  failureMessage,
  modelFailure,
  storeRefusal,
  type ConversationSchedules,
} from './activity-options';
import * as api from '../contract';
import type { ApprovalDecision, ConversationInput, ConversationSummary, DecisionResult, TurnRecord } from '../contract';
import { WorkflowMetrics } from './metrics';
import { TurnScope } from './turn-scope';

export type { ConversationSummary };

/** Runs one conversation until it is ended. */
export async function agentConversation(input: ConversationInput = {}): Promise<ConversationSummary> {
  refuseInvalidInput(input);
  // Date.now() is the workflow's deterministic clock (the time of the current workflow task).
  const core = new ConversationCore(workflowInfo().workflowId, input, {
    now: () => Date.now(),
    newId: wf.uuid4,
    log: wf.log,
    allows: wf.patched,
  });
  const act = conversationSchedules(input);
  const metrics = new WorkflowMetrics();
  const root = CancellationScope.current();
  const turn = new TurnScope();
  const keys = api.conversationSearchAttributeKeys(input.searchAttributes);
  const report = reporterToCaller(core, input);
  const publish = (): void => {
    const updates = api.searchAttributeUpdates(keys, core.searchAttributeUpdates());
    if (updates.length > 0) wf.upsertSearchAttributes(updates);
    wf.setCurrentDetails(core.currentDetails()); // not a command: what the UI shows as the workflow's details
    report();
  };
  const edge: Edge = { core, act, metrics, publish, children: new Set() };

  /** Writes what is unwritten, before anyone may read it: a turn's end, a wait for a person, the end. */
  const flush = async (waiting?: ApprovalRequest[], ruled?: DecisionRecord[]): Promise<void> => {
    const pending = core.takeWrites();
    if (pending.messages.length > 0 || pending.supersedeFrom !== undefined || (ruled?.length ?? 0) > 0)
      await write(edge, pending, waiting, ruled).finally(() => core.writesDone());
  };
  /** Calls the model, which writes the unwritten messages before it reads the transcript. */
  const callModel = ({ request, summary }: TurnStep & { kind: 'callModel' }): Promise<ModelCallResult> =>
    act.model.callModel(request, summary).catch(async (err: unknown) => {
      if (!storeRefusal(err)?.refusedSeqs.length) throw err;
      await flush(); // PostgreSQL refused some of those messages: notes take their place, then the model is asked
      return act.model.callModel(core.modelRequest(), summary);
    });
  const closeBatch = (): void => {
    metrics.callsSettled(core.closeBatch().settled);
    publish();
  };

  // Registered in this order: signals buffered before registration are delivered in it.
  wf.setHandler(api.userMessageSignal, (message) => void (core.receiveUserMessage(message) && turn.cancel()));
  wf.setHandler(api.cancelTurnSignal, (request) => void (core.cancelTurn(request) && turn.cancel()));
  wf.setHandler(api.decisionSignal, async (decision) => void (await decide(edge, decision, 'signal')));
  wf.setHandler(api.decisionUpdate, async (decision) => (await decide(edge, decision, 'update'))!, {
    validator: (decision) => core.validateDecision(decision),
  });
  wf.setHandler(api.regenerateSignal, (request) => void core.regenerate(request, 'signal'));
  wf.setHandler(api.regenerateUpdate, (request) => core.regenerate(request, 'update')!, {
    validator: (request) => void core.regenerate(request, 'check'),
  });
  wf.setHandler(api.endConversationSignal, () => core.end());
  wf.setHandler(api.revokeGrantSignal, (request) => revokeGrant(edge, request));
  wf.setHandler(api.subAgentWaitingSignal, (waiting) => void (core.subAgentWaiting(waiting) && publish()));
  setWaitHandlers(core, publish); // events for calls that wait, come-backs
  wf.setHandler(api.stateQuery, () => core.state());

  /** The steps of one turn, as the core says them, until its record. Cancellable. */
  const turnLoop = async (): Promise<TurnRecord> => {
    for (;;) {
      const step = core.nextTurnStep();
      switch (step.kind) {
        case 'discoverTools': {
          const listed = await act.discovery
            .discoverTools(step.input, step.summary)
            .catch((err: unknown) => (isCancellation(err) ? throwAgain(err) : failureMessage(err)));
          if (typeof listed === 'string') core.toolDiscoveryFailed(listed);
          else core.toolsDiscovered(listed);
          break;
        }
        case 'callModel': {
          const result = await callModel(step).catch((err: unknown) =>
            isCancellation(err) ? throwAgain(err) : modelFailure(err),
          );
          if ('error' in result) core.modelFailed(result.error, result.overBudget);
          else {
            core.modelAnswered(result);
            publish();
          }
          break;
        }
        case 'supersede': // a regenerated turn's start: the old answer leaves the live transcript before anything new
          await nonCancellable(() => act.store.appendMessages(step.input, step.summary));
          break;
        case 'write':
          await flush(step.waiting, step.ruled).then(report); // whoever decides may read the transcript: its calls are written first
          break;
        case 'runCalls':
          await Promise.all(step.calls.map((call) => runCall(edge, call)));
          closeBatch();
          break;
        case 'endTurn':
          return step.record;
      }
    }
  };

  /**
   * A turn in its own cancellation scope; a stop settles whatever it left pending. Its answer is written before its
   * record shows.
   */
  const runTurn = async (): Promise<void> => {
    const stoppedAlready = core.beginTurn();
    publish();
    const record = await turn.run(turnLoop, stoppedAlready).catch(async (err: unknown) => {
      if (!isCancellation(err)) throw err;
      await childrenSettled(edge);
      const stopped = core.turnStopped(root.consideredCancelled);
      closeBatch();
      return stopped;
    });
    await flush();
    await announceTurnEnd(edge, record);
    core.finishTurn(record);
    metrics.turnEnded(record.outcome);
    publish();
  };

  publish();
  try {
    core.start();
    for (;;) {
      await workBetweenTurns(core, publish);
      if (!core.takeTurn()) break;
      await runTurn();
      if (root.consideredCancelled) throw new CancelledFailure('the conversation was cancelled');
      if (core.shouldContinueAsNew(workflowInfo())) {
        await condition(wf.allHandlersFinished); // between turns nothing is pending; decision records finish first
        await wf.continueAsNew<typeof agentConversation>({ ...input, carried: core.carryOver() });
      }
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Workflow cancellation (UI, `temporal workflow cancel`): everything is settled and stored; end as cancelled.
    await nonCancellable(async () => {
      await flush();
      await condition(wf.allHandlersFinished);
    });
    core.close();
    publish();
    throw err;
  }
  await flush();
  await condition(wf.allHandlersFinished);
  core.close();
  publish();
  return core.summary();
}

/** Handlers of what a conversation waits for besides people: events for waiting calls, come-backs. */
function setWaitHandlers(core: ConversationCore, publish: () => void): void {
  wf.setHandler(api.eventSignal, (event) => void (core.receiveEvent(event) && publish()));
  wf.setHandler(api.comeBackSignal, (request) => void (core.requestComeBack(request) && publish()));
  wf.setHandler(api.cancelComeBackSignal, (cancel) => void (core.cancelComeBack(cancel) && publish()));
}

/** A turn some of whose calls waited for a person announces its end (turn.ended_after_wait), before its record shows. */
async function announceTurnEnd({ core, act }: Edge, record: TurnRecord): Promise<void> {
  const announcement = core.turnEndNotice(record);
  if (announcement) await nonCancellable(() => act.store.announceTurnEnd(announcement.notice, announcement.summary));
}

/**
 * Waits between turns for a message, the end, or the next come-back (a durable timer, only while one is held): a
 * come-back that is due becomes the next turn's message.
 */
async function workBetweenTurns(core: ConversationCore, publish: () => void): Promise<void> {
  for (;;) {
    const { taken, inMs, version } = core.waitBetweenTurns();
    if (taken > 0) publish();
    if (core.hasWork()) return;
    const woken = () => core.hasWork() || core.comeBackVersion() !== version;
    if (inMs === undefined) await condition(woken);
    else await condition(woken, inMs, { summary: core.nextComeBackSummary() });
  }
}

/** What the workflow's helpers below work with. */
interface Edge {
  core: ConversationCore;
  act: ConversationSchedules;
  metrics: WorkflowMetrics;
  publish(): void;
  /** The child conversations of agents called as tools now running, each settled (never rejected) when it ends. */
  children: Set<Promise<void>>;
}

/** Ends the conversation before it does anything when its input breaks a rule of `describeInvalidInput`. */
function refuseInvalidInput(input: ConversationInput): void {
  const problems = api.describeInvalidInput(input);
  if (problems.length > 0)
    throw ApplicationFailure.nonRetryable(
      `Invalid conversation input: ${problems.join('; ')}.`,
      api.ConversationErrorType.InvalidConversationInput,
    );
}

/**
 * For an agent called as a tool: reports to its caller what waits for a person in it and below it, when that changed. A
 * no-op otherwise.
 */
function reporterToCaller(core: ConversationCore, input: ConversationInput): () => void {
  const caller = input.calledBy && wf.getExternalWorkflowHandle(input.calledBy.conversationId);
  return () => {
    const waiting = caller && core.reportForCaller();
    if (waiting)
      void caller
        .signal(api.subAgentWaitingSignal, waiting)
        .catch((err: unknown) => wf.log.warn('Could not report to the caller', { err }));
  };
}

/**
 * Agents called as tools were cancelled with the turn: they settle their own calls before the turn's calls are settled.
 */
async function childrenSettled({ children }: Edge): Promise<void> {
  if (children.size > 0) await nonCancellable(() => Promise.all(children));
}

/**
 * Writes messages, with the calls that now wait for a person, never cancelled half-way; what PostgreSQL refuses gets a
 * note in its place.
 */
async function write(
  { core, act }: Edge,
  pending: PendingWrite,
  waiting?: ApprovalRequest[],
  ruled?: DecisionRecord[],
): Promise<void> {
  // What a stopped model call may have written leaves the live transcript in the first statement only (a refused write
  // still supersedes: appendMessages then stores what it can, and the notes written after must stay).
  for (let entries = pending.messages, supersedeFrom = pending.supersedeFrom; ; supersedeFrom = undefined) {
    const request = {
      conversationId: core.conversationId,
      messages: entries,
      ...(supersedeFrom !== undefined ? { supersedeFrom, supersedeReason: 'stopped' as const } : {}),
      ...(waiting ? { waiting } : {}),
      ...(ruled && ruled.length > 0 ? { ruled } : {}),
    };
    try {
      return await nonCancellable(() => act.store.appendMessages(request, storeSummary(entries, supersedeFrom)));
    } catch (err) {
      entries = core.writeRefused(entries, storeRefusal(err) ?? throwAgain(err));
      if (entries.length === 0) return;
    }
  }
}

/** A grant revoked: it covers nothing from now on (the core), then the revocation is recorded for people. */
async function revokeGrant({ core, act, publish }: Edge, request: GrantRevocation): Promise<void> {
  const revoked = core.revokeGrant(request);
  if (!revoked) return;
  publish();
  await nonCancellable(() => act.store.recordGrantRevocation(revoked.record, revoked.summary));
}

/**
 * One way in for a decision, signal or update: the core says each step (check, verify, check again, apply, record).
 */
async function decide(
  { core, act, metrics, publish }: Edge,
  decision: ApprovalDecision,
  via: 'signal' | 'update',
): Promise<DecisionResult | undefined> {
  const refuse = (problem: string): undefined => {
    if (via === 'update') throw ApplicationFailure.nonRetryable(problem, 'DecisionRefused');
    return undefined;
  };
  const first = core.receiveDecision(decision, via);
  if (first.kind !== 'verify') return first.kind === 'refused' ? refuse(first.problem) : first.result;
  const verdict = await nonCancellable(() => act.decisions.verifyDecision(first.input, first.summary)).finally(() =>
    core.verificationEnded(),
  );
  const next = core.decisionVerified(first.pending, verdict);
  if (next.kind === 'refused') return refuse(next.problem);
  if (next.kind !== 'record') return next.kind === 'answered' ? next.result : undefined;
  const { record, summary, result } = next;
  metrics.decided(record.decision, core.approvalWaits(record.toolCallIds));
  publish();
  await nonCancellable(() => act.store.recordDecision(record, summary)).catch((err: unknown) =>
    core.decisionNotRecorded(record, (storeRefusal(err) ?? throwAgain(err)).message),
  );
  return result;
}

/**
 * One call, as the core says its steps: waits for its decision (until its deadline, and any decision sent in time being
 * verified), then runs.
 */
async function runCall(edge: Edge, call: BatchCall): Promise<void> {
  const { core, publish } = edge;
  let wait = core.nextCallStep(call);
  // A call whose approval policy rule has an escalation ladder takes each step that comes before a decision.
  while (wait.kind === 'waitForPerson' && wait.escalation) {
    const { inMs, summary } = wait.escalation;
    if (await condition(() => !core.awaitsApproval(call), inMs, { summary })) {
      wait = core.nextCallStep(call);
      break;
    }
    const step = core.escalate(call);
    if (step) {
      await nonCancellable(() => edge.act.store.recordEscalation(step.record, step.summary));
      publish();
    }
    wait = core.nextCallStep(call);
  }
  if (
    wait.kind === 'waitForPerson' &&
    !(await condition(() => !core.awaitsApproval(call), wait.timeoutMs, { summary: wait.summary }))
  ) {
    await condition(() => !core.decisionsVerifying() || !core.awaitsApproval(call));
    if (core.approvalDeadlinePassed(call)) publish();
  }
  if (core.nextCallStep(call).kind !== 'start') return;
  // A call counts as possibly started only once its activity is really scheduled.
  if (CancellationScope.current().consideredCancelled) throw new CancelledFailure('the turn was stopped');
  const started = core.startCall(call);
  if (started.kind === 'waitForEvent') return waitForEvent(edge, call, started);
  if (started.kind === 'done') return publish();
  let run = started;
  for (let rerun = false; ; rerun = true) {
    try {
      if (run.kind === 'startAgent') return core.subAgentEnded(call, await runSubAgent(edge, run.start));
      return core.callSucceeded(call, await edge.act.tool(call, run.attempts).runTool(run.request, run.summary));
    } catch (err) {
      // A child conversation cancelled from outside (not by this turn's stop) settles its call like one cut off.
      if (isCancellation(err) && (run.kind === 'runTool' || CancellationScope.current().consideredCancelled)) throw err;
      const failure =
        run.kind === 'runTool'
          ? describeToolFailure(err, call.timeoutMs)
          : describeSubAgentFailure(err, call.subAgent ?? '');
      const next = core.callFailed(call, failure, rerun);
      if (next.kind === 'settled') {
        if (next.outcome === 'effect_unknown') publish();
        return;
      }
      run = next;
    }
  }
}

/**
 * A call that waits for an event: its wait is listed (an event kept for it, or delivered to it before a reset, comes
 * back at once), then the conversation waits for the event's signal until the deadline. A stop of the turn ends the
 * wait (the turn's stop settles the call as cancelled).
 */
async function waitForEvent({ core, act, publish }: Edge, call: BatchCall, run: EventWaitRun): Promise<void> {
  const { event } = await nonCancellable(() => act.store.registerEventWait(run.register, run.summary));
  if (event) core.receiveEvent(event);
  publish();
  if (!core.waitsForEvent(call)) return;
  if (!(await condition(() => !core.waitsForEvent(call), run.timeoutMs, { summary: run.summary })))
    core.eventWaitTimedOut(call);
  publish();
}

/**
 * Runs the agent of a call as a child conversation and returns its summary.
 * Cancelling the turn cancels it and waits until it settled its own calls;
 * it never outlives the turn (the conversation continues as new only between
 * turns; closing would terminate it).
 */
async function runSubAgent({ children }: Edge, start: SubAgentStart): Promise<ConversationSummary> {
  const child = wf.executeChild(agentConversation, {
    workflowId: start.workflowId,
    args: [start.input],
    cancellationType: wf.ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
    parentClosePolicy: wf.ParentClosePolicy.TERMINATE,
    workflowTaskTimeout: wf.workflowInfo().taskTimeoutMs, // the parent's: the client's `workflowTaskTimeoutMs`
    staticSummary: start.summary,
    ...(start.timeoutMs !== undefined ? { workflowExecutionTimeout: start.timeoutMs } : {}),
  });
  const settled = child.then(
    () => undefined,
    () => undefined,
  );
  children.add(settled);
  try {
    return await child;
  } finally {
    children.delete(settled);
  }
}

function nonCancellable<T>(fn: () => Promise<T>): Promise<T> {
  return CancellationScope.nonCancellable(fn);
}

function throwAgain(err: unknown): never {
  throw err;
}
