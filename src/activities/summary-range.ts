/**
 * Summaries of earlier turns (`model.contextOverflow: 'summarize'`), the pure part: which messages a summary may
 * replace, the request that asks a model to write it, and the note a later model call is sent in their place.
 *
 * A summary replaces a run of whole turns: it starts after the system prompt and ends just before a user message
 * that is not in the current turn. An assistant message with tool calls is therefore always summarised with its
 * tool results (a turn ends only once every call is answered), and nothing that must follow an item (a reasoning
 * item, the results of its calls) is ever left on the other side of the cut.
 */
import { createHash } from 'node:crypto';
import { takeTokens } from '../common/tokens';
import type { ChatMessage } from '../contract/messages';
import { REASONING_FIELD } from './model/responses-request';

/** The most tokens a summary is asked to take: an eighth of the window, up to 2000. */
export function summaryMaxTokens(windowTokens: number): number {
  return Math.max(64, Math.min(2000, Math.floor(windowTokens / 8)));
}

/** Index of the first message after the system prompt (the first message a summary may replace). */
export function summaryStart(messages: readonly ChatMessage[]): number {
  return messages[0]?.role === 'system' ? 1 : 0;
}

/** Index of the current turn's first message (its last user message): it is always sent, never summarised. */
export function currentTurnStart(messages: readonly ChatMessage[]): number {
  const lastUser = messages.map((m) => m.role).lastIndexOf('user');
  const start = summaryStart(messages);
  return lastUser > start ? lastUser : start;
}

/**
 * Where a summary that must cover the messages before `end` (exclusive) may end: `end` itself when a user
 * message of an earlier turn starts there, else the nearest such boundary before it. Returns the exclusive end, or
 * undefined when no whole turn lies before it (nothing can be summarised).
 */
export function turnBoundaryAtOrBefore(messages: readonly ChatMessage[], end: number): number | undefined {
  const start = summaryStart(messages);
  let at = Math.min(end, currentTurnStart(messages));
  while (at > start && messages[at]?.role !== 'user') at--;
  return at > start ? at : undefined;
}

/** True when a summary of the messages before `end` (exclusive) may stand in for them in this request. */
export function isTurnBoundary(messages: readonly ChatMessage[], end: number): boolean {
  return end > summaryStart(messages) && end <= currentTurnStart(messages) && messages[end]?.role === 'user';
}

/**
 * Splits the range `[from, to)` (both turn boundaries) into runs of whole turns whose rendered text fits
 * `maxTokens` each; a turn larger than that alone is a run of its own (its messages are clipped when rendered).
 * Returns the exclusive end of each run.
 */
export function chunkEnds(
  messages: readonly ChatMessage[],
  from: number,
  to: number,
  tokensOf: (index: number) => number,
  maxTokens: number,
): number[] {
  const ends: number[] = [];
  let used = 0;
  let i = from;
  while (i < to) {
    let next = i + 1;
    while (next < to && messages[next].role !== 'user') next++;
    let turn = 0;
    for (let k = i; k < next; k++) turn += tokensOf(k);
    if (used > 0 && used + turn > maxTokens) {
      ends.push(i);
      used = 0;
    }
    used += turn;
    i = next;
  }
  if (ends.at(-1) !== to) ends.push(to);
  return ends;
}

/** SHA-256 of messages as they are sent: names a summary's range by its content, not only its seqs. */
export function digestOf(messages: readonly ChatMessage[]): string {
  // Without the Responses API's reasoning items a call carries in flight: a summary is the same on either API.
  const json = JSON.stringify(messages, (key, value: unknown) => (key === REASONING_FIELD ? undefined : value));
  return createHash('sha256').update(json).digest('hex');
}

/** One message as a summary request shows it: its seq, who spoke, the text clipped to `maxTokens`, the calls made. */
export function renderMessage(message: ChatMessage, seq: number, maxTokens: number): string {
  const clip = (text: string) => {
    const kept = takeTokens(text, maxTokens);
    return kept.whole ? text : `${kept.text} […${text.length - kept.text.length} more characters]`;
  };
  if (message.role === 'tool')
    return `[message ${seq}] result of tool call ${message.tool_call_id}: ${clip(message.content)}`;
  if (message.role === 'assistant') {
    const calls = (message.tool_calls ?? []).map(
      (c) => `\n  called ${c.function.name} (call ${c.id}) with ${clip(c.function.arguments)}`,
    );
    return `[message ${seq}] assistant: ${clip(message.content ?? '')}${calls.join('')}`;
  }
  const files = message.role === 'user' && message.files?.length ? ` [${message.files.length} file(s) attached]` : '';
  return `[message ${seq}] ${message.role}: ${clip(message.content)}${files}`;
}

/** The instructions of a summary request. */
export const SUMMARY_INSTRUCTIONS =
  'You write the summary of the earlier part of a conversation between a user and an assistant (with the tools the ' +
  'assistant called and their results), which the assistant will be sent in place of those messages. Keep every ' +
  'fact, name, number, identifier, date, decision, commitment, preference and open question the assistant may need ' +
  'later, and which tool results were obtained; leave out small talk. Write plain notes in the language of the ' +
  'conversation, shorter than {words} words. Do not answer or continue the conversation: only summarise it.';

/**
 * The messages of a summary request: its instructions, then the summary so far (when extending one) and the
 * messages to add, already rendered.
 */
export function summaryRequestMessages(
  previous: { summary: string; fromSeq: number; throughSeq: number } | undefined,
  rendered: { text: string; fromSeq: number; throughSeq: number },
  maxTokens: number,
): ChatMessage[] {
  const words = Math.max(40, Math.floor(maxTokens * 0.7));
  const earlier = previous
    ? `The summary of messages ${previous.fromSeq}–${previous.throughSeq}, written before:\n${previous.summary}\n\n` +
      `The messages that follow it (${rendered.fromSeq}–${rendered.throughSeq}); write one summary of both:\n`
    : `The messages to summarise (${rendered.fromSeq}–${rendered.throughSeq}):\n`;
  return [
    { role: 'system', content: SUMMARY_INSTRUCTIONS.replace('{words}', String(words)) },
    { role: 'user', content: earlier + rendered.text },
  ];
}

/** What a model call is sent in place of the summarised messages. */
export function summaryNote(summary: string, fromSeq: number, throughSeq: number, windowTokens: number): ChatMessage {
  return {
    role: 'system',
    content:
      `[Summary of messages ${fromSeq}–${throughSeq} of this conversation, sent in their place to fit the model's ` +
      `context window of ${windowTokens} tokens. The messages are stored with the conversation and were answered.]\n` +
      summary,
  };
}
