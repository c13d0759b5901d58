/**
 * Checking an audit record's signature again, with the keys the HTTP API
 * signs decisions with: the signed decision must carry a valid signature for
 * the record's conversation (`checkDecisionSignature`), and must say what the
 * record says (the same decision id, verdict, decider, reason, answer, edited
 * arguments and groups, and only the record's calls). A record whose fields
 * were changed after export fails the second check; one whose signed
 * decision was changed fails the first.
 *
 * A record without a signed decision (a rule's own, an unauthenticated
 * decision, one recorded before signatures were kept) has nothing to check.
 */
import { canonicalJson, checkDecisionSignature, type DecisionKey } from '../common/decision-signing';
import type { AuditRecord } from './record';

/**
 * What checking a record found: `valid` (signed with a held key and saying what the record says), `unsigned` (nothing
 * to check), `invalid` (the signature does not match the signed decision and its conversation), `unknown_key` (signed
 * with a key not held), `mismatch` (validly signed, but the record says something else: see {@link
 * describeAuditMismatch}).
 */
export type AuditVerdict = 'valid' | 'unsigned' | 'invalid' | 'unknown_key' | 'mismatch';

/** Checks `record`'s signed decision with `keys` (every key the API signed with over the records' time). */
export function verifyAuditRecord(record: AuditRecord, keys: readonly DecisionKey[]): AuditVerdict {
  const signed = record.signedDecision;
  if (!signed) return 'unsigned';
  const found = checkDecisionSignature(keys, record.conversationId, signed);
  // A signed decision is kept only with its signature: one without it was changed.
  if (found === 'unsigned') return 'invalid';
  if (found !== 'valid') return found;
  return describeAuditMismatch(record) === undefined ? 'valid' : 'mismatch';
}

/**
 * Where `record` says something other than its signed decision: each difference as a sentence naming the field and
 * both values; undefined when they agree (or the record has no signed decision). The signature is not checked here.
 */
export function describeAuditMismatch(record: AuditRecord): string | undefined {
  const signed = record.signedDecision;
  if (!signed) return undefined;
  const problems: string[] = [];
  const differ = (field: string, inSigned: unknown, inRecord: unknown) =>
    problems.push(`${field}: the signed decision says ${show(inSigned)}, the record ${show(inRecord)}`);
  if (signed.decisionId !== record.decisionId) differ('decision id', signed.decisionId, record.decisionId);
  if (signed.decision !== record.verdict) differ('verdict', signed.decision, record.verdict);
  if ((signed.decidedBy ?? null) !== record.decidedBy) differ('decided by', signed.decidedBy ?? null, record.decidedBy);
  if ((signed.reason ?? null) !== record.reason) differ('reason', signed.reason ?? null, record.reason);
  if ((signed.response ?? null) !== record.response) differ('response', signed.response ?? null, record.response);
  // A decision names one call or none (every call waiting then): the record's calls must be the one it names.
  for (const call of record.calls) {
    if (signed.toolCallId !== undefined && call.toolCallId !== signed.toolCallId)
      differ('tool call id', signed.toolCallId, call.toolCallId);
    if (signed.callKey !== undefined && call.callKey !== signed.callKey)
      differ('call key', signed.callKey, call.callKey);
  }
  const edited = record.calls.filter((c) => c.editedArguments !== null && c.editedArguments !== undefined);
  const signedArguments = signed.arguments === undefined ? undefined : canonicalJson(signed.arguments);
  if (signedArguments === undefined && edited.length > 0) differ('edited arguments', null, edited[0].editedArguments);
  for (const call of signedArguments === undefined ? [] : record.calls)
    if (canonicalJson(call.editedArguments ?? null) !== signedArguments)
      differ('edited arguments', signed.arguments, call.editedArguments ?? null);
  // The record keeps the groups only on a call a rule made wait; where it keeps them, they are the signed ones.
  if (record.deciderGroups !== null) {
    const inSigned = [...(signed.deciderGroups ?? [])].sort();
    const inRecord = [...record.deciderGroups].sort();
    if (JSON.stringify(inSigned) !== JSON.stringify(inRecord)) differ('decider groups', inSigned, inRecord);
  }
  // A grant is signed with the approval that gave it: the record's grant has the signed limits.
  const signedGrant = signed.grant;
  const given = record.grantGiven;
  if (signedGrant === undefined && given !== null) differ('grant', null, given);
  if (signedGrant !== undefined) {
    if (given === null) differ('grant', signedGrant, null);
    else {
      if ((signedGrant.maxCalls ?? null) !== given.maxCalls)
        differ('grant calls', signedGrant.maxCalls ?? null, given.maxCalls);
      if (canonicalJson(signedGrant.maxAmount ?? null) !== canonicalJson(given.maxAmount))
        differ('grant amount', signedGrant.maxAmount ?? null, given.maxAmount);
    }
  }
  return problems.length === 0 ? undefined : `${problems.join('; ')}.`;
}

/** A value as the mismatch's sentence shows it: JSON, cut at 200 characters. */
function show(value: unknown): string {
  const json = JSON.stringify(value) ?? 'nothing';
  return json.length > 200 ? `${json.slice(0, 200)}…` : json;
}
