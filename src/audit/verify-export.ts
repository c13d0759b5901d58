/**
 * Checking a whole audit export, line by line, with bounded memory: each
 * line is read as an {@link AuditRecord} and checked with
 * {@link verifyAuditRecord}; the outcome is counted, and each record that
 * fails is listed (the first {@link LISTED_FAILURES_MAX}) by its line number
 * and decision id. `cli audit verify` prints {@link describeAuditVerification}
 * and fails when {@link auditVerificationFailed}.
 */
import type { DecisionKey } from '../common/decision-signing';
import { auditRecordSchema, type AuditRecord } from './record';
import { describeAuditMismatch, verifyAuditRecord } from './verify';

/** How many failing records a verification lists (the others are counted). */
export const LISTED_FAILURES_MAX = 1000;

/** A record that did not verify, or a line that is not a record. */
export interface AuditFailure {
  /** The line's number in the export, from 1. */
  line: number;
  /** `malformed`: the line is not JSON, or not an audit record. */
  verdict: 'invalid' | 'unknown_key' | 'mismatch' | 'malformed';
  conversationId?: string;
  decisionId?: string;
  /** What is wrong, in words. */
  problem: string;
}

/** What checking an export found. */
export interface AuditVerification {
  /** Records read (lines that are not blank). */
  records: number;
  valid: number;
  /** Records with no signature to check, by why. */
  unsigned: {
    /** An approval policy's rule decided without a person. */
    byRule: number;
    /** Calls a standing grant covered: the signed approval that gave the grant is its own record. */
    byGrant: number;
    /** A person's decision the worker applied unsigned (`authenticated: false`). */
    unauthenticated: number;
    /** Recorded before decisions kept what their sender signed. */
    notKept: number;
  };
  /** Records that failed, by verdict. */
  failed: Record<AuditFailure['verdict'], number>;
  /** The first {@link LISTED_FAILURES_MAX} failures, in the export's order. */
  failures: AuditFailure[];
}

/** Checks every line of an export (blank lines are skipped) with `keys`. */
export async function verifyAuditExport(
  lines: AsyncIterable<string>,
  keys: readonly DecisionKey[],
): Promise<AuditVerification> {
  const result: AuditVerification = {
    records: 0,
    valid: 0,
    unsigned: { byRule: 0, byGrant: 0, unauthenticated: 0, notKept: 0 },
    failed: { invalid: 0, unknown_key: 0, mismatch: 0, malformed: 0 },
    failures: [],
  };
  const fail = (failure: AuditFailure) => {
    result.failed[failure.verdict]++;
    if (result.failures.length < LISTED_FAILURES_MAX) result.failures.push(failure);
  };
  let line = 0;
  for await (const text of lines) {
    line++;
    if (text.trim() === '') continue;
    result.records++;
    const record = readRecord(text);
    if (typeof record === 'string') {
      fail({ line, verdict: 'malformed', problem: record });
      continue;
    }
    const verdict = verifyAuditRecord(record, keys);
    const named = { line, conversationId: record.conversationId, decisionId: record.decisionId };
    if (verdict === 'valid') result.valid++;
    else if (verdict === 'unsigned') {
      if (record.kind === 'policy') result.unsigned.byRule++;
      else if (record.kind === 'grant') result.unsigned.byGrant++;
      else if (record.authenticated === false) result.unsigned.unauthenticated++;
      else result.unsigned.notKept++;
    } else if (verdict === 'mismatch') fail({ ...named, verdict, problem: describeAuditMismatch(record)! });
    else if (verdict === 'unknown_key') {
      const keyId = record.signedDecision!.signature!.split('.')[0];
      fail({
        ...named,
        verdict,
        problem: `signed with key "${keyId}", which is not among the keys given (${keys.map((k) => k.id).join(', ') || 'none'}): add it to AGENT_DECISION_KEYS (id:secret,…) to check this record`,
      });
    } else
      fail({
        ...named,
        verdict,
        problem: 'the signature does not match the signed decision and its conversation id: one of them was changed',
      });
  }
  return result;
}

/** The line as a record, or why it is not one. */
function readRecord(text: string): AuditRecord | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return `not JSON (${(err as Error).message})`;
  }
  const parsed = auditRecordSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `not an audit record: ${issue.path.join('.') || 'the line'}: ${issue.message}`;
  }
  // The record as written, not as parsed: the signed decision's fields must reach the check untouched.
  return value as AuditRecord;
}

/** True when some record failed to verify (invalid, mismatched, signed with a key not given) or a line is not a record. */
export function auditVerificationFailed(v: AuditVerification): boolean {
  return Object.values(v.failed).some((n) => n > 0);
}

/** The verification as lines for people: the counts, then each failure listed. */
export function describeAuditVerification(v: AuditVerification, source: string, keyIds: readonly string[]): string[] {
  const unsigned = v.unsigned.byRule + v.unsigned.byGrant + v.unsigned.unauthenticated + v.unsigned.notKept;
  const why = [
    v.unsigned.byRule > 0 ? `${v.unsigned.byRule} decided by a rule` : '',
    v.unsigned.byGrant > 0 ? `${v.unsigned.byGrant} covered by a grant` : '',
    v.unsigned.unauthenticated > 0 ? `${v.unsigned.unauthenticated} unauthenticated` : '',
    v.unsigned.notKept > 0 ? `${v.unsigned.notKept} recorded before signatures were kept` : '',
  ].filter((w) => w !== '');
  const lines = [
    `Checked ${v.records} record${v.records === 1 ? '' : 's'} of ${source} with ${keyIds.length === 1 ? 'key' : 'keys'} ${keyIds.join(', ')}:`,
    `  ${v.valid} valid`,
    `  ${unsigned} unsigned${why.length > 0 ? ` (${why.join(', ')})` : ''}`,
  ];
  const labels: Record<AuditFailure['verdict'], string> = {
    invalid: 'invalid (signature does not match)',
    mismatch: 'mismatched (the record says something other than what was signed)',
    unknown_key: 'signed with a key not given',
    malformed: 'not audit records',
  };
  for (const verdict of ['invalid', 'mismatch', 'unknown_key', 'malformed'] as const)
    if (v.failed[verdict] > 0) lines.push(`  ${v.failed[verdict]} ${labels[verdict]}`);
  for (const f of v.failures) {
    const which = f.decisionId === undefined ? '' : ` (decision ${f.decisionId} of ${f.conversationId})`;
    lines.push(`line ${f.line}${which}: ${f.verdict}: ${f.problem}`);
  }
  const total = Object.values(v.failed).reduce((a, b) => a + b, 0);
  if (total > v.failures.length) lines.push(`… and ${total - v.failures.length} more failures, not listed.`);
  return lines;
}
