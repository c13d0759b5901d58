/**
 * What of a long text crosses workflow history: the whole text up to a limit,
 * else a preview that says where the whole is stored. Tool results and model
 * answers are stored in PostgreSQL and appended by reference, so history
 * carries only this.
 */

/** Texts up to this many characters cross history whole, unless the worker sets another limit. */
export const DEFAULT_INLINE_LIMIT = 4096;

/** Characters a preview keeps. */
export const PREVIEW_LENGTH = 512;

/**
 * `text` when it is at most `limit` characters, else its first {@link PREVIEW_LENGTH} and where the whole is (`stored`,
 * e.g. "result is stored under …").
 */
export function inlineOrPreview(text: string, limit: number, stored: string): string {
  return text.length <= limit
    ? text
    : `${text.slice(0, PREVIEW_LENGTH)}… [${text.length} characters; the full ${stored}]`;
}
