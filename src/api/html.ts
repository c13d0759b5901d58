/**
 * Safe HTML for the API's pages. Every value shown comes from conversations
 * and tools, so it is untrusted: {@link html} escapes every interpolated
 * value unless it is already {@link Html} made here, and {@link visible}
 * shows the invisible and direction-changing characters a tool's arguments
 * could hide an amount behind.
 */

/** Markup that is safe to insert as it is: only {@link html} makes it. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

/** Escapes text for an HTML element or a double- or single-quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/**
 * A template whose interpolations are escaped (arrays joined; `undefined`, `null` and `false` left out; {@link Html}
 * inserted as it is).
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += interpolate(values[i]) + strings[i + 1];
  return new Html(out);
}

function interpolate(value: unknown): string {
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(interpolate).join('');
  if (value === undefined || value === null || value === false) return '';
  return escapeHtml(String(value));
}

/**
 * Makes control, zero-width and bidirectional-override characters visible
 * (as `⟨U+202E⟩`): what the approver reads is what the tool receives.
 */
export function visible(text: string): string {
  return text.replace(
    // Control characters are what this shows: matching them is the point.
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u00AD\u061C\u115F\u1160\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\u3164\uFEFF\uFFA0]/g,
    (c) => `⟨U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`,
  );
}

/** "12 s", "2 min", "3 h 5 min", "2 d 4 h". */
export function humanDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  const days = Math.floor(hours / 24);
  return hours % 24 ? `${days} d ${hours % 24} h` : `${days} d`;
}

/** Text cut to `max` characters, saying how much was left out. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

/** The arguments as the approver should read them: pretty JSON (or the raw text the model sent). */
export function prettyArguments(args: unknown): string {
  const text = typeof args === 'string' ? args : (JSON.stringify(args, null, 2) ?? String(args));
  return visible(clip(text, 8_000));
}
