/**
 * How a PostgreSQL error reads: the database could not be reached (retry
 * until it is back), or it refused a value of the statement (no retry can
 * fix it). Plain module: used by activities, clients and start-up alike.
 */

/** Node socket errors and PostgreSQL's connection and shutdown classes (08, 57P). */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01',
  '57P02',
  '57P03',
]);

/** True when `err` says the database could not be reached, rather than that the operation was wrong. */
export function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (CONNECTION_CODES.has(code) || code.startsWith('08'))) return true;
  const message = err instanceof Error ? err.message : '';
  return /Connection terminated|connection timeout|Client has encountered a connection error|the database system is (starting up|shutting down)/i.test(
    message,
  );
}

/**
 * PostgreSQL's SQLSTATE classes of a value it refuses, which no retry can
 * fix: data exceptions (22: bad text, numbers out of range), integrity
 * constraints (23: NOT NULL, CHECK, foreign keys) and program limits (54: a
 * value too large for an index or a jsonb).
 */
const REFUSED_VALUE_CLASSES = new Set(['22', '23', '54']);

/**
 * True when `err` is PostgreSQL refusing a value of the statement, rather than failing to run it (see {@link
 * isConnectionError}).
 */
export function isRefusedValue(err: unknown): boolean {
  if (err instanceof ValuesRefusedError) return true;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.length === 5 && REFUSED_VALUE_CLASSES.has(code.slice(0, 2));
}

/**
 * A write PostgreSQL refused for its values. Of a transcript write,
 * `refusedSeqs` names the messages it refused; the others are stored.
 */
export class ValuesRefusedError extends Error {
  constructor(
    message: string,
    readonly refusedSeqs: number[] = [],
  ) {
    super(message);
    this.name = 'ValuesRefusedError';
  }
}

/**
 * PostgreSQL's words for a refused value: its message and SQLSTATE code.
 * Never its detail, which may quote the refused row (the text that was
 * refused, which a note carrying it would have refused again).
 */
export function describeRefusal(err: unknown): string {
  const e = err as { message?: string; code?: string };
  return `${e.message ?? String(err)}${e.code ? ` [SQLSTATE ${e.code}]` : ''}`;
}
