/**
 * The conversation workflow: one per conversation, workflow ID = conversation ID.
 *
 * Runs in Temporal's deterministic sandbox: no I/O here, everything with I/O
 * is an activity. The workflow keeps the transcript's structure; message
 * bodies go to PostgreSQL through the `appendMessages` activity.
 *
 * Every exit from a turn (final answer, failure, cancel, interruption,
 * workflow cancellation) goes through the same settle step, so an assistant
 * message with tool calls is always answered by one tool message per call.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  proxyActivities,
  setHandler,
  TimeoutFailure,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import { TimeoutType } from '@temporalio/common';
import type { ChatMessage, MessageMeta } from '../transcript/messages';
import { describeMessage } from '../transcript/messages';
import { planPairingRepair } from '../transcript/pairing';
import { effectUnknownContent, repairedContent, toolFailedContent, type ToolFailureReason } from '../transcript/outcomes';
import { callInstanceKey, legacyCallKey } from '../transcript/effect-keys';
import { ToolCallBatch, type BatchCall } from '../transcript/batch';
import {
  ActivityErrorType,
  type ConversationActivities,
  type ModelCallInput,
  type ModelCallResult,
  type StoredMessageRef,
} from '../activities/contracts';
import {
  AgentStatusAttribute,
  cancelTurnSignal,
  CONVERSATION_DEFAULTS,
  ConversationErrorType,
  DEDUP_MEMORY,
  decisionSignal,
  decisionUpdate,
  describeBadDecision,
  describeInvalidInput,
  describeOverLimits,
  endConversationSignal,
  PendingApprovalsAttribute,
  RECENT_TURNS_KEPT,
  REFUSED_DECISIONS_KEPT,
  stateQuery,
  UNKNOWN_EFFECTS_KEPT,
  UnknownEffectsAttribute,
  userMessageSignal,
  type ApprovalDecision,
  type CarriedConversation,
  type ConversationInput,
  type ConversationState,
  type ConversationStatus,
  type DecisionResult,
  type PendingApproval,
  type RefusedDecision,
  type TurnRecord,
  type UnknownEffect,
  type UserMessage,
} from './api';

/**
 * Patch: effect keys per call instance (`effect-keys.ts`) and `effect_unknown`.
 * Batches made before it keep the key `${conversationId}/${toolCallId}` and
 * settle as before, so a call that may already have run keeps its key.
 */
export const CALL_INSTANCE_KEYS_PATCH = 'call-instance-effect-keys';

/** Patch: inputs above `CONVERSATION_LIMITS` are refused (runs started before it keep what they were given). */
export const CONVERSATION_LIMITS_PATCH = 'conversation-limits';

/** What the workflow returns when the conversation ends. */
export interface ConversationSummary {
  conversationId: string;
  steps: number;
  messages: number;
  transcriptRepairs: number;
}

/** The backoff every activity of the conversation retries with; each adds its own attempt limit and non-retryable types. */
const RETRY_BACKOFF = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' } as const;

const store = proxyActivities<ConversationActivities>({
  // Short: a write takes milliseconds, and a worker that dies mid-write is noticed at this timeout.
  startToCloseTimeout: '5 seconds',
  // No attempt limit: a database that is down delays the conversation, it never loses a message.
  retry: RETRY_BACKOFF,
});

/**
 * The workflow's clock, ms since the epoch: the time of the current workflow
 * task. Replay-safe: in Temporal's workflow sandbox `Date` is replaced by this
 * deterministic clock, so the same history always gives the same values (the
 * SDK has no other "now"; `workflowInfo().unsafe.now()` is the unsafe one). It
 * stays for recorded histories: decisions without `sentAt` are judged by it.
 */
function workflowTime(): number {
  return Date.now();
}

const CANCELLED_BY_USER = 'the user cancelled the turn';
const INTERRUPTED_BY_MESSAGE = 'a new user message interrupted the turn';
const CANCELLED_WORKFLOW = 'the conversation was cancelled';

/** Runs one conversation until it is ended. */
export async function conversationWorkflow(input: ConversationInput = {}): Promise<ConversationSummary> {
  const conversationId = workflowInfo().workflowId;
  const inputProblems = describeInvalidInput(input, { limits: false });
  const overLimits = describeOverLimits(input);
  if (overLimits.length > 0 && patched(CONVERSATION_LIMITS_PATCH)) inputProblems.push(...overLimits);
  if (inputProblems.length > 0) {
    throw ApplicationFailure.nonRetryable(`Invalid conversation input: ${inputProblems.join('; ')}.`, ConversationErrorType.InvalidConversationInput);
  }
  const maxSteps = input.maxSteps ?? CONVERSATION_DEFAULTS.maxSteps;
  const approvalTimeoutMs = input.approvalTimeoutMs ?? CONVERSATION_DEFAULTS.approvalTimeoutMs;
  const onNewMessage = input.onNewMessage ?? CONVERSATION_DEFAULTS.onNewMessage;
  const heartbeatTimeout = input.timeouts?.heartbeatMs ?? CONVERSATION_DEFAULTS.heartbeatMs;
  const model = proxyActivities<ConversationActivities>({
    startToCloseTimeout: input.timeouts?.modelCallMs ?? CONVERSATION_DEFAULTS.modelCallMs,
    heartbeatTimeout,
    retry: {
      ...RETRY_BACKOFF,
      maximumAttempts: input.timeouts?.modelCallAttempts ?? CONVERSATION_DEFAULTS.modelCallAttempts,
      nonRetryableErrorTypes: [ActivityErrorType.ModelRequestRejected, ActivityErrorType.InvalidTranscript],
    },
  });
  const rootScope = CancellationScope.current();
  const carried = input.carried;
  const continueAsNewAfterEvents = input.continueAsNewAfterEvents ?? CONVERSATION_DEFAULTS.continueAsNewAfterEvents;

  /** Structure of the messages of this run; earlier runs' messages are stored and settled. */
  const messages: MessageMeta[] = [];
  let nextSeq = carried?.nextSeq ?? 0;
  const inbox: Required<UserMessage>[] = [...(carried?.inbox ?? [])];
  const receivedMessageIds = new Set<string>(carried?.receivedMessageIds ?? []);
  const decisions = new Map<string, DecisionResult>((carried?.decisions ?? []).map((d) => [d.decisionId, d]));
  const recentTurns: TurnRecord[] = [...(carried?.recentTurns ?? [])];
  const refusedDecisions: RefusedDecision[] = [...(carried?.refusedDecisions ?? [])];
  let phase: 'idle' | 'running' | 'failed' | 'closed' = carried?.phase ?? 'idle';
  let steps = carried?.steps ?? 0;
  let lastError: string | undefined = carried?.lastError;
  let transcriptRepairs = carried?.transcriptRepairs ?? 0;
  let ending = carried?.ending ?? false;
  const runs = (carried?.runs ?? 0) + 1;
  let batch: ToolCallBatch | undefined;
  let turnActive = false;
  let turnScope: CancellationScope | undefined;
  let stopReason: string | undefined = carried?.pendingCancel;
  let published: { status: ConversationStatus; pending: number } | undefined;
  let unknownEffectsCount = carried?.unknownEffects?.count ?? 0;
  const unknownEffects: UnknownEffect[] = [...(carried?.unknownEffects?.recent ?? [])];
  let publishedUnknownEffects = 0;

  const status = (): ConversationStatus =>
    phase === 'running' && (batch?.awaitingApproval().length ?? 0) > 0 ? 'awaiting_approval' : phase;

  /**
   * Publishes status and pending-approval count as search attributes, when
   * they changed; the count of unknown effects once there is one.
   */
  const publish = (): void => {
    const now = { status: status(), pending: batch?.awaitingApproval().length ?? 0 };
    const unknownChanged = unknownEffectsCount !== publishedUnknownEffects;
    if (published && published.status === now.status && published.pending === now.pending && !unknownChanged) return;
    published = now;
    publishedUnknownEffects = unknownEffectsCount;
    upsertSearchAttributes([
      { key: AgentStatusAttribute, value: now.status },
      { key: PendingApprovalsAttribute, value: now.pending },
      ...(unknownChanged ? [{ key: UnknownEffectsAttribute, value: unknownEffectsCount }] : []),
    ]);
  };

  /** Stops the current turn (also one about to start); what already finished is kept, the rest settled. */
  const stopTurn = (why: string): void => {
    if (!turnActive || stopReason) return;
    stopReason = why;
    turnScope?.cancel();
  };

  const refuse = (what: string, problem: string): void => {
    lastError = `Ignored a ${what}: ${problem}`;
    log.warn(lastError, { conversationId });
  };

  setHandler(userMessageSignal, (message: UserMessage) => {
    const problem = describeBadUserMessage(message);
    if (problem) return refuse('userMessage signal', problem);
    const messageId = message.messageId ?? uuid4();
    if (receivedMessageIds.has(messageId)) {
      log.info('Ignored a user message already received', { conversationId, messageId });
      return;
    }
    receivedMessageIds.add(messageId);
    inbox.push({ text: message.text, messageId });
    if (onNewMessage === 'interrupt') stopTurn(INTERRUPTED_BY_MESSAGE);
  });

  setHandler(cancelTurnSignal, (request) => {
    const why = request?.reason ? `${CANCELLED_BY_USER} (${request.reason})` : CANCELLED_BY_USER;
    if (turnActive) return stopTurn(why);
    if (inbox.length > 0 && !stopReason) {
      stopReason = why; // the turn for the messages just received has not started yet: it starts cancelled
      return;
    }
    log.info('cancelTurn received while no turn runs; nothing to cancel', { conversationId });
  });

  /** Checks a decision against the pending calls; a refusal says why. */
  const checkDecision = (decision: ApprovalDecision): { ids: string[] } | { refusal: string } => {
    const shape = describeBadDecision(decision);
    if (shape) return { refusal: shape };
    if (decisions.has(decision.decisionId)) return { ids: decisions.get(decision.decisionId)!.toolCallIds };
    if (!batch) {
      return {
        refusal: decision.toolCallId
          ? `No tool call "${decision.toolCallId}" is pending in conversation ${conversationId}.`
          : `No tool call is waiting for approval in conversation ${conversationId}.`,
      };
    }
    const checked = batch.checkDecision(decision.toolCallId, decision.callKey);
    if (!('ids' in checked)) return { refusal: `${checked.message} (conversation ${conversationId})` };
    // A decision counts when it was sent before its call's approval deadline (by the sender's
    // stamp, or by workflow time when it has none) and arrives while the call still waits. It
    // does not depend on whether the deadline's timer or the signal is handled first within a
    // workflow task, so a decision sent in time while no worker ran is honoured when a worker
    // returns, and live execution and replay agree.
    const sentAt = decision.sentAt === undefined ? workflowTime() : Date.parse(decision.sentAt);
    const inTime = checked.ids.filter((id) => sentAt < batch!.get(id)!.requestedAt + approvalTimeoutMs);
    if (inTime.length === 0) {
      const deadline = new Date(batch.get(checked.ids[0])!.requestedAt + approvalTimeoutMs).toISOString();
      const when = decision.sentAt === undefined ? 'came' : `was sent (${new Date(sentAt).toISOString()})`;
      return { refusal: `The decision ${when} after the approval deadline (${deadline}); the call settles as approval_timeout.` };
    }
    return { ids: inTime };
  };

  /** Applies a checked decision once per decision id and records it for people. */
  const applyDecision = async (decision: ApprovalDecision, ids: string[], via: 'signal' | 'update'): Promise<DecisionResult> => {
    const earlier = decisions.get(decision.decisionId);
    if (earlier) return { ...earlier, applied: false };
    const decidedAt = workflowTime();
    batch!.decide(ids, {
      decisionId: decision.decisionId,
      approved: decision.decision === 'approve',
      reason: decision.reason,
      decidedBy: decision.decidedBy,
      decidedAt,
    });
    const result: DecisionResult = { decisionId: decision.decisionId, applied: true, toolCallIds: ids };
    decisions.set(decision.decisionId, result);
    publish();
    await CancellationScope.nonCancellable(() =>
      store.recordDecision({
        conversationId,
        decisionId: decision.decisionId,
        decision: decision.decision,
        toolCallIds: ids,
        callKeys: ids.map((id) => batch?.get(id)?.key ?? legacyCallKey(conversationId, id)),
        reason: decision.reason,
        decidedBy: decision.decidedBy,
        decidedAt,
        via,
      }),
    );
    return result;
  };

  /** A decision signal gets no answer: its refusal is kept in the state for the sender to read. */
  const refuseDecision = (decision: unknown, problem: string): void => {
    const fields = (typeof decision === 'object' && decision !== null ? decision : {}) as Record<string, unknown>;
    const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
    refusedDecisions.push({ decisionId: text(fields.decisionId), toolCallId: text(fields.toolCallId), problem });
    if (refusedDecisions.length > REFUSED_DECISIONS_KEPT) refusedDecisions.shift();
    refuse('decision signal', problem);
  };

  setHandler(decisionSignal, async (decision: ApprovalDecision) => {
    const checked = checkDecision(decision);
    if ('refusal' in checked) return refuseDecision(decision, checked.refusal);
    await applyDecision(decision, checked.ids, 'signal');
  });

  setHandler(
    decisionUpdate,
    (decision: ApprovalDecision) => {
      const checked = checkDecision(decision);
      return applyDecision(decision, 'ids' in checked ? checked.ids : [], 'update');
    },
    {
      validator: (decision: ApprovalDecision) => {
        const checked = checkDecision(decision);
        if ('refusal' in checked) throw new Error(checked.refusal);
      },
    },
  );

  setHandler(endConversationSignal, () => {
    ending = true;
  });

  setHandler(stateQuery, (): ConversationState => ({
    conversationId,
    status: status(),
    steps,
    lastError,
    messages: messages.map((m) => ({ ...m })),
    messageCount: nextSeq,
    runs,
    queuedMessages: inbox.length,
    pendingApprovals: (batch?.awaitingApproval() ?? []).map(describePendingApproval),
    runningToolCalls: (batch?.all() ?? []).filter((c) => c.phase === 'running').map((c) => c.id),
    decisionsApplied: decisions.size,
    refusedDecisions: refusedDecisions.map((r) => ({ ...r })),
    recentTurns: recentTurns.map((t) => ({ ...t })),
    unknownEffects: unknownEffects.map((u) => ({ ...u })),
    unknownEffectsCount,
    transcriptRepairs,
  }));

  /**
   * Stores new messages at the next seqs and records their structure. A
   * message an activity already stored is appended by reference, so its body
   * crosses history once. Never cancelled half-way: a cancel takes effect at
   * the next step. Returns the first seq.
   */
  const append = (entries: { message: ChatMessage; ref?: StoredMessageRef }[]): Promise<number> =>
    CancellationScope.nonCancellable(async () => {
      const first = nextSeq;
      await store.appendMessages({
        conversationId,
        messages: entries.map(({ message, ref }, i) => (ref ? { seq: first + i, ref } : { seq: first + i, message })),
      });
      entries.forEach((entry, i) => messages.push(describeMessage(first + i, entry.message)));
      nextSeq = first + entries.length;
      return first;
    });

  /** Appends the batch's tool messages, in call order, and closes it. */
  const appendBatchResults = async (settled: ToolCallBatch): Promise<void> => {
    await append(
      settled.results().map(({ toolCallId, outcome }) => ({
        message: { role: 'tool', tool_call_id: toolCallId, content: outcome.content },
        ref: outcome.storedResultKey ? { kind: 'tool_result', key: outcome.storedResultKey, toolCallId } : undefined,
      })),
    );
    batch = undefined;
    publish();
  };

  /** Checks the pairing rules on the transcript the model is about to see; repairs if needed (it should never be). */
  const modelView = (): Pick<ModelCallInput, 'omitSeqs' | 'synthesized'> => {
    const repair = planPairingRepair(
      messages.map((m) => ({ role: m.role, callIds: m.toolCalls?.map((c) => c.id), answers: m.toolCallId })),
    );
    if (repair.problems.length === 0) return { omitSeqs: [], synthesized: [] };
    transcriptRepairs++;
    log.warn('Transcript broke the pairing rules before a model call; repaired it (this is a bug)', {
      conversationId,
      problems: repair.problems,
    });
    // Earlier runs ended settled, so checking this run's messages covers everything still open.
    return {
      omitSeqs: repair.omit.map((index) => messages[index].seq),
      synthesized: repair.synthesize.map((s) => ({
        afterSeq: messages[s.afterIndex].seq,
        toolCallId: s.toolCallId,
        content: repairedContent(),
      })),
    };
  };

  /** Runs one call of the batch: waits for its approval if it needs one, then runs it. */
  const runCall = async (current: ToolCallBatch, call: BatchCall): Promise<void> => {
    if (call.phase === 'awaiting_approval') {
      const waited = workflowTime() - call.requestedAt;
      const decided = await condition(() => call.phase !== 'awaiting_approval', Math.max(approvalTimeoutMs - waited, 1));
      if (!decided) {
        current.timeOutApprovals();
        publish();
      }
    }
    if (call.phase !== 'ready') return;
    // A call is reported as possibly started only once its activity is really scheduled.
    if (CancellationScope.current().consideredCancelled) throw new CancelledFailure('the turn was stopped');
    current.markRunning(call.id);
    try {
      const result = await toolActivity(call, heartbeatTimeout).runTool({
        conversationId,
        toolCallId: call.id,
        name: call.name,
        arguments: call.arguments,
        idempotencyKey: call.key,
      });
      current.settle(call.id, { kind: 'ok', content: result.content, storedResultKey: result.storedResultKey });
    } catch (err) {
      if (isCancellation(err)) throw err;
      const lost = call.idempotent === false ? whyNoReport(err, call.timeoutMs) : undefined;
      if (lost) {
        current.settle(call.id, { kind: 'effect_unknown', content: effectUnknownContent(lost) });
        noteUnknownEffect(call, lost);
        return;
      }
      current.settle(call.id, { kind: 'tool_failed', content: toolFailedContent(failureMessage(err), failureReason(err)) });
    }
  };

  /** Keeps a call whose effect is unknown for operators: the state lists it, the search attribute counts it. */
  const noteUnknownEffect = (call: BatchCall, why: string): void => {
    unknownEffectsCount++;
    unknownEffects.push({ toolCallId: call.id, callKey: call.key, toolName: call.name, why, settledAt: new Date(workflowTime()).toISOString() });
    if (unknownEffects.length > UNKNOWN_EFFECTS_KEPT) unknownEffects.shift();
    log.warn('A tool that is not idempotent did not report back; its effect is unknown', {
      conversationId,
      toolCallId: call.id,
      callKey: call.key,
      tool: call.name,
      why,
    });
    publish();
  };

  let turnSteps = 0;

  /** The model/tool loop of one turn, until a final answer or a failure. Cancellable. */
  const turnLoop = async (messageIds: string[]): Promise<TurnRecord> => {
    for (;;) {
      const toolChoice = turnSteps >= maxSteps ? 'none' : 'auto';
      let result: ModelCallResult;
      try {
        result = await model.callModel({
          conversationId,
          throughSeq: nextSeq - 1,
          ...modelView(),
          settings: input.model ?? {},
          tools: input.tools,
          toolChoice,
        });
      } catch (err) {
        if (isCancellation(err)) throw err;
        return { messageIds, outcome: 'failed', steps: turnSteps, error: `Model call failed: ${failureMessage(err)}` };
      }
      turnSteps++;
      steps++;
      const calls = result.message.tool_calls ?? [];
      const overLimit = toolChoice === 'none' && calls.length > 0;
      const plans = new Map(result.calls.map((plan) => [plan.toolCallId, plan]));
      // The assistant message is stored at this seq (appends run one after another, in this function).
      const assistantSeq = nextSeq;
      const perInstance = calls.length > 0 && patched(CALL_INSTANCE_KEYS_PATCH);
      // Every call is pending from the moment the assistant message exists: whatever ends the turn settles it.
      batch =
        calls.length === 0
          ? undefined
          : new ToolCallBatch(
              calls.map((call, index) => {
                const plan = plans.get(call.id);
                return {
                  id: call.id,
                  key: perInstance ? callInstanceKey(conversationId, assistantSeq, index) : legacyCallKey(conversationId, call.id),
                  ...(perInstance ? { idempotent: plan?.idempotent ?? true } : {}),
                  name: call.function.name,
                  arguments: call.function.arguments,
                  needsApproval: plan?.needsApproval ?? true,
                  timeoutMs: plan?.timeoutMs,
                  maxAttempts: plan?.maxAttempts,
                  problem: overLimit
                    ? { reason: 'not_run_max_steps' as const, message: `The turn reached maxSteps (${maxSteps}); the call was not run.` }
                    : plan?.problem ?? (plan ? undefined : { reason: 'error' as const, message: `The worker returned no plan for tool call ${call.id}.` }),
                };
              }),
              workflowTime(),
            );
      publish();
      const answerSeq = await append([{ message: result.message, ref: { kind: 'model_response', key: result.responseKey } }]);
      if (answerSeq !== assistantSeq) throw new Error(`The assistant message was stored at seq ${answerSeq}, its calls were keyed for ${assistantSeq}.`);
      if (!batch) return { messageIds, outcome: 'answered', steps: turnSteps, answerSeq };
      const current = batch;
      await Promise.all(current.all().map((call) => runCall(current, call)));
      await appendBatchResults(current);
      if (overLimit) {
        return {
          messageIds,
          outcome: 'failed',
          steps: turnSteps,
          error: `The model asked for tools after the turn reached maxSteps (${maxSteps}); the calls were not run.`,
        };
      }
    }
  };

  const finishTurn = (record: TurnRecord): void => {
    recentTurns.push(record);
    if (recentTurns.length > RECENT_TURNS_KEPT) recentTurns.shift();
    lastError = record.outcome === 'failed' ? record.error : record.outcome === 'answered' ? undefined : lastError;
    phase = record.outcome === 'failed' ? 'failed' : 'idle';
    publish();
  };

  /** Runs a turn in its own cancellation scope and settles whatever a cancel leaves pending. */
  const runTurn = async (messageIds: string[]): Promise<void> => {
    phase = 'running';
    publish();
    turnSteps = 0;
    const scope = new CancellationScope();
    turnScope = scope;
    if (stopReason) scope.cancel(); // stopped while its user message was being stored
    let record: TurnRecord;
    try {
      record = await scope.run(() => turnLoop(messageIds));
    } catch (err) {
      if (!isCancellation(err)) throw err;
      const workflowCancelled = rootScope.consideredCancelled;
      const why = workflowCancelled ? CANCELLED_WORKFLOW : (stopReason ?? CANCELLED_BY_USER);
      if (batch) {
        batch.interrupt(why);
        await appendBatchResults(batch);
      }
      record = {
        messageIds,
        outcome: stopReason === INTERRUPTED_BY_MESSAGE && !workflowCancelled ? 'interrupted' : 'cancelled',
        steps: turnSteps,
        error: why,
      };
      if (workflowCancelled) {
        finishTurn(record);
        throw err;
      }
    } finally {
      turnScope = undefined;
      turnActive = false;
      stopReason = undefined;
    }
    finishTurn(record);
  };

  /** Whether this run's history is long enough to continue as new (only ever checked between turns). */
  const historyIsLong = (): boolean =>
    workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= continueAsNewAfterEvents;

  /** The state the next run starts from. Called only at an idle point: no call is pending. */
  const carryOver = (): CarriedConversation => ({
    nextSeq,
    steps,
    transcriptRepairs,
    lastError,
    phase: phase === 'failed' ? 'failed' : 'idle',
    recentTurns: recentTurns.map((t) => ({ ...t })),
    receivedMessageIds: [...receivedMessageIds].slice(-DEDUP_MEMORY),
    decisions: [...decisions.values()].slice(-DEDUP_MEMORY),
    refusedDecisions: refusedDecisions.map((r) => ({ ...r })),
    inbox: inbox.map((m) => ({ ...m })),
    pendingCancel: stopReason,
    ending,
    runs,
    unknownEffects: { count: unknownEffectsCount, recent: unknownEffects.map((u) => ({ ...u })) },
  });

  publish();
  try {
    if (input.systemPrompt && !carried) await append([{ message: { role: 'system', content: input.systemPrompt } }]);
    for (;;) {
      await condition(() => inbox.length > 0 || ending);
      if (inbox.length === 0) break;
      const taken = inbox.splice(0, inbox.length);
      turnActive = true;
      await append(taken.map((m) => ({ message: { role: 'user', content: m.text } })));
      await runTurn(taken.map((m) => m.messageId));
      if (historyIsLong()) {
        // Between turns nothing is pending; let decision records and other handlers finish first.
        await condition(allHandlersFinished);
        log.info('Continuing as new', { conversationId, historyLength: workflowInfo().historyLength, runs });
        await continueAsNew<typeof conversationWorkflow>({ ...input, carried: carryOver() });
      }
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Workflow cancellation (UI, `temporal workflow cancel`): everything is settled and stored; end as cancelled.
    await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
    phase = 'closed';
    publish();
    throw err;
  }
  await condition(allHandlersFinished);
  phase = 'closed';
  publish();
  return { conversationId, steps, messages: nextSeq, transcriptRepairs };
}

/** Activities for one tool call, with its own timeout and attempts; cancelled without waiting (effect unknown). */
function toolActivity(call: BatchCall, heartbeatTimeout: number) {
  return proxyActivities<ConversationActivities>({
    startToCloseTimeout: call.timeoutMs,
    heartbeatTimeout,
    retry: {
      ...RETRY_BACKOFF,
      maximumAttempts: call.maxAttempts,
      nonRetryableErrorTypes: [
        ActivityErrorType.UnknownTool,
        ActivityErrorType.InvalidToolArguments,
        ActivityErrorType.ToolFailedPermanently,
      ],
    },
  });
}

function describePendingApproval(call: BatchCall): PendingApproval {
  let args: unknown = call.arguments;
  try {
    args = JSON.parse(call.arguments);
  } catch {
    // keep the raw text
  }
  return {
    toolCallId: call.id,
    toolName: call.name,
    arguments: args,
    requestedAt: new Date(call.requestedAt).toISOString(),
    ageMs: workflowTime() - call.requestedAt,
    callKey: call.key,
  };
}

/**
 * Why a call did not report back, when it was cut off rather than failed: it
 * timed out, or its worker stopped heartbeating (killed, lost). Undefined for
 * failures the tool reported itself.
 */
function whyNoReport(err: unknown, timeoutMs: number): string | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (!(cause instanceof TimeoutFailure)) return undefined;
  if (cause.timeoutType === TimeoutType.HEARTBEAT) return 'its worker stopped answering while it ran (heartbeat timeout)';
  if (cause.timeoutType === TimeoutType.START_TO_CLOSE) return `it ran longer than its timeout of ${timeoutMs} ms`;
  return 'it timed out';
}

function describeBadUserMessage(message: unknown): string | undefined {
  if (typeof message !== 'object' || message === null) return 'expected an object like {"text": "..."}';
  const { text, messageId } = message as Record<string, unknown>;
  if (typeof text !== 'string' || text.trim() === '') return '"text" must be a non-empty string';
  if (messageId !== undefined && (typeof messageId !== 'string' || messageId === '')) {
    return '"messageId", when given, must be a non-empty string';
  }
  return undefined;
}

/** The most telling message of an activity failure: its cause's, when it has one. */
function failureMessage(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

function failureReason(err: unknown): ToolFailureReason {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (cause instanceof ApplicationFailure) {
    if (cause.type === ActivityErrorType.UnknownTool) return 'unknown_tool';
    if (cause.type === ActivityErrorType.InvalidToolArguments) return 'invalid_arguments';
  }
  return 'error';
}
