/**
 * What a message sends besides its text, which the tokenizer cannot count from the transcript: the images of a
 * user message and, on the Responses API, the reasoning items sent back before an answer's items. The context
 * budget (`context-budget.ts`) adds these estimates to a message's tokens, so a request full of images or of a
 * reasoning model's earlier reasoning is fitted to the window (and held against a budget) at about its real size.
 *
 * Both are estimates: the provider's own count of earlier requests corrects them (the calibration, from each
 * answer's `usage.prompt_tokens`, scales every estimate up when the provider counted more).
 */
import type { ChatMessage } from '../contract/messages';
import { isMessageImageType } from '../contract/message-files';
import type { ReasoningEntry } from '../db/reasoning-store';
import { REASONING_FIELD } from './model/responses-request';

/**
 * Tokens of one image, by its `detail`, as OpenAI's rule for its vision models counts them: `low` is a fixed base
 * (85); `high` is that base plus 170 per 512-pixel tile of the image once scaled to fit 2048×2048 and then to 768
 * pixels on its short side, which covers at most 2×4 tiles (85 + 8 × 170). The worker sends images without a
 * `detail` (`auto`, which may pick `high`) and does not read their size, so every image is counted at the most
 * `high` gives.
 */
export const IMAGE_TOKENS = { low: 85, high: 85 + 8 * 170, auto: 85 + 8 * 170 } as const;

/** Framing of one reasoning item in the input, as for a message. */
const REASONING_ITEM_FRAMING = 4;

/**
 * Tokens of a reasoning item sent back: OpenAI counts a reasoning item in the input as the tokens of the reasoning
 * it holds (its `encrypted_content`), plus its summary's text. Nothing stored gives that reasoning's own count (an
 * answer's usage has only its output tokens, of which the reasoning is a part shared by every item of the answer),
 * so it is estimated from the encrypted text's length: base64 of about as many bytes as the reasoning's text, at
 * about four bytes per token as text has, that is 3/16 of a token per character. `count` counts the summary's
 * text (the tokenizer, or a bound).
 */
export function reasoningItemTokens(item: ReasoningEntry['item'], count: (text: string) => number): number {
  const summary = Array.isArray(item.summary)
    ? item.summary.reduce((n: number, s) => {
        const text = (s as { text?: unknown } | null)?.text;
        return n + (typeof text === 'string' ? count(text) : 0);
      }, 0)
    : 0;
  const encrypted =
    typeof item.encrypted_content === 'string' ? Math.ceil((item.encrypted_content.length * 3) / 16) : 0;
  return REASONING_ITEM_FRAMING + summary + encrypted;
}

/**
 * Tokens `message` sends besides its text, tool calls and reasoning content: its images (a user message's files)
 * and its reasoning items (an answer read for the Responses API). `count` counts text (the tokenizer, or a bound).
 */
export function extraTokens(message: ChatMessage, count: (text: string) => number): number {
  if (message.role === 'user') {
    return (message.files ?? []).filter((f) => isMessageImageType(f.mediaType)).length * IMAGE_TOKENS.auto;
  }
  if (message.role === 'assistant') {
    const entries = (message as { [REASONING_FIELD]?: ReasoningEntry[] })[REASONING_FIELD] ?? [];
    return entries.reduce((n, e) => n + reasoningItemTokens(e.item, count), 0);
  }
  return 0;
}
