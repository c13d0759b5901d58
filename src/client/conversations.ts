/**
 * Talking to conversations: send a message (starting the conversation with
 * signal-with-start), wait for its turn, ask and read the answer, cancel a
 * turn, end a conversation, and find those with unknown effects.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { z } from 'zod';
import {
  ConversationClosedError,
  InvalidConversationInputError,
  MessageTooLargeError,
  OutputMismatchError,
  UnstorableTextError,
} from '../common/errors';
import { describeUnusableOutputSchema, resolveOutput } from '../common/typed-output';
import { describeUnstorableText } from '../contract/text';
import { describeBadMessageFiles, type MessageFile } from '../contract/message-files';
import {
  cancelTurnSignal,
  CONVERSATION_SEARCH_ATTRIBUTE_FIELDS,
  CONVERSATION_SEARCH_ATTRIBUTES,
  conversationSearchAttributeKeys,
  CONVERSATION_WORKFLOW_TYPE,
  describeInvalidInput,
  describeOversizedUserMessage,
  describeUnstorableCancel,
  describeUnstorableUserMessage,
  endConversationSignal,
  userMessageSignal,
  USER_MESSAGE_MAX_BYTES,
  utf8Bytes,
  type ConversationInput,
  type ConversationState,
  type TurnRecord,
  type UnknownEffect,
} from '../contract';
import type { ClientContext } from './context';
import { refuseChildConversation } from './child-conversations';
import { isWorkerOutage, queryState } from './state-query';
import { transcript } from './transcripts';

/** Options of `AgentClient.sendMessage`. */
export interface SendMessageOptions {
  /** Used only if this message starts the conversation. */
  input?: ConversationInput;
  /** Id for deduplication and for `AgentClient.waitForTurn`; a random UUID when unset. */
  messageId?: string;
  /** Who sends it, as your authentication knows them; shown as `requestedBy` of the approvals its turn asks for. */
  sentBy?: string;
  /** Files it carries, as `AgentClient.storeMessageFiles` returned them; the text may then be empty. */
  files?: MessageFile[];
}

/** A turn's record and, when it answered, the text of its answer and its typed output. */
export interface TurnAnswer<T = unknown> {
  turn: TurnRecord;
  answer?: string;
  /**
   * The typed output, when the conversation asks for one
   * (`ConversationInput.output` or the agent's `outputType`) and the turn
   * answered: parsed with the schema given to `AgentClient.ask`, when given.
   */
  output?: T;
}

/** Options of `AgentClient.ask`. */
export interface AskOptions<T> extends SendMessageOptions {
  /** How long to wait for the turn, ms. Default 120,000. */
  timeoutMs?: number;
  /**
   * The answer's type, as a zod schema: it becomes the conversation's
   * `input.output` when this message starts it (and `input.output` is
   * unset), and the turn's output is parsed with it into `output`.
   */
  output?: z.ZodType<T>;
}

/** A conversation with tool calls whose effect is unknown, for someone to check. */
export interface ConversationWithUnknownEffects {
  conversationId: string;
  /** Calls settled as `effect_unknown` in the whole conversation. */
  count: number;
  /** The most recent of them. */
  unknownEffects: UnknownEffect[];
}

/** Sends a user message as `AgentClient.sendMessage` does; returns the message id. */
export async function sendMessage(
  context: ClientContext,
  conversationId: string,
  text: string,
  options: SendMessageOptions = {},
): Promise<string> {
  const files = options.files ?? [];
  if (typeof text !== 'string' || (text.trim() === '' && files.length === 0)) {
    throw new TypeError('A message needs some text (or a file): got an empty message.');
  }
  const badFiles = describeBadMessageFiles(options.files);
  if (badFiles) throw new TypeError(`Invalid message files: ${badFiles}. Nothing was sent.`);
  const oversized = describeOversizedUserMessage(text);
  if (oversized) {
    throw new MessageTooLargeError(
      `${oversized.charAt(0).toUpperCase()}${oversized.slice(1)} (USER_MESSAGE_MAX_BYTES). ` +
        'Nothing was sent. Put a large document where a tool can read it (a file, a table) and send a short message about it, or split it.',
      utf8Bytes(text),
      USER_MESSAGE_MAX_BYTES,
    );
  }
  const messageId = options.messageId ?? randomUUID();
  const unstorable =
    describeUnstorableText('The conversation id', conversationId) ??
    describeUnstorableUserMessage({ text, messageId, sentBy: options.sentBy });
  if (unstorable) throw new UnstorableTextError(`${unstorable}. Nothing was sent.`);
  // With what a provider would refuse for certain: such an input is refused here rather than failing every turn.
  const problems = describeInvalidInput(options.input, { providers: true });
  // Only the workflow starts a conversation for an agent called as a tool: a caller typed by hand would place its calls
  // under another conversation.
  if (options.input?.calledBy !== undefined)
    problems.push('calledBy is set by the workflow for an agent called as a tool, never by a sender');
  if (problems.length === 0 && options.input?.output) problems.push(...uncompilableOutput(options.input.output));
  if (problems.length > 0)
    throw new InvalidConversationInputError(`Invalid conversation input: ${problems.join('; ')}.`);
  await refuseChildConversation(context, conversationId);
  const input = await withSearchAttributeNames(context, options.input ?? {});
  try {
    await context.temporal.workflow.signalWithStart(CONVERSATION_WORKFLOW_TYPE, {
      workflowId: conversationId,
      taskQueue: context.taskQueue,
      args: [input],
      signal: userMessageSignal,
      signalArgs: [
        {
          text,
          messageId,
          ...(options.sentBy === undefined ? {} : { sentBy: options.sentBy }),
          ...(files.length > 0 ? { files } : {}),
        },
      ],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      // A workflow task held by a worker that died is handed to another one after this long
      // (Temporal's default is 10 s). Conversation tasks take milliseconds; continue-as-new keeps it.
      workflowTaskTimeout: context.workflowTaskTimeout,
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) throw new ConversationClosedError(conversationId);
    throw err;
  }
  return messageId;
}

/** Waits for the turn that took `messageId`, as `AgentClient.waitForTurn` does. */
export async function waitForTurn(
  context: ClientContext,
  conversationId: string,
  messageId: string,
  timeoutMs = 120_000,
): Promise<TurnRecord> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let state: ConversationState;
    try {
      state = await queryState(context, conversationId);
    } catch (err) {
      if (!isWorkerOutage(err) || Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 200));
      continue;
    }
    const turn = state.recentTurns.find((t) => t.messageIds.includes(messageId));
    if (turn) return turn;
    if (Date.now() > deadline) {
      throw new Error(
        `Conversation ${conversationId}: the turn for message ${messageId} did not finish within ${timeoutMs} ms (status ${state.status}). Is a worker running on task queue "${context.taskQueue}"?`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Sends a message and reads its turn's answer, as `AgentClient.ask` does. */
export async function ask<T>(
  context: ClientContext,
  conversationId: string,
  text: string,
  options: AskOptions<T> = {},
): Promise<TurnAnswer<T>> {
  const { output: type, timeoutMs, ...send } = options;
  const input =
    type && !send.input?.output
      ? { ...send.input, output: { schema: resolveOutput(type, { what: 'ask' }).schema } }
      : send.input;
  const messageId = await sendMessage(context, conversationId, text, { ...send, ...(input ? { input } : {}) });
  const turn = await waitForTurn(context, conversationId, messageId, timeoutMs);
  if (turn.answerSeq === undefined) return { turn };
  const messages = await transcript(context, conversationId, turn.answerSeq);
  const stored = messages.find((m) => m.seq === turn.answerSeq)?.message;
  const answer = stored?.role === 'assistant' ? (stored.content ?? '') : undefined;
  const typed =
    turn.outcome !== 'answered'
      ? undefined
      : turn.outputInAnswer
        ? { value: JSON.parse(answer ?? 'null') as unknown }
        : 'output' in turn
          ? { value: turn.output }
          : undefined;
  if (!typed) return { turn, answer };
  if (!type) return { turn, answer, output: typed.value as T };
  const parsed = type.safeParse(typed.value);
  if (!parsed.success) {
    throw new OutputMismatchError(
      `Conversation ${conversationId}: the turn's output does not match the schema given to ask() (the conversation asks for another): ${z.prettifyError(parsed.error)}`,
      turn,
      answer,
    );
  }
  return { turn, answer, output: parsed.data };
}

/** Cancels the current turn, as `AgentClient.cancelTurn` does. */
export async function cancelTurn(context: ClientContext, conversationId: string, reason?: string): Promise<void> {
  const unstorable = describeUnstorableCancel({ reason });
  if (unstorable) throw new UnstorableTextError(`Invalid cancel: ${unstorable}. Nothing was sent.`);
  await context.temporal.workflow.getHandle(conversationId).signal(cancelTurnSignal, reason ? { reason } : {});
}

/** Ends the conversation after its current turn and queued messages, as `AgentClient.end` does. */
export async function endConversation(context: ClientContext, conversationId: string): Promise<void> {
  await context.temporal.workflow.getHandle(conversationId).signal(endConversationSignal);
}

/** The conversations with unknown effects, as `AgentClient.withUnknownEffects` lists them. */
export async function withUnknownEffects(context: ClientContext): Promise<ConversationWithUnknownEffects[]> {
  const attribute = conversationSearchAttributeKeys(await context.searchAttributeNamesInUse()).unknownEffects;
  if (!attribute) {
    throw new Error(
      `Listing conversations with unknown effects needs the search attribute ${context.configuredNames.unknownEffects ?? CONVERSATION_SEARCH_ATTRIBUTES.unknownEffects.name} (group unknownEffects), ` +
        `which namespace "${context.temporal.options.namespace}" does not have or this client leaves out. The worker logs why at start; docs/search-attributes.md says how to have it. ` +
        "Each conversation's own state still lists its unknown effects (npm run cli -- state <id>).",
    );
  }
  const found: ConversationWithUnknownEffects[] = [];
  const seen = new Set<string>();
  for await (const execution of context.temporal.workflow.list({ query: `${attribute.name} > 0` })) {
    // Every run of a conversation that continued as new carries the count: list the conversation once.
    if (seen.has(execution.workflowId)) continue;
    seen.add(execution.workflowId);
    const state = await queryState(context, execution.workflowId).catch(() => undefined);
    const count = state?.unknownEffectsCount ?? Number(execution.typedSearchAttributes.get(attribute) ?? 0);
    found.push({ conversationId: execution.workflowId, count, unknownEffects: state?.unknownEffects ?? [] });
  }
  return found;
}

/**
 * The input a conversation starts with: the caller's, with the names of the
 * search attributes it sets (those of the configured groups that the
 * namespace has). Left out when they are the seven under their own names,
 * which is what a conversation without them sets.
 */
export async function withSearchAttributeNames(
  context: ClientContext,
  input: ConversationInput,
): Promise<ConversationInput> {
  if (input.searchAttributes !== undefined) return input;
  const names = await context.searchAttributeNamesInUse();
  const everyOneUnderItsName = CONVERSATION_SEARCH_ATTRIBUTE_FIELDS.every(
    (field) => names[field] === CONVERSATION_SEARCH_ATTRIBUTES[field].name,
  );
  return everyOneUnderItsName ? input : { ...input, searchAttributes: names };
}

/** Why a conversation's typed output cannot be used (its JSON Schema does not compile), before anything is sent. */
function uncompilableOutput(spec: NonNullable<ConversationInput['output']>): string[] {
  return describeUnusableOutputSchema(spec, 'output');
}
