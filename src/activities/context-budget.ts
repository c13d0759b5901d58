/**
 * The context budget: fits the messages of a model request to the model's
 * context window. What is stored is never changed; only what is sent is.
 *
 * 1. A message larger than its share of the window (a quarter) is shown
 *    truncated, with a marker that says how much was cut, that the full
 *    text is stored, and how to get at a part of it.
 * 2. If the request is still too large, the oldest turns are left out, whole
 *    (a turn runs from a user message to the next, so an assistant message
 *    with `tool_calls` always travels with its tool results), replaced by one
 *    note after the system prompt. The current turn is always sent.
 * 3. If the current turn alone is still too large, its largest messages are
 *    cut further, down to a floor.
 *
 * Leaving turns out keeps a model call one request, deterministic, and free
 * of a second failure mode; a conversation may ask for a summary of them
 * instead (`model.contextOverflow: 'summarize'`, `model/summaries.ts`).
 *
 * Tokens are counted with `gpt-tokenizer` (o200k, the encoding of OpenAI's
 * current models; an estimate for other providers' models; see `tokens.ts`),
 * never more text than the budget needs: a message is counted only as far as
 * it is kept, and nothing is counted when a bound (a text has no more tokens
 * than UTF-8 bytes) shows the request fits as it is: then nothing would be
 * cut or left out, and the request goes unchanged with its bound. What a
 * message sends besides text (a user's images, the Responses API's reasoning
 * items sent back) is added at an estimate of its own (`sent-extras.ts`).
 */
import { countTokens, takeTokens, tokenBound } from '../common/tokens';
import type { ChatMessage } from '../contract/messages';
import { extraTokens } from './sent-extras';

/**
 * Context windows of well-known models, in tokens; `ModelSettings.contextWindow` or `OPENAI_CONTEXT_WINDOW` set others.
 */
export const KNOWN_CONTEXT_WINDOWS: { prefix: string; tokens: number }[] = [
  { prefix: 'gpt-4.1', tokens: 1_047_576 },
  { prefix: 'gpt-5', tokens: 400_000 },
  { prefix: 'gpt-4o', tokens: 128_000 },
  { prefix: 'gpt-4-turbo', tokens: 128_000 },
  { prefix: 'gpt-3.5-turbo', tokens: 16_385 },
  { prefix: 'o1', tokens: 200_000 },
  { prefix: 'o3', tokens: 200_000 },
  { prefix: 'o4', tokens: 200_000 },
  { prefix: 'deepseek', tokens: 128_000 },
];

/** The window assumed for a model that is neither known nor configured. */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

/** The largest part of the input budget one message may take before it is shown truncated. */
export const MESSAGE_SHARE = 0.25;

/** Framing tokens per message, as providers count them. */
const TOKENS_PER_MESSAGE = 4;
/** A message is never cut below this many tokens. */
const FLOOR_TOKENS = 256;

/** The context window of `model`: the configured one, a known one, or {@link DEFAULT_CONTEXT_WINDOW}. */
export function contextWindowOf(model: string, configured?: number): number {
  if (configured !== undefined) return configured;
  const name = model.toLowerCase().replace(/^.*\//, '');
  return KNOWN_CONTEXT_WINDOWS.find((k) => name.startsWith(k.prefix))?.tokens ?? DEFAULT_CONTEXT_WINDOW;
}

/** What the fitting did, for logs, the stored response and measurements. */
export interface BudgetReport {
  /** Tokens available for messages: the window minus the reply's reserve, the tool definitions and a margin. */
  budgetTokens: number;
  /**
   * Estimated prompt tokens of the fitted request (tool definitions
   * included), before calibration; absent when the request was sent without
   * counting (see {@link BudgetReport.boundTokens}).
   */
  promptTokens?: number;
  /** Set when nothing was counted: the bound (UTF-8 bytes and framing) that showed the whole request fits. */
  boundTokens?: number;
  /** Messages shown truncated, by their index in the stored list. */
  truncated: number[];
  /** Messages left out with earlier turns. */
  elided: number;
}

/** Options of {@link fitToContext}. */
export interface BudgetOptions {
  windowTokens: number;
  /** Tokens kept free for the reply. */
  replyTokens: number;
  /** Tool definitions sent with the request (counted against the window). */
  tools?: unknown[];
  /**
   * How much more the provider counts than this estimate, from earlier
   * responses' `usage.prompt_tokens` (1 when unknown; at least 1).
   */
  calibration?: number;
  /** Seq of each message, for the markers (defaults to its index). */
  seqs?: number[];
  /** Count tokens even when the bound shows the request fits (an exact estimate every time). Default false. */
  alwaysCount?: boolean;
  /**
   * Leading messages always sent, never left out: the system prompt and a summary of earlier turns
   * (`summary-range.ts`). Default: the first message when it is a system message.
   */
  pinned?: number;
}

/**
 * Fits `messages` to the window. Returns the messages to send and what was
 * done. Counts from the newest turn back and stops at the first turn that
 * does not fit, so a long conversation costs about one window of counting.
 */
export function fitToContext(
  messages: readonly ChatMessage[],
  options: BudgetOptions,
): { messages: ChatMessage[]; report: BudgetReport } {
  const calibration = Math.max(1, options.calibration ?? 1);
  if (!options.alwaysCount) {
    const fits = fitsUncounted(messages, options, calibration);
    if (fits) return { messages: [...messages], report: fits };
  }
  const toolTokens = options.tools && options.tools.length > 0 ? countTokens(JSON.stringify(options.tools)) : 0;
  const budget = Math.max(FLOOR_TOKENS * 4, messageBudget(options, calibration, toolTokens));
  const share = Math.max(FLOOR_TOKENS, Math.floor(budget * MESSAGE_SHARE));
  const truncated = new Set<number>();
  const fit = (index: number, maxTokens: number): Sized => {
    const fitted = fitMessage(messages[index], maxTokens, options.seqs?.[index] ?? index);
    if (fitted.cut) truncated.add(index);
    return { index, message: fitted.message, tokens: fitted.tokens };
  };
  const sum = (list: Sized[]) => list.reduce((total, m) => total + m.tokens, 0);

  // The system prompt and the current turn (from the last user message) are always sent.
  const lead = options.pinned ?? (messages[0]?.role === 'system' ? 1 : 0);
  const lastUser = messages.map((m) => m.role).lastIndexOf('user');
  const currentFrom = lastUser > lead ? lastUser : lead;
  const head = range(0, lead).map((i) => fit(i, share));
  const current = range(currentFrom, messages.length).map((i) => fit(i, share));
  // Earlier turns, newest first, while they fit; the first that does not fit and everything before it are left out.
  let kept: Sized[] = [];
  let used = sum(head) + sum(current);
  let end = currentFrom;
  while (end > lead) {
    let start = end - 1;
    while (start > lead && messages[start].role !== 'user') start--;
    const turn = range(start, end).map((i) => fit(i, share));
    if (used + sum(turn) > budget) break;
    kept = [...turn, ...kept];
    used += sum(turn);
    end = start;
  }
  const elided = end - lead;
  for (let i = lead; i < end; i++) truncated.delete(i);

  // The current turn alone is too large: cut its largest messages further.
  while (sum(head) + sum(kept) + sum(current) > budget) {
    const largest = current.reduce((a, b) => (b.tokens > a.tokens ? b : a));
    const target = Math.max(FLOOR_TOKENS, Math.floor(largest.tokens / 2));
    if (target >= largest.tokens - TOKENS_PER_MESSAGE || typeof largest.message.content !== 'string') break;
    const smaller = fit(largest.index, target);
    if (smaller.tokens >= largest.tokens) break;
    Object.assign(largest, smaller);
  }

  const note: ChatMessage[] =
    elided > 0
      ? [
          {
            role: 'system',
            content:
              `[Context note: ${elided} earlier messages were left out to fit the model's context window of ` +
              `${options.windowTokens} tokens. They are stored with the conversation and were answered.]`,
          },
        ]
      : [];
  const out = [...head.map((m) => m.message), ...note, ...kept.map((m) => m.message), ...current.map((m) => m.message)];
  const noteTokens = note.length > 0 ? TOKENS_PER_MESSAGE + countTokens(note[0].content as string) : 0;
  return {
    messages: out,
    report: {
      budgetTokens: budget,
      promptTokens: sum(head) + sum(kept) + sum(current) + noteTokens + toolTokens,
      truncated: [...truncated].sort((a, b) => a - b),
      elided,
    },
  };
}

/**
 * Tokens left for messages: the window less the reply's reserve and a margin, scaled down by the calibration, less the
 * tools.
 */
function messageBudget(options: BudgetOptions, calibration: number, toolTokens: number): number {
  const margin = Math.ceil(options.windowTokens * 0.02) + 16;
  return Math.floor((options.windowTokens - options.replyTokens - margin) / calibration) - toolTokens;
}

/**
 * The report of a request that fits without counting, or undefined: with
 * every text's tokens bounded by its bytes, when each message is within its
 * share and the whole within the budget, the counted path would send every
 * message whole, so counting would change nothing.
 */
function fitsUncounted(
  messages: readonly ChatMessage[],
  options: BudgetOptions,
  calibration: number,
): BudgetReport | undefined {
  const toolBound = options.tools && options.tools.length > 0 ? tokenBound(JSON.stringify(options.tools)) : 0;
  const budget = messageBudget(options, calibration, toolBound);
  const share = Math.floor(budget * MESSAGE_SHARE);
  let total = toolBound;
  for (const message of messages) {
    const bound = messageBound(message);
    if (bound > share) return undefined;
    total += bound;
  }
  if (total - toolBound > budget) return undefined;
  return { budgetTokens: budget, boundTokens: total, truncated: [], elided: 0 };
}

/** At least the tokens of `message` as {@link fitMessage} counts them: framing, then bytes for tokens. */
function messageBound(message: ChatMessage): number {
  let bound =
    TOKENS_PER_MESSAGE +
    (typeof message.content === 'string' ? tokenBound(message.content) : 0) +
    extraTokens(message, tokenBound);
  if (message.role === 'assistant') {
    if (message.tool_calls && message.tool_calls.length > 0) bound += tokenBound(JSON.stringify(message.tool_calls));
    if (message.reasoning_content) bound += tokenBound(message.reasoning_content);
  }
  return bound;
}

interface Sized {
  index: number;
  message: ChatMessage;
  tokens: number;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
}

/** The marker appended to a truncated message. */
export function truncationMarker(shownChars: number, totalChars: number, seq: number): string {
  return (
    `\n\n[… truncated to fit the model's context window: showing the first ${shownChars} of ${totalChars} characters. ` +
    `The full text is stored with the conversation (message ${seq}). To see another part, ask for it specifically ` +
    `(call the tool again for a narrower or later part).]`
  );
}

/** One message within `maxTokens`: its tokens, cut with a marker when over. */
function fitMessage(
  message: ChatMessage,
  maxTokens: number,
  seq: number,
): { message: ChatMessage; tokens: number; cut: boolean } {
  const fixed = TOKENS_PER_MESSAGE + fixedTokens(message);
  const content = typeof message.content === 'string' ? message.content : '';
  const room = Math.max(FLOOR_TOKENS, maxTokens - fixed);
  const whole = takeTokens(content, room);
  if (whole.whole) return { message, tokens: fixed + whole.tokens, cut: false };
  const keep = Math.max(0, room - countTokens(truncationMarker(content.length, content.length, seq)) - 8);
  const shown = takeTokens(content, keep).text;
  const text = shown + truncationMarker(shown.length, content.length, seq);
  return { message: { ...message, content: text } as ChatMessage, tokens: fixed + countTokens(text), cut: true };
}

/** Tokens of a message besides its content: tool calls, reasoning, images. */
function fixedTokens(message: ChatMessage): number {
  if (message.role !== 'assistant') return extraTokens(message, countTokens);
  let tokens = extraTokens(message, countTokens);
  if (message.tool_calls && message.tool_calls.length > 0) tokens += countTokens(JSON.stringify(message.tool_calls));
  if (message.reasoning_content) tokens += countTokens(message.reasoning_content);
  return tokens;
}
