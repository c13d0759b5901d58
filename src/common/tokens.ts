/**
 * Token counting with `gpt-tokenizer` (o200k), safe for any text: the
 * tokenizer's merges take time quadratic in the length of one unbroken run
 * (300 kB of base64 or of one repeated letter takes tens of seconds), so text
 * is tokenized in pieces of at most {@link PIECE_CHARS} characters, cut at
 * whitespace where there is some. Cutting there changes the count of normal
 * text by next to nothing; an unbroken run is counted slightly high.
 */

type Tokenizer = typeof import('gpt-tokenizer');
let loaded: Tokenizer | undefined;

/**
 * The tokenizer, loaded on first use: its tables take about 70 MB, which a
 * worker whose requests are far below their windows never needs (the context
 * budget counts only when a byte bound says a request may not fit).
 */
function tokenizer(): Tokenizer {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  loaded ??= require('gpt-tokenizer') as Tokenizer;
  return loaded;
}

/**
 * At least the tokens of `text`: its UTF-8 bytes. Every o200k token encodes
 * at least one byte (and so do the byte-level tokenizers of other
 * providers), so a text never has more tokens than bytes.
 */
export function tokenBound(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** The longest piece tokenized at once. */
export const PIECE_CHARS = 512;

/** Splits `text` into pieces of at most {@link PIECE_CHARS}, each ending after whitespace when the piece has any. */
function* pieces(text: string): Generator<string> {
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + PIECE_CHARS, text.length);
    if (end < text.length) {
      const cut = Math.max(text.lastIndexOf(' ', end - 1), text.lastIndexOf('\n', end - 1));
      if (cut > start) end = cut + 1;
      // Never split a surrogate pair.
      const code = text.charCodeAt(end - 1);
      if (code >= 0xd800 && code <= 0xdbff) end++;
    }
    yield text.slice(start, end);
    start = end;
  }
}

/** The tokens of `text`. */
export function countTokens(text: string): number {
  let tokens = 0;
  const { encode } = tokenizer();
  for (const piece of pieces(text)) tokens += encode(piece).length;
  return tokens;
}

/**
 * The longest start of `text` of at most `maxTokens` tokens, and whether
 * that is all of it. Tokenizes no more of the text than it keeps.
 */
export function takeTokens(text: string, maxTokens: number): { text: string; tokens: number; whole: boolean } {
  const { decode, encode } = tokenizer();
  const kept: string[] = [];
  let tokens = 0;
  for (const piece of pieces(text)) {
    const encoded = encode(piece);
    if (tokens + encoded.length > maxTokens) {
      const part = decode(encoded.slice(0, maxTokens - tokens));
      kept.push(part);
      return { text: kept.join(''), tokens: tokens + encode(part).length, whole: false };
    }
    kept.push(piece);
    tokens += encoded.length;
  }
  return { text: kept.join(''), tokens, whole: true };
}
