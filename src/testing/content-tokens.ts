/**
 * How the scripted model server counts what a message sends besides plain
 * text: content parts (text, images, files) of both APIs, and the reasoning
 * items a Responses request sends back. Shared by the Chat Completions count
 * (`context-window.ts`) and the Responses count (`responses-plan.ts`), so both
 * bill an image or a reasoning item alike.
 *
 * @packageDocumentation
 */

import { countTokens } from '../common/tokens';
import { openReasoning } from './responses-encrypted';

/**
 * Tokens of one image part, by its `detail`. The server does not read an
 * image's size, so it counts every image as a 1024×1024 one: `low` is OpenAI's
 * fixed 85; `high` and `auto` (which OpenAI may serve as `high`) are that base
 * plus 170 per 512-pixel tile of the image scaled to 768×768, 2×2 tiles:
 * 85 + 4 × 170 = 765.
 */
export const SCRIPTED_IMAGE_TOKENS = { low: 85, high: 765, auto: 765 } as const;

/** Framing tokens of a reasoning item sent back, as for any input item. */
const REASONING_ITEM_FRAMING = 4;

/** Tokens of an image part with this `detail` (anything but `low` counts as `auto`). */
export function imageTokens(detail: unknown): number {
  return detail === 'low' ? SCRIPTED_IMAGE_TOKENS.low : SCRIPTED_IMAGE_TOKENS.auto;
}

/**
 * Tokens of a message's `content` of either API: a string's tokens, or the sum
 * of its parts: text parts (`text`, `input_text`, `output_text`, `refusal`) by
 * their text, image parts (`image_url`, `input_image`) by {@link imageTokens},
 * file parts by their filename only (the server does not read a PDF's pages).
 */
export function contentTokens(content: unknown): number {
  if (typeof content === 'string') return countTokens(content);
  if (!Array.isArray(content))
    return content === undefined || content === null ? 0 : countTokens(JSON.stringify(content));
  let tokens = 0;
  for (const raw of content as Record<string, unknown>[]) {
    if (raw === null || typeof raw !== 'object') continue;
    switch (raw.type) {
      case 'image_url':
        tokens += imageTokens((raw.image_url as { detail?: unknown } | undefined)?.detail);
        break;
      case 'input_image':
        tokens += imageTokens(raw.detail);
        break;
      case 'file':
        tokens += countTokens(String((raw.file as { filename?: unknown } | undefined)?.filename ?? ''));
        break;
      case 'input_file':
        tokens += countTokens(String(raw.filename ?? ''));
        break;
      default:
        tokens += countTokens(String(raw.text ?? raw.refusal ?? ''));
    }
  }
  return tokens;
}

/**
 * Tokens of a reasoning item sent back, as OpenAI bills it: the reasoning it
 * holds (the text its `encrypted_content` seals, when this server sealed it),
 * its summary's text, and a few framing tokens.
 */
export function reasoningInputTokens(item: Record<string, unknown>): number {
  const held = openReasoning(item.encrypted_content)?.text ?? '';
  const summary = Array.isArray(item.summary)
    ? (item.summary as { text?: unknown }[]).reduce(
        (n, s) => n + (typeof s?.text === 'string' ? countTokens(s.text) : 0),
        0,
      )
    : 0;
  return REASONING_ITEM_FRAMING + countTokens(held) + summary;
}
