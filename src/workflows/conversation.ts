/**
 * The conversation workflow: one per conversation, workflow ID = conversation ID.
 *
 * The edge between Temporal and the conversation's rules. The rules (inbox,
 * turn, decisions, outcomes, what continue-as-new carries) live in
 * `ConversationCore` (`src/core/conversation.ts`), which is pure; this
 * function turns what the core decides into activities, timers, cancellation
 * scopes, handlers and search attributes, and nothing else. It runs in
 * Temporal's deterministic sandbox: no I/O here, everything with I/O is an
 * activity (`activity-options.ts` says how each is scheduled).
 *
 * Every exit from a turn (final answer, failure, cancel, interruption,
 * workflow cancellation) settles the open batch, so an assistant message with
 * tool calls is always answered by one tool message per call.
 *
 * Changing this function: commands must come in the same order on replay as
 * in every recorded history (`test/fixtures/histories`); see "Changing
 * workflow code" in the README.
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { AppendEntry, ApprovalRequest, ConversationActivities, DecisionVerification, ModelCallResult } from '../activities/contracts';
import type { BatchCall } from '../core/batch';
import { APPROVAL_IDENTITY_PATCH, ConversationCore, UNSTORABLE_TEXT_PATCH, type StoreEntry } from '../core/conversation';
import { checkConversationInput } from '../core/contract';
import {
  decisionActivities,
  describeToolFailure,
  failureMessage,
  modelActivities,
  DEFERRED_TRANSCRIPT_WRITES_PATCH,
  PREFIXED_ACTIVITY_TYPES_PATCH,
  storeActivities,
  storeRefusal,
  toolActivities,
  discoveryActivities,
  type SummarizedActivities,
} from './activity-options';
import { storeSummary, verifySummary } from '../core/summaries';
import {
  cancelTurnSignal,
  conversationSearchAttributeKeys,
  ConversationErrorType,
  decisionSignal,
  decisionUpdate,
  endConversationSignal,
  stateQuery,
  userMessageSignal,
  type ApprovalDecision,
  type ConversationInput,
  type ConversationSearchAttributes,
  type ConversationSummary,
  type TurnRecord,
} from './api';
import { WorkflowMetrics } from './metrics';

/** Patches of the core's rules, asked through `CoreEnvironment.allows` (see `src/core/edge.ts`). */
export {
  APPROVAL_IDENTITY_PATCH,
  CALL_INSTANCE_KEYS_PATCH,
  MESSAGE_SIZE_LIMITS_PATCH,
  UNSTORABLE_TEXT_PATCH,
  USAGE_SEARCH_ATTRIBUTES_PATCH,
} from '../core/edge';
export { DEFERRED_TRANSCRIPT_WRITES_PATCH, PREFIXED_ACTIVITY_TYPES_PATCH } from './activity-options';

/** Patch: inputs above `CONVERSATION_LIMITS` are refused (runs started before it keep what they were given). */
export const CONVERSATION_LIMITS_PATCH = 'conversation-limits';

export type { ConversationSummary };

/** Runs one conversation until it is ended. */
export async function conversationWorkflow(input: ConversationInput = {}): Promise<ConversationSummary> {
  const problems = checkConversationInput(
    input,
    () => patched(CONVERSATION_LIMITS_PATCH),
    () => patched(UNSTORABLE_TEXT_PATCH),
  );
  if (problems.length > 0) {
    throw ApplicationFailure.nonRetryable(`Invalid conversation input: ${problems.join('; ')}.`, ConversationErrorType.InvalidConversationInput);
  }
  // Date.now() is the workflow's deterministic clock (the time of the current workflow task).
  const core = new ConversationCore(workflowInfo().workflowId, input, { now: () => Date.now(), newId: uuid4, log, allows: patched });
  // Asked once per run, before any command: a run begun with bare activity types keeps them to its end.
  const prefixed = patched(PREFIXED_ACTIVITY_TYPES_PATCH);
  // Also once per run: a run begun before deferred writes stores every message at once, in an activity of its own.
  const deferWrites = patched(DEFERRED_TRANSCRIPT_WRITES_PATCH);
  const store = storeActivities(prefixed);
  const decisions = decisionActivities(prefixed);
  /** Decisions being verified: each was sent in time for the calls it names (checked before verifying). */
  let verifying = 0;
  const model = modelActivities(input, prefixed);
  const tools = (call: BatchCall) => toolActivities(call, input, prefixed);
  const discovery = discoveryActivities(prefixed);
  const rootScope = CancellationScope.current();
  const metrics = new WorkflowMetrics();
  let turnScope: CancellationScope | undefined;

  const publishSearchAttributes = searchAttributePublisher(input.searchAttributes);
  const publish = (): void => {
    publishSearchAttributes(core);
    // Not a command: what the UI shows as the workflow's current details.
    setCurrentDetails(core.currentDetails());
  };

  /** Messages that have their seqs but are not written yet: the next model call writes them first, or {@link flush}. */
  let unwritten: AppendEntry[] = [];

  /**
   * Gives messages the next seqs and has them written: with the next model
   * call (one round trip fewer per write), or at once for a run begun before
   * deferred writes. Never cancelled half-way. Returns the first seq.
   */
  const append = async (entries: StoreEntry[]): Promise<number> => {
    const input = core.appendInput(entries);
    if (deferWrites) unwritten.push(...input.messages);
    else await write(input.messages);
    return core.stored(entries);
  };

  /**
   * Stores messages (with the calls that now wait for a person, for
   * approvers' lists), never cancelled half-way. What PostgreSQL refuses (a
   * value no retry can fix) is stored as a note in its place, so the
   * transcript keeps every seq and every call its result.
   */
  const write = async (messages: AppendEntry[], waiting?: ApprovalRequest[]): Promise<void> => {
    const appendMessages = (entries: AppendEntry[]) =>
      CancellationScope.nonCancellable(() =>
        store.appendMessages({ conversationId: core.conversationId, messages: entries, ...(waiting ? { waiting } : {}) }, storeSummaryOf(entries)),
      );
    try {
      await appendMessages(messages);
    } catch (err) {
      const refused = storeRefusal(err);
      if (!refused) throw err;
      const seqs = refused.refusedSeqs.length > 0 ? refused.refusedSeqs : messages.map((m) => m.seq);
      const notes = core.messagesNotStored(seqs, refused.message);
      try {
        await appendMessages(notes);
      } catch (again) {
        const stillRefused = storeRefusal(again);
        if (!stillRefused) throw again;
        core.notesNotStored(seqs, stillRefused.message);
      }
    }
  };

  /** Writes of {@link flush} under way (no command depends on it: the state query reads it). */
  let flushing = 0;

  /**
   * Writes the unwritten messages: before anyone may read them (a turn's end,
   * a wait for a person, the end). Before a wait, with the calls that wait, which
   * the same write lists for approvers (no command of its own).
   */
  const flush = async (waiting?: ApprovalRequest[]): Promise<void> => {
    if (unwritten.length === 0) return;
    const messages = unwritten;
    unwritten = [];
    flushing++;
    try {
      await write(messages, waiting);
    } finally {
      flushing--;
    }
  };

  /** Calls the model; the call writes the unwritten messages before it reads the transcript. */
  const callModel = async (): Promise<ModelCallResult> => {
    const request = core.modelRequest();
    const summary = core.modelCallSummary();
    if (unwritten.length === 0) return model.callModel(request, summary);
    const messages = unwritten;
    let result: ModelCallResult;
    try {
      result = await model.callModel({ ...request, append: messages }, summary);
    } catch (err) {
      if (!storeRefusal(err)) throw err;
      // PostgreSQL refused some of them: they are stored with notes in place of what it refused, then the model is asked.
      unwritten = unwritten.slice(messages.length);
      await write(messages);
      return model.callModel(core.modelRequest(), summary);
    }
    // Written by the call (a call that failed or was cancelled may not have: flush writes them again, same seqs, same content).
    unwritten = unwritten.slice(messages.length);
    return result;
  };

  /** Stores the open batch's tool messages and closes it; returns the turn's record when the turn ends there. */
  const storeBatchResults = async (): Promise<TurnRecord | undefined> => {
    metrics.callsSettled(core.batchOutcomes());
    await append(core.batchResults());
    const finished = core.batchStored();
    publish();
    return finished;
  };

  /**
   * With signed decisions (a run begun after APPROVAL_IDENTITY_PATCH): the
   * worker's verdict on the decision's signature, checked by an activity since
   * the keys never enter history. Undefined for runs begun before.
   */
  const verifyDecision = async (decision: ApprovalDecision): Promise<DecisionVerification | undefined> => {
    if (!patched(APPROVAL_IDENTITY_PATCH)) return undefined;
    // A decision sent in time holds the approval deadline until its verdict is in (see runCall).
    verifying++;
    try {
      return await CancellationScope.nonCancellable(() =>
        decisions.verifyDecision({ conversationId: core.conversationId, decision }, verifySummary()),
      );
    } finally {
      verifying--;
    }
  };

  const decide = async (decision: ApprovalDecision, ids: string[], via: 'signal' | 'update', authenticated?: boolean) => {
    const { result, record } = core.applyDecision(decision, ids, via, authenticated);
    if (record) {
      metrics.decided(record.decision, core.approvalWaits(record.toolCallIds));
      publish();
      try {
        await CancellationScope.nonCancellable(() => store.recordDecision(record, core.decisionRecordSummary(record)));
      } catch (err) {
        const refused = storeRefusal(err);
        if (!refused) throw err;
        core.decisionNotRecorded(record, refused.message);
      }
    }
    return result;
  };

  // Registered in this order since the first version: signals buffered before registration are delivered in it.
  setHandler(userMessageSignal, (message) => {
    if (core.receiveUserMessage(message)) turnScope?.cancel();
  });
  setHandler(cancelTurnSignal, (request) => {
    if (core.cancelTurn(request)) turnScope?.cancel();
  });
  setHandler(decisionSignal, async (decision) => {
    const checked = core.checkDecision(decision);
    if ('refusal' in checked) return core.refuseDecision(decision, checked.refusal);
    const verdict = await verifyDecision(decision);
    if (verdict?.refusal) return core.refuseDecision(decision, verdict.refusal);
    // Checked again when verification took time: a deadline or another decision may have come meanwhile.
    const now = verdict ? core.checkDecision(decision) : checked;
    if ('refusal' in now) return core.refuseDecision(decision, now.refusal);
    await decide(decision, now.ids, 'signal', verdict?.authenticated);
  });
  setHandler(
    decisionUpdate,
    async (decision) => {
      const verdict = await verifyDecision(decision);
      if (verdict?.refusal) throw ApplicationFailure.nonRetryable(verdict.refusal, 'DecisionRefused');
      const checked = core.checkDecision(decision);
      if (verdict && 'refusal' in checked) throw ApplicationFailure.nonRetryable(checked.refusal, 'DecisionRefused');
      return decide(decision, 'ids' in checked ? checked.ids : [], 'update', verdict?.authenticated);
    },
    {
      validator: (decision) => {
        const checked = core.checkDecision(decision);
        if ('refusal' in checked) throw new Error(checked.refusal);
      },
    },
  );
  setHandler(endConversationSignal, () => core.end());
  // A call is shown waiting for a person once the message that asked for it is written: whoever sees it may read the transcript.
  setHandler(stateQuery, () => {
    const state = core.state();
    return flushing > 0 ? { ...state, pendingApprovals: [] } : state;
  });

  /** The model/tool loop of one turn, until a final answer or a failure. Cancellable. */
  const turnLoop = async (): Promise<TurnRecord> => {
    // Conversations with MCP servers list their tools once per turn; no other run schedules this.
    const tooling = core.toolDiscovery();
    if (tooling) {
      try {
        core.toolsDiscovered(await discovery.discoverTools(tooling, core.toolDiscoverySummary()));
      } catch (err) {
        if (isCancellation(err)) throw err;
        return core.toolDiscoveryFailed(failureMessage(err));
      }
    }
    for (;;) {
      // Only conversations started with a budget can stop here: no other run takes this branch.
      const overBudget = core.budgetStop();
      if (overBudget) return overBudget;
      let result: ModelCallResult;
      try {
        result = await callModel();
      } catch (err) {
        if (isCancellation(err)) throw err;
        return core.modelFailed(failureMessage(err));
      }
      const answer = core.modelAnswered(result);
      publish();
      const next = core.answerStored(await append([answer]));
      if ('finished' in next) return next.finished;
      // Whoever decides may read the transcript: the calls they decide on are written first.
      if (next.calls.some((call) => core.awaitsApproval(call))) await flush(core.approvalRequests());
      await Promise.all(next.calls.map((call) => runCall(core, call, tools(call), publish, () => verifying > 0)));
      const finished = await storeBatchResults();
      if (finished) return finished;
    }
  };

  /** Runs the turn in its own cancellation scope; a stop settles whatever it left pending. */
  const runTurn = async (): Promise<void> => {
    const stoppedAlready = core.beginTurn();
    publish();
    const scope = new CancellationScope();
    turnScope = scope;
    if (stoppedAlready) scope.cancel(); // stopped while its user messages were being stored
    let record: TurnRecord;
    try {
      record = await scope.run(turnLoop);
    } catch (err) {
      if (!isCancellation(err)) throw err;
      const workflowCancelled = rootScope.consideredCancelled;
      record = core.turnStopped(workflowCancelled);
      if (core.hasOpenBatch()) await storeBatchResults();
      if (workflowCancelled) {
        await flush();
        core.finishTurn(record);
        metrics.turnEnded(record.outcome);
        publish();
        throw err;
      }
    } finally {
      turnScope = undefined;
    }
    // The turn's answer is read from the transcript once its record says so.
    await flush();
    core.finishTurn(record);
    metrics.turnEnded(record.outcome);
    publish();
  };

  publish();
  try {
    const system = core.systemMessage();
    if (system) await append([system]);
    for (;;) {
      await condition(() => core.hasWork());
      const taken = core.takeTurn();
      if (!taken) break;
      await append(taken);
      await runTurn();
      const { historyLength, continueAsNewSuggested } = workflowInfo();
      if (core.shouldContinueAsNew({ length: historyLength, suggested: continueAsNewSuggested })) {
        // Between turns nothing is pending; let decision records and other handlers finish first.
        await condition(allHandlersFinished);
        log.info('Continuing as new', { conversationId: core.conversationId, historyLength: workflowInfo().historyLength });
        await continueAsNew<typeof conversationWorkflow>({ ...input, carried: core.carryOver() });
      }
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Workflow cancellation (UI, `temporal workflow cancel`): everything is settled and stored; end as cancelled.
    await flush();
    await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
    core.close();
    publish();
    throw err;
  }
  await flush();
  await condition(allHandlersFinished);
  core.close();
  publish();
  return core.summary();
}

/** The summary of a store activity: which seqs it writes. */
function storeSummaryOf(messages: readonly AppendEntry[]): string {
  return storeSummary(messages[0]?.seq ?? 0, messages.length);
}

/**
 * Publishes the search attributes that changed, under the names the
 * conversation's input gives (absent: all seven under their own names).
 * Called where the status may have changed, always at the same points; the
 * core decides what changed (the tokens and cost only beside another change,
 * so a model call adds no upsert of its own). A conversation that names its
 * attributes upserts only the values of those attributes that changed, and
 * nothing when none did; one begun before the names existed upserts as it
 * always did, so its history replays.
 */
function searchAttributePublisher(names: ConversationSearchAttributes | undefined): (core: ConversationCore) => void {
  const keys = conversationSearchAttributeKeys(names);
  const last = names === undefined ? undefined : new Map<string, string>();
  const changedSinceLast = (pair: { key: { name: string }; value: unknown }): boolean => {
    const value = JSON.stringify(pair.value);
    if (last?.get(pair.key.name) === value) return false;
    last?.set(pair.key.name, value);
    return true;
  };
  return (core) => {
    const changed = core.searchAttributeChanges();
    if (!changed) return;
    const { approvals, usage } = changed;
    const pairs = [
      ...(keys.status ? [{ key: keys.status, value: changed.status }] : []),
      ...(keys.pendingApprovals ? [{ key: keys.pendingApprovals, value: changed.pendingApprovals }] : []),
      ...(changed.unknownEffects !== undefined && keys.unknownEffects ? [{ key: keys.unknownEffects, value: changed.unknownEffects }] : []),
      ...(approvals && keys.pendingApprovalTags ? [{ key: keys.pendingApprovalTags, value: approvals.tags }] : []),
      ...(approvals && keys.awaitingApprovalSince
        ? [{ key: keys.awaitingApprovalSince, value: approvals.since === null ? null : new Date(approvals.since) }]
        : []),
      ...(usage && keys.tokens ? [{ key: keys.tokens, value: usage.tokens }] : []),
      ...(usage && keys.costUsd ? [{ key: keys.costUsd, value: usage.costUsd }] : []),
    ];
    const upserted = last ? pairs.filter(changedSinceLast) : pairs;
    if (upserted.length > 0) upsertSearchAttributes(upserted);
  };
}

/**
 * One call of the batch: waits for its decision (until its deadline) if it
 * needs one, then runs it. At the deadline, decisions still being verified
 * (each sent before it) are waited for first: a decision sent in time counts
 * even when its worker handles it after the deadline.
 */
async function runCall(
  core: ConversationCore,
  call: BatchCall,
  activities: SummarizedActivities,
  publish: () => void,
  decisionsVerifying: () => boolean,
): Promise<void> {
  if (
    core.awaitsApproval(call) &&
    !(await condition(() => !core.awaitsApproval(call), core.approvalWaitMs(call), { summary: core.approvalTimerSummary(call) }))
  ) {
    if (decisionsVerifying()) await condition(() => !decisionsVerifying() || !core.awaitsApproval(call));
    if (core.awaitsApproval(call)) {
      core.approvalsTimedOut();
      publish();
    }
  }
  if (!core.isReady(call)) return;
  // A call counts as possibly started only once its activity is really scheduled.
  if (CancellationScope.current().consideredCancelled) throw new CancelledFailure('the turn was stopped');
  const request = core.startCall(call);
  try {
    core.callSucceeded(call, await activities.runTool(request, core.toolCallSummary(call)));
  } catch (err) {
    if (isCancellation(err)) throw err;
    if (core.callFailed(call, describeToolFailure(err, call.timeoutMs)) === 'effect_unknown') publish();
  }
}
