/**
 * The time range of an audit export, `[from, to)`, as the HTTP API and the
 * CLI bound it: `to` after `from`, at most {@link AUDIT_MAX_RANGE_DAYS} days
 * apart, so one request reads a bounded span (a longer audit is several
 * exports, one after another).
 */

/** The longest range one export covers, in days: a year, leap day included. */
export const AUDIT_MAX_RANGE_DAYS = 366;

const DAY_MS = 24 * 60 * 60 * 1000;

/** A range of an export: from `from` (included) to `to` (excluded). */
export interface AuditRange {
  from: Date;
  to: Date;
}

/** ISO 8601 as the range takes it: a date-time with `Z` or an offset, or a date alone (midnight UTC). */
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))?$/i;

/**
 * The time `text` names (a date alone is midnight UTC), or a sentence saying why it names none: not ISO 8601, or a day
 * the month does not have.
 */
function parseTime(field: 'from' | 'to', text: string): number | string {
  const match = ISO_TIME.exec(text);
  const example = 'e.g. 2026-01-01T00:00:00Z, 2026-01-01T09:30:00+02:00 or 2026-01-01';
  const [year, month, day] = match ? match.slice(1, 4).map(Number) : [];
  const date = new Date(0);
  date.setUTCFullYear(year ?? 0, (month ?? 1) - 1, day ?? 1); // Date.UTC would read years 0 to 99 as 1900 to 1999
  const ms = match ? Date.parse(text.length === 10 ? `${text}T00:00:00Z` : text) : NaN;
  if (!match || Number.isNaN(ms) || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day)
    return `"${field}" is not an ISO 8601 time with its offset: ${JSON.stringify(text)} (${example}).`;
  // PostgreSQL has no year 0 (1 BC is its year 1 BC), and a time before year 1 names no decision anyway.
  if (new Date(ms).getUTCFullYear() < 1)
    return `"${field}" is before the year 1: ${JSON.stringify(text)} (${example}).`;
  return ms;
}

/**
 * Why `from` and `to` cannot be an export's range (a time that is not ISO 8601 with `Z` or an offset, `to` not after
 * `from`, more than {@link AUDIT_MAX_RANGE_DAYS} days), in words for the sender; undefined when they can.
 */
export function describeBadAuditRange(from: string, to: string): string | undefined {
  const range = readRange(from, to);
  return typeof range === 'string' ? range : undefined;
}

/** The range `from`–`to`; throws an `Error` saying what is wrong (see {@link describeBadAuditRange}). */
export function auditRange(from: string, to: string): AuditRange {
  const range = readRange(from, to);
  if (typeof range === 'string') throw new Error(range);
  return range;
}

function readRange(from: string, to: string): AuditRange | string {
  const start = parseTime('from', from);
  if (typeof start === 'string') return start;
  const end = parseTime('to', to);
  if (typeof end === 'string') return end;
  if (end <= start)
    return `"to" (${new Date(end).toISOString()}) must be after "from" (${new Date(start).toISOString()}): the range is from "from", included, to "to", excluded.`;
  if (end - start > AUDIT_MAX_RANGE_DAYS * DAY_MS) {
    const days = Math.ceil((end - start) / DAY_MS);
    return `The range spans ${days} days; one export covers at most ${AUDIT_MAX_RANGE_DAYS}. Export a longer span in several ranges, each one's "to" the next one's "from".`;
  }
  return { from: new Date(start), to: new Date(end) };
}
