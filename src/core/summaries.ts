/**
 * What an operator reads in the Temporal UI and `temporal workflow show`:
 * the one-line summary of each activity and timer (fixed when it is
 * scheduled) and the workflow's current details (what it waits for, how the
 * last calls ended). Pure functions of the conversation's state.
 */
import type { OutcomeKind } from './outcomes';

/** A call as the details show it. */
export interface CallLine {
  name: string;
  id: string;
  outcome?: OutcomeKind;
  decidedBy?: string;
  approved?: boolean;
  /** The tool found its effect in the ledger: applied by an earlier attempt, not again. */
  fromLedger?: boolean;
}

/** `model call 2 of turn 5 (gpt-4.1)`. */
export function modelCallSummary(turn: number, step: number, model: string | undefined, agent?: string): string {
  return `model call ${step} of turn ${turn} (${agent !== undefined ? `agent ${agent}` : (model ?? "the worker's default model")})`;
}

/** `issue_refund, call 2 of turn 5, approved by alice`. */
export function toolCallSummary(name: string, call: number, turn: number, decidedBy?: string): string {
  return `${name}, call ${call} of turn ${turn}${decidedBy ? `, approved by ${decidedBy}` : ''}`;
}

/** `tools of MCP servers crm, tickets for turn 3`. */
export function toolDiscoverySummary(servers: readonly string[], turn: number): string {
  return `tools of MCP server${servers.length === 1 ? '' : 's'} ${servers.join(', ')} for turn ${turn}`;
}

/** `store messages 4-6`. */
export function storeSummary(entries: readonly { seq: number }[], supersedeFrom?: number): string {
  const [first, last] = [entries[0]?.seq, entries.at(-1)?.seq];
  const stored = first === last ? `store message ${first}` : `store messages ${first}-${last}`;
  if (supersedeFrom === undefined) return stored;
  const superseded = `supersede messages ${supersedeFrom} and after (the turn stopped during a model call)`;
  return entries.length === 0 ? superseded : `${stored}; ${superseded}`;
}

/** `record: approve issue_refund (call_1) by alice`. */
export function decisionRecordSummary(
  decision: string,
  calls: readonly { name: string; id: string }[],
  decidedBy?: string,
): string {
  const what = calls.map((c) => `${c.name} (${c.id})`).join(', ');
  return `record: ${decision} ${what}${decidedBy ? ` by ${decidedBy}` : ''}`;
}

/** The summary of checking a decision's signature (the name it carries is not proven yet, so it is not shown). */
export function verifySummary(): string {
  return "verify a decision's signature";
}

/** Who decided, as summaries show it: a name a signature did not prove is marked so. */
export function whoDecided(decidedBy: string | undefined, authenticated: boolean | undefined): string | undefined {
  if (!decidedBy) return undefined;
  return authenticated === false ? `${decidedBy} (unauthenticated)` : decidedBy;
}

/** `approval deadline: issue_refund (call_1)`. */
export function approvalTimerSummary(name: string, id: string): string {
  return `approval deadline: ${name} (${id})`;
}

/** The summary of the timer of a waiting call's escalation step, as operators see it in the history. */
export function escalationTimerSummary(name: string, id: string, step: number): string {
  return `escalation step ${step}: ${name} (${id})`;
}

/** The summary of the activity that records an escalation step. */
export function escalationRecordSummary(
  name: string,
  id: string,
  step: number,
  addedGroups: readonly string[],
): string {
  const added = addedGroups.length > 0 ? `, ${addedGroups.join(', ')} may decide` : '';
  return `escalated ${name} (${id}): step ${step}${added}`;
}

/** How a call ended, in a few words: `ok, from ledger`, `rejected by bob`. */
export function describeCall(call: CallLine): string {
  if (call.outcome === 'rejected' && call.decidedBy) return `${call.name} (${call.id}): rejected by ${call.decidedBy}`;
  const how: string[] = [call.outcome ?? 'pending'];
  if (call.fromLedger) how.push('from ledger');
  if (call.decidedBy && call.approved !== false) how.push(`approved by ${call.decidedBy}`);
  return `${call.name} (${call.id}): ${how.join(', ')}`;
}

/**
 * The workflow's current details: one line for what it does or waits for,
 * one for the last calls. Markdown, as the Temporal UI renders it.
 */
export function currentDetails(
  now: { status: string; turn: number; waiting: readonly (CallLine & { since: number })[] },
  lastCalls: readonly CallLine[],
): string {
  const lines: string[] = [];
  if (now.waiting.length > 0) {
    const calls = now.waiting.map((c) => `${c.name} (${c.id}) since ${new Date(c.since).toISOString()}`).join('; ');
    lines.push(`**Waiting for approval** in turn ${now.turn}: ${calls}`);
  } else {
    lines.push(`**${now.status}**${now.turn > 0 ? `, turn ${now.turn}` : ''}`);
  }
  if (lastCalls.length > 0) lines.push(`**Last calls**: ${lastCalls.map(describeCall).join('; ')}`);
  return lines.join('\n\n');
}
