/**
 * Text PostgreSQL cannot store, and the one rule for it.
 *
 * PostgreSQL refuses two things every JavaScript string may hold: U+0000
 * (NUL: `text` refuses the byte, `jsonb` refuses the `\u0000` escape) and
 * unpaired UTF-16 surrogates (`jsonb` refuses the `\ud800` escape that
 * `JSON.stringify` writes for them; `text` gets U+FFFD from Node without a
 * word). Everything else is stored as sent: U+FFFE and U+FFFF, bidirectional
 * overrides, four-byte characters.
 *
 * The rule: text from people (a user message, a decision's reason, a system
 * prompt) is **refused**, with the character and where it is
 * ({@link describeUnstorableText}); text from tools, models and MCP servers is
 * **sanitized, then written**: each such character becomes U+FFFD
 * ({@link REPLACEMENT_CHARACTER}), so a turn always goes on
 * ({@link toStorableText}, {@link toStorableValue}).
 *
 * Pure and workflow-safe: no Buffer, no TextEncoder.
 */

/** What replaces a character PostgreSQL cannot store: U+FFFD, the Unicode replacement character, shown as "�". */
export const REPLACEMENT_CHARACTER = '\uFFFD';

/** A character PostgreSQL cannot store, and where it is. */
export interface UnstorableCharacter {
  /** Its offset in the string, in UTF-16 code units from 0 (as JavaScript and JSON's `\u` escapes count). */
  index: number;
  /** Its code unit, as Unicode writes it: `U+0000`, `U+D800`. */
  codePoint: string;
  /** What it is, in words: `NUL`, `an unpaired high surrogate`. */
  name: string;
}

/** The first character of `text` PostgreSQL cannot store; undefined when there is none. */
export function findUnstorableCharacter(text: string): UnstorableCharacter | undefined {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0) return { index: i, codePoint: 'U+0000', name: 'NUL' };
    if (code < 0xd800 || code > 0xdfff) continue;
    if (code <= 0xdbff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++; // a pair: one four-byte character
        continue;
      }
      return { index: i, codePoint: unicodeName(code), name: 'an unpaired high surrogate' };
    }
    return { index: i, codePoint: unicodeName(code), name: 'an unpaired low surrogate' };
  }
  return undefined;
}

/**
 * Says why a person's text cannot be taken, naming the field, the character
 * and its offset; undefined when every character can be stored.
 */
export function describeUnstorableText(field: string, text: string): string | undefined {
  const found = findUnstorableCharacter(text);
  if (!found) return undefined;
  return (
    `${field} contains ${found.codePoint} (${found.name}) at offset ${found.index} (UTF-16 code units from 0), which cannot be stored; ` +
    'remove it (NUL characters and unpaired surrogates U+D800-U+DFFF are refused)'
  );
}

/**
 * Says which string field of `record` holds a character PostgreSQL cannot
 * store (the first one found, in the order of `fields`; a list of strings
 * counts by its items); undefined when none does.
 */
export function describeUnstorableFields(record: unknown, fields: readonly string[]): string | undefined {
  if (typeof record !== 'object' || record === null) return undefined;
  for (const field of fields) {
    const value = (record as Record<string, unknown>)[field];
    const texts =
      typeof value === 'string'
        ? [value]
        : Array.isArray(value)
          ? value.filter((v): v is string => typeof v === 'string')
          : [];
    for (const [i, text] of texts.entries()) {
      const problem = describeUnstorableText(Array.isArray(value) ? `"${field}[${i}]"` : `"${field}"`, text);
      if (problem) return problem;
    }
  }
  return undefined;
}

/**
 * `text` with every character PostgreSQL cannot store replaced by {@link REPLACEMENT_CHARACTER}, and how many were
 * replaced.
 */
export function replaceUnstorable(text: string): { text: string; replaced: number } {
  if (findUnstorableCharacter(text) === undefined) return { text, replaced: 0 };
  let out = '';
  let replaced = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        out += text[i] + text[i + 1];
        i++;
        continue;
      }
    }
    if (code === 0 || (code >= 0xd800 && code <= 0xdfff)) {
      out += REPLACEMENT_CHARACTER;
      replaced++;
    } else {
      out += text[i];
    }
  }
  return { text: out, replaced };
}

/** `text` with every character PostgreSQL cannot store replaced by {@link REPLACEMENT_CHARACTER}. */
export function toStorableText(text: string): string {
  return replaceUnstorable(text).text;
}

/**
 * A JSON-like value with every string in it (object keys too) made storable
 * by {@link replaceUnstorable}, and how many characters were replaced. Returns
 * the same value (not a copy) when nothing needed replacing.
 */
export function toStorableValue<T>(value: T): { value: T; replaced: number } {
  let replaced = 0;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const r = replaceUnstorable(v);
      replaced += r.replaced;
      return r.text;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype) {
      return Object.fromEntries(Object.entries(v).map(([k, inner]) => [walk(k) as string, walk(inner)]));
    }
    return v;
  };
  const walked = walk(value);
  return replaced === 0 ? { value, replaced: 0 } : { value: walked as T, replaced };
}

function unicodeName(code: number): string {
  return `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Text parsed when it is JSON (tool-call arguments, a model's arguments kept in a record), else the text itself. */
export function parseJsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
