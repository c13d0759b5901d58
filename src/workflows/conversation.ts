/**
 * The conversation workflow: one per conversation, workflow ID = conversation ID.
 *
 * Runs in Temporal's deterministic sandbox: no I/O here, everything with I/O
 * is an activity. The workflow keeps the transcript's structure; message
 * bodies go to PostgreSQL through the `appendMessages` activity.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  log,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { ChatMessage, MessageMeta, ToolCall } from '../transcript/messages';
import { describeMessage } from '../transcript/messages';
import { planPairingRepair } from '../transcript/pairing';
import { repairedContent, toolFailedContent, type ToolFailureReason } from '../transcript/outcomes';
import {
  ActivityErrorType,
  type ConversationActivities,
  type ModelCallInput,
  type StoredMessageRef,
  type ToolCallPlan,
  type ToolCallResult,
} from '../activities/contracts';
import {
  AgentStatusAttribute,
  CONVERSATION_DEFAULTS,
  describeInvalidInput,
  endConversationSignal,
  PendingApprovalsAttribute,
  RECENT_TURNS_KEPT,
  stateQuery,
  userMessageSignal,
  type ConversationInput,
  type ConversationState,
  type ConversationStatus,
  type TurnRecord,
  type UserMessage,
} from './api';

/** What the workflow returns when the conversation ends. */
export interface ConversationSummary {
  conversationId: string;
  steps: number;
  messages: number;
  transcriptRepairs: number;
}

const store = proxyActivities<ConversationActivities>({
  startToCloseTimeout: '1 minute',
  // No attempt limit: a database that is down delays the conversation, it never loses a message.
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/** Runs one conversation until it is ended. */
export async function conversationWorkflow(input: ConversationInput = {}): Promise<ConversationSummary> {
  const conversationId = workflowInfo().workflowId;
  const inputProblems = describeInvalidInput(input);
  if (inputProblems.length > 0) {
    throw ApplicationFailure.nonRetryable(`Invalid conversation input: ${inputProblems.join('; ')}.`, 'InvalidConversationInput');
  }
  const maxSteps = input.maxSteps ?? CONVERSATION_DEFAULTS.maxSteps;
  const model = proxyActivities<ConversationActivities>({
    startToCloseTimeout: input.timeouts?.modelCallMs ?? CONVERSATION_DEFAULTS.modelCallMs,
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '30 seconds',
      maximumAttempts: input.timeouts?.modelCallAttempts ?? CONVERSATION_DEFAULTS.modelCallAttempts,
      nonRetryableErrorTypes: [ActivityErrorType.ModelRequestRejected, ActivityErrorType.InvalidTranscript],
    },
  });

  const messages: MessageMeta[] = [];
  const inbox: Required<UserMessage>[] = [];
  const receivedMessageIds = new Set<string>();
  const recentTurns: TurnRecord[] = [];
  let status: ConversationStatus = 'idle';
  let steps = 0;
  let lastError: string | undefined;
  let transcriptRepairs = 0;
  let ending = false;
  let statusPublished = false;

  /** Sets the status and publishes it as a search attribute for operators. */
  const setStatus = (next: ConversationStatus): void => {
    if (next === status && statusPublished) return;
    status = next;
    statusPublished = true;
    upsertSearchAttributes([
      { key: AgentStatusAttribute, value: next },
      { key: PendingApprovalsAttribute, value: 0 },
    ]);
  };

  setHandler(userMessageSignal, (message: UserMessage) => {
    const problem = describeBadUserMessage(message);
    if (problem) {
      lastError = `Ignored a userMessage signal: ${problem}`;
      log.warn(lastError, { conversationId });
      return;
    }
    const messageId = message.messageId ?? uuid4();
    if (receivedMessageIds.has(messageId)) {
      log.info('Ignored a user message already received', { conversationId, messageId });
      return;
    }
    receivedMessageIds.add(messageId);
    inbox.push({ text: message.text, messageId });
  });
  setHandler(endConversationSignal, () => {
    ending = true;
  });
  setHandler(stateQuery, (): ConversationState => ({
    conversationId,
    status,
    steps,
    lastError,
    messages: messages.map((m) => ({ ...m })),
    queuedMessages: inbox.length,
    recentTurns: recentTurns.map((t) => ({ ...t })),
    transcriptRepairs,
  }));

  /**
   * Stores new messages at the next seqs and records their structure. A
   * message an activity already stored is appended by reference, so its body
   * crosses history once. Returns the first seq.
   */
  const append = async (entries: { message: ChatMessage; ref?: StoredMessageRef }[]): Promise<number> => {
    const first = messages.length;
    await store.appendMessages({
      conversationId,
      messages: entries.map(({ message, ref }, i) => (ref ? { seq: first + i, ref } : { seq: first + i, message })),
    });
    entries.forEach((entry, i) => messages.push(describeMessage(first + i, entry.message)));
    return first;
  };

  const finishTurn = (record: TurnRecord): void => {
    recentTurns.push(record);
    if (recentTurns.length > RECENT_TURNS_KEPT) recentTurns.shift();
    if (record.outcome === 'answered') lastError = undefined;
    else lastError = record.error;
    setStatus(record.outcome === 'answered' ? 'idle' : 'failed');
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
    return {
      omitSeqs: repair.omit,
      synthesized: repair.synthesize.map((s) => ({
        afterSeq: s.afterIndex,
        toolCallId: s.toolCallId,
        content: repairedContent(),
      })),
    };
  };

  const runTurn = async (messageIds: string[]): Promise<void> => {
    setStatus('running');
    let turnSteps = 0;
    for (;;) {
      const toolChoice = turnSteps >= maxSteps ? 'none' : 'auto';
      let result;
      try {
        result = await model.callModel({
          conversationId,
          throughSeq: messages.length - 1,
          ...modelView(),
          settings: input.model ?? {},
          tools: input.tools,
          toolChoice,
        });
      } catch (err) {
        finishTurn({ messageIds, outcome: 'failed', steps: turnSteps, error: `Model call failed: ${failureMessage(err)}` });
        return;
      }
      turnSteps++;
      steps++;
      const assistantSeq = await append([
        { message: result.message, ref: { kind: 'model_response', key: result.responseKey } },
      ]);
      const calls = result.message.tool_calls ?? [];
      if (calls.length === 0) {
        finishTurn({ messageIds, outcome: 'answered', steps: turnSteps, answerSeq: assistantSeq });
        return;
      }
      if (toolChoice === 'none') {
        const error = `The model asked for tools after the turn reached maxSteps (${maxSteps}); the calls were not run.`;
        await append(
          calls.map((call) => ({
            message: { role: 'tool', tool_call_id: call.id, content: toolFailedContent(error, 'not_run_max_steps') },
          })),
        );
        finishTurn({ messageIds, outcome: 'failed', steps: turnSteps, error });
        return;
      }
      const plans = new Map(result.calls.map((plan) => [plan.toolCallId, plan]));
      const results = await Promise.all(calls.map((call) => executeCall(conversationId, call, plans.get(call.id))));
      await append(
        calls.map((call, i) => {
          const { content, storedResultKey } = results[i];
          return {
            message: { role: 'tool', tool_call_id: call.id, content },
            ref: storedResultKey ? { kind: 'tool_result', key: storedResultKey, toolCallId: call.id } : undefined,
          };
        }),
      );
    }
  };

  setStatus('idle');
  if (input.systemPrompt) await append([{ message: { role: 'system', content: input.systemPrompt } }]);

  for (;;) {
    await condition(() => inbox.length > 0 || ending);
    if (inbox.length === 0) break;
    const batch = inbox.splice(0, inbox.length);
    await append(batch.map((m) => ({ message: { role: 'user', content: m.text } })));
    await runTurn(batch.map((m) => m.messageId));
  }
  setStatus('closed');
  return { conversationId, steps, messages: messages.length, transcriptRepairs };
}

/** Runs one tool call as its own activity; every way it can end becomes a tool message content. */
async function executeCall(conversationId: string, call: ToolCall, plan: ToolCallPlan | undefined): Promise<ToolCallResult> {
  if (!plan) {
    return { content: toolFailedContent(`The worker returned no plan for tool call ${call.id}.`) };
  }
  if (plan.problem) return { content: toolFailedContent(plan.problem.message, plan.problem.reason) };
  if (plan.needsApproval) {
    // Fail closed until the approval gate exists: a call that needs a person never runs unasked.
    return {
      content: toolFailedContent(
        `${plan.name} needs a person's approval for these arguments, and this worker cannot ask for approvals yet; the call was not run.`,
        'needs_approval',
      ),
    };
  }
  const tools = proxyActivities<ConversationActivities>({
    startToCloseTimeout: plan.timeoutMs,
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '30 seconds',
      maximumAttempts: plan.maxAttempts,
      nonRetryableErrorTypes: [
        ActivityErrorType.UnknownTool,
        ActivityErrorType.InvalidToolArguments,
        ActivityErrorType.ToolFailedPermanently,
      ],
    },
  });
  try {
    return await tools.runTool({
      conversationId,
      toolCallId: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
      idempotencyKey: `${conversationId}/${call.id}`,
    });
  } catch (err) {
    return { content: toolFailedContent(failureMessage(err), failureReason(err)) };
  }
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
