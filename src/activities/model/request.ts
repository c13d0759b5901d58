/**
 * The request a model call sends: the current agent's instructions, the
 * transcript fitted to the context window, the tools offered and the typed
 * output asked for; and the tighter window to try when the provider says
 * the request was still too large.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { ActivityErrorType } from '../../contract/activities';
import type { ChatMessage } from '../../contract/messages';
import type { Agent } from '../../tools/agents';
import { fitToContext, type BudgetReport } from '../context-budget';
import type { PreparedCall } from './prepare';
import { filteredAfterHandoff, type HandoffFilterNote } from './handoffs';

/** The messages as the current agent sends them, with their seqs when they line up with the transcript's. */
export interface OutgoingMessages {
  messages: ChatMessage[];
  seqs?: number[];
  /** Set when a handoff's input filter left messages out: what it left, stored with the request's report. */
  handoffFilter?: HandoffFilterNote;
  /** Leading messages the fitting never leaves out (the instructions and a summary of earlier turns); see `fitToContext`. */
  pinned?: number;
  /** Set when a summary stands in for earlier messages (`summaries.ts`): the seqs it replaces, stored with the report. */
  summary?: { fromSeq: number; throughSeq: number };
}

/** A request body fitted to a window, with the budget's report of what was cut (stored with the answer). */
export interface FittedRequest {
  body: ChatCompletionCreateParamsNonStreaming;
  report: {
    windowTokens: number;
    handoffFilter?: HandoffFilterNote;
    summary?: { fromSeq: number; throughSeq: number };
  } & BudgetReport;
}

/**
 * The messages as the current agent sends them: its instructions in place of
 * the stored system message (or first, when there is none); which agent wrote
 * each answer stays in the transcript, never sent.
 */
export function withInstructions(transcript: OutgoingMessages, speaker: Agent | undefined): OutgoingMessages {
  // A handoff's input filter decides what the new agent is sent of the conversation before it.
  const { outgoing, note } = filteredAfterHandoff(transcript, speaker);
  const sent = instructed(outgoing, speaker);
  return note ? { ...sent, handoffFilter: note } : sent;
}

function instructed(loaded: OutgoingMessages, speaker: Agent | undefined): OutgoingMessages {
  const named = (m: ChatMessage) => m.role === 'assistant' && m.name !== undefined;
  const messages = loaded.messages.some(named)
    ? loaded.messages.map((m) => (named(m) ? withoutName(m as Extract<ChatMessage, { role: 'assistant' }>) : m))
    : loaded.messages;
  if (!speaker?.instructions) return { ...loaded, messages };
  const system: ChatMessage = { role: 'system', content: speaker.instructions };
  if (messages[0]?.role === 'system') return { messages: [system, ...messages.slice(1)], seqs: loaded.seqs };
  return { messages: [system, ...messages] };
}

function withoutName(message: Extract<ChatMessage, { role: 'assistant' }>): ChatMessage {
  const { name: _agent, ...rest } = message;
  return rest;
}

/** The request for `window` tokens: the messages fitted, leaving room for the reply. */
export function fittedRequest(
  call: PreparedCall,
  outgoing: OutgoingMessages,
  calibration: number,
  window: number,
): FittedRequest {
  const { settings, model, output } = call;
  const tools = call.offer.specs;
  const fitted = fitToContext(outgoing.messages, {
    windowTokens: window,
    replyTokens: settings.maxTokens ?? Math.min(4096, Math.floor(window / 8)),
    tools,
    calibration,
    seqs: outgoing.seqs,
    pinned: outgoing.pinned,
    // A call under a budget holds its prompt's tokens against it before it is sent: they are counted, not bounded.
    alwaysCount: call.input.budget !== undefined,
  });
  const body: ChatCompletionCreateParamsNonStreaming = {
    model,
    messages: fitted.messages as ChatCompletionCreateParamsNonStreaming['messages'],
    ...(settings.temperature !== undefined ? { temperature: settings.temperature } : {}),
    ...(settings.maxTokens !== undefined ? { max_tokens: settings.maxTokens } : {}),
    ...(tools.length > 0 ? { tools, tool_choice: call.input.toolChoice } : {}),
    ...(output
      ? {
          response_format: {
            type: 'json_schema',
            json_schema: { name: output.name, schema: output.schema, strict: output.strict },
          },
        }
      : {}),
  };
  return {
    body,
    report: {
      windowTokens: window,
      ...fitted.report,
      ...(outgoing.handoffFilter ? { handoffFilter: outgoing.handoffFilter } : {}),
      ...(outgoing.summary ? { summary: outgoing.summary } : {}),
    },
  };
}

/**
 * The window to fit a request to after the provider refused it as too large:
 * three quarters of what the provider says its window is (or of the window
 * used, when it does not say). Undefined when `err` is another failure.
 */
export function smallerWindow(err: unknown, usedWindow: number): number | undefined {
  if (!(err instanceof ApplicationFailure) || err.type !== ActivityErrorType.ContextLengthExceeded) return undefined;
  const stated = (err.details?.[0] as { windowTokens?: number | null } | undefined)?.windowTokens;
  return Math.floor(Math.min(stated ?? usedWindow, usedWindow) * 0.75);
}

/** A second refusal after fitting tighter fails the call for good, saying what was tried. */
export function contextStillExceeded(err: unknown, windowTokens: number): unknown {
  if (!(err instanceof ApplicationFailure) || err.type !== ActivityErrorType.ContextLengthExceeded) return err;
  return ApplicationFailure.create({
    message:
      `${err.message} The request had already been fitted to ${windowTokens} tokens once. ` +
      "Set the model's real window (ModelSettings.contextWindow or OPENAI_CONTEXT_WINDOW).",
    type: ActivityErrorType.ModelRequestRejected,
    nonRetryable: true,
    details: err.details ?? undefined,
  });
}
