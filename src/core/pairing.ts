/**
 * The pairing invariant of tool calls, and its repair.
 *
 * An assistant message with `tool_calls` must be followed, before anything
 * else, by exactly one `tool` message per `tool_call_id`; no `tool` message
 * may stand without an open call; nothing may stay open at the end.
 * Pure and deterministic: used by the workflow before every model call and by
 * the model activity on the messages it is about to send.
 */
import type { MessageMeta } from '../contract/messages';
import { repairedContent } from './outcomes';

/** The least a message must tell for the pairing rules. */
export interface PairingItem {
  role: string;
  /** Ids of the calls of an assistant message. */
  callIds?: readonly string[];
  /** The call a tool message answers. */
  answers?: string;
}

/** One broken rule, located by the index of the message in the checked list. */
export type PairingProblem =
  | { kind: 'missing_result'; index: number; toolCallId: string }
  | { kind: 'orphan_result'; index: number; toolCallId: string }
  | { kind: 'duplicate_result'; index: number; toolCallId: string };

/**
 * Lists every broken pairing rule. An empty list means the transcript is valid.
 * `missing_result.index` is the index of the assistant message whose call is unanswered.
 */
export function findPairingProblems(items: readonly PairingItem[]): PairingProblem[] {
  const problems: PairingProblem[] = [];
  let open: { index: number; pending: Set<string>; answered: Set<string> } | undefined;
  const closeOpen = (): void => {
    if (!open) return;
    for (const id of open.pending) problems.push({ kind: 'missing_result', index: open.index, toolCallId: id });
    open = undefined;
  };
  items.forEach((item, index) => {
    if (item.role === 'tool') {
      const id = item.answers ?? '';
      if (open?.pending.has(id)) {
        open.pending.delete(id);
        open.answered.add(id);
      } else if (open?.answered.has(id)) {
        problems.push({ kind: 'duplicate_result', index, toolCallId: id });
      } else {
        problems.push({ kind: 'orphan_result', index, toolCallId: id });
      }
      return;
    }
    closeOpen();
    if (item.role === 'assistant' && item.callIds && item.callIds.length > 0) {
      open = { index, pending: new Set(item.callIds), answered: new Set() };
    }
  });
  closeOpen();
  return problems;
}

/** How to turn a broken list into a valid one without touching stored messages. */
export interface PairingRepair {
  /** Indexes of tool messages to leave out (orphans and duplicates). */
  omit: number[];
  /** Results to synthesize, each placed right after the answers of the assistant message at `afterIndex`. */
  synthesize: { afterIndex: number; toolCallId: string }[];
  problems: PairingProblem[];
}

/** Plans the smallest repair: drop orphan and duplicate results, synthesize missing ones. */
export function planPairingRepair(items: readonly PairingItem[]): PairingRepair {
  const problems = findPairingProblems(items);
  return {
    problems,
    omit: problems.filter((p) => p.kind !== 'missing_result').map((p) => p.index),
    synthesize: problems
      .filter((p) => p.kind === 'missing_result')
      .map((p) => ({ afterIndex: p.index, toolCallId: p.toolCallId })),
  };
}

/**
 * Applies a repair to a list, returning the repaired list. `makeResult`
 * builds the synthesized tool message for a call id. Synthesized results go
 * after the existing answers of their assistant message, in call order.
 */
export function applyPairingRepair<T>(
  items: readonly T[],
  repair: PairingRepair,
  makeResult: (toolCallId: string) => T,
  isToolResult: (item: T) => boolean,
): T[] {
  const omit = new Set(repair.omit);
  const byAssistant = new Map<number, string[]>();
  for (const s of repair.synthesize) {
    byAssistant.set(s.afterIndex, [...(byAssistant.get(s.afterIndex) ?? []), s.toolCallId]);
  }
  const out: T[] = [];
  let pendingInsert: string[] | undefined;
  const flush = (): void => {
    if (pendingInsert) out.push(...pendingInsert.map(makeResult));
    pendingInsert = undefined;
  };
  items.forEach((item, index) => {
    if (pendingInsert && !isToolResult(item)) flush();
    if (!omit.has(index)) out.push(item);
    const missing = byAssistant.get(index);
    if (missing) pendingInsert = missing;
  });
  flush();
  return out;
}

/**
 * Plans the repair of stored messages, by seq, for a model call that reads
 * them: which to leave out, which results to add (with `repaired` content).
 * Empty lists when the messages keep the rules, as they always should.
 */
export function planStoredRepair(messages: readonly MessageMeta[]): {
  problems: PairingProblem[];
  omitSeqs: number[];
  synthesized: { afterSeq: number; toolCallId: string; content: string }[];
} {
  const repair = planPairingRepair(
    messages.map((m) => ({ role: m.role, callIds: m.toolCalls?.map((c) => c.id), answers: m.toolCallId })),
  );
  return {
    problems: repair.problems,
    omitSeqs: repair.omit.map((index) => messages[index].seq),
    synthesized: repair.synthesize.map((s) => ({
      afterSeq: messages[s.afterIndex].seq,
      toolCallId: s.toolCallId,
      content: repairedContent(),
    })),
  };
}
