/**
 * Where a fork starts, and what its transcript is made of, from the source's
 * live transcript: pure rules, without the database (`fork.ts` runs them in
 * one transaction). Turns are counted from the transcript itself, so a fork
 * point names the same messages whatever the source's workflow keeps in memory.
 */
import { GoingBackRefusedError } from '../common/errors';
import type { ChatMessage } from '../contract/messages';

/**
 * Where to fork: after the message at `seq` (the fork keeps seqs 0..seq), or
 * at the start of turn `turn` (the fork keeps everything before that turn's
 * first user message; turns are numbered from 1, see {@link turnStarts}).
 */
export type ForkAt = { seq: number } | { turn: number };

/** A fork point that names no place in the source's transcript; nothing was copied. */
export class ForkPointError extends GoingBackRefusedError {
  constructor(message: string) {
    super('fork_point_outside', message);
  }
}

/** The fork's conversation id is taken (it has messages or a workflow); nothing was copied. */
export class ForkTargetExistsError extends GoingBackRefusedError {
  constructor(message: string) {
    super('conversation_exists', message);
  }
}

/** A row of the source's live transcript. */
export interface SourceRow {
  seq: number;
  message: ChatMessage;
  createdAt?: Date | string;
  /** A tool message's: the key its result was stored under, when it was read from one. */
  refKey?: string | null;
}

/** A call of the last copied assistant message that has no result in the copy. */
export interface OpenForkCall {
  toolCallId: string;
  toolName: string;
  /** The call's position in its assistant message (its effect key's `call-<index>`). */
  index: number;
  /** The seq of its assistant message in the source (its effect key's `msg-<seq>`). */
  assistantSeq: number;
}

/** What a fork copies: the rows, the calls still to answer, and what the fork's state starts from. */
export interface ForkPlan {
  /** The source seq the fork was asked to keep up to (its `forkedFrom.seq`). */
  forkSeq: number;
  /**
   * The source's rows to copy, in order: those through `forkSeq`, and, when
   * `forkSeq` falls inside a batch of tool results, the rest of that batch's
   * results (a call's result directly follows its assistant message).
   */
  rows: SourceRow[];
  /** Calls of the last copied assistant message left without a result: to answer after `rows`. */
  open: OpenForkCall[];
  /** The agent speaking at the fork point (the last assistant message's, or a handoff's), if the transcript names one. */
  agent: string | undefined;
  /** The user turns in the copy. */
  turns: number;
}

/**
 * The seq of each turn's first user message, turn 1 first. A turn starts at a
 * user message that does not follow another user message: the messages one
 * turn took together are stored side by side. (A turn that ended before any
 * model answer, e.g. a failed model call, leaves its user messages next to
 * the next turn's, which then count as one turn here.)
 */
export function turnStarts(rows: readonly SourceRow[]): number[] {
  return rows.flatMap((row, i) =>
    row.message.role === 'user' && (i === 0 || rows[i - 1].message.role !== 'user') ? [row.seq] : [],
  );
}

/**
 * The last source seq a fork at `at` keeps. Throws a {@link ForkPointError}
 * naming the limit when `at` is not a place in the transcript: a seq outside
 * 0..last, or a turn outside 1..turns (2..turns when turn 1 starts the
 * transcript: without a system message nothing comes before it).
 */
export function resolveForkPoint(sourceId: string, rows: readonly SourceRow[], at: ForkAt): number {
  if (rows.length === 0) {
    throw new ForkPointError(
      `Conversation ${sourceId} has no stored messages, so there is nothing to fork. Check the id; a conversation's messages are stored from its first turn on.`,
    );
  }
  const last = rows[rows.length - 1].seq;
  if ('seq' in at) {
    if (!Number.isInteger(at.seq) || at.seq < 0 || at.seq > last) {
      throw new ForkPointError(
        `The fork point seq must be an integer from 0 to ${last} (the last message of conversation ${sourceId}), got ${JSON.stringify(at.seq)}.`,
      );
    }
    return at.seq;
  }
  const starts = turnStarts(rows);
  // Without a system message turn 1 starts the transcript: a fork before it would hold nothing.
  const first = starts.length > 0 && starts[0] <= rows[0].seq ? 2 : 1;
  if (!Number.isInteger(at.turn) || at.turn < first || at.turn > starts.length) {
    const got = JSON.stringify(at.turn);
    throw new ForkPointError(
      starts.length === 0
        ? `Conversation ${sourceId} has no turns yet, so there is no turn to fork at; fork at a seq from 0 to ${last} instead.`
        : first > starts.length
          ? `Conversation ${sourceId} has one turn, which starts it (it has no system message), so a fork before it would hold nothing; fork at a seq from 0 to ${last} instead, got turn ${got}.`
          : first === 2
            ? `The fork point turn must be ${starts.length === 2 ? '2' : `an integer from 2 to ${starts.length}`} (conversation ${sourceId} has ${starts.length} turns, and turn 1 starts it: with no system message, a fork before it would hold nothing), got ${got}; or fork at a seq from 0 to ${last}.`
            : `The fork point turn must be an integer from 1 to ${starts.length} (the turns of conversation ${sourceId}), got ${got}.`,
    );
  }
  return starts[at.turn - 1] - 1;
}

/**
 * What a fork of the source at `at` copies ({@link ForkPlan}). Throws a
 * {@link ForkPointError} for a fork point that names no place.
 */
export function planFork(sourceId: string, rows: readonly SourceRow[], at: ForkAt): ForkPlan {
  const forkSeq = resolveForkPoint(sourceId, rows, at);
  let end = rows.findIndex((row) => row.seq > forkSeq);
  if (end === -1) end = rows.length;
  const assistantAt = lastIndexOf(rows, end, (m) => m.role === 'assistant');
  const assistant = assistantAt === -1 ? undefined : rows[assistantAt].message;
  const calls = assistant?.role === 'assistant' ? (assistant.tool_calls ?? []) : [];
  const answered = new Set<string>();
  // Only a batch the copy ends inside is completed: its results would directly follow their message.
  const endsInBatch = calls.length > 0 && rows.slice(assistantAt + 1, end).every((r) => r.message.role === 'tool');
  if (endsInBatch) {
    for (const row of rows.slice(assistantAt + 1, end))
      if (row.message.role === 'tool') answered.add(row.message.tool_call_id);
    // The rest of the batch's results in the source: the tool messages right after the copy that answer its calls.
    const wanted = new Set(calls.map((c) => c.id));
    while (end < rows.length) {
      const next = rows[end].message;
      if (next.role !== 'tool' || !wanted.has(next.tool_call_id) || answered.has(next.tool_call_id)) break;
      answered.add(next.tool_call_id);
      end++;
    }
  }
  const copied = rows.slice(0, end);
  const open = endsInBatch
    ? calls.flatMap((call, index) =>
        answered.has(call.id)
          ? []
          : [{ toolCallId: call.id, toolName: call.function.name, index, assistantSeq: rows[assistantAt].seq }],
      )
    : [];
  return { forkSeq, rows: copied, open, agent: agentAtEnd(copied), turns: turnStarts(copied).length };
}

/**
 * The content of the tool message that answers, in a fork, a call that had
 * no result at the fork point (it waited for a person, or had not reported):
 * it did not run in the fork. In the source conversation it goes on as before.
 */
export function forkedCallContent(sourceId: string, forkSeq: number): string {
  return JSON.stringify({
    error: `The call was not run in this conversation: it was forked from conversation ${sourceId} at seq ${forkSeq} before the call had a result.`,
    kind: 'cancelled',
    started: false,
    reason: 'forked',
  });
}

/**
 * The agent speaking at the end of `rows`: the last assistant message's name,
 * or the agent a handoff after it moved the conversation to (a handoff call,
 * whatever its name, answered `{"assistant": "<agent>"}`).
 */
function agentAtEnd(rows: readonly SourceRow[]): string | undefined {
  let agent: string | undefined;
  let calls = new Set<string>();
  for (const { message } of rows) {
    if (message.role === 'assistant') {
      if (message.name !== undefined) agent = message.name;
      calls = new Set((message.tool_calls ?? []).map((c) => c.id));
    } else if (message.role === 'tool' && calls.has(message.tool_call_id)) {
      const target = handoffTarget(message.content);
      if (target !== undefined) {
        agent = target;
        calls.clear(); // only the first handoff of a response is taken
      }
    }
  }
  return agent;
}

/** What a taken handoff's result holds (`handoffContent`): the agent, and the input and filter it may carry. */
const HANDOFF_RESULT_KEYS = new Set(['assistant', 'input', 'inputFilter']);

/**
 * The agent a handoff's result names, when the handoff was taken: a result
 * made of the handoff's fields only, since a handoff may be named anything
 * (`toolNameOverride`).
 */
function handoffTarget(content: string): string | undefined {
  try {
    const parsed = JSON.parse(content) as Record<string, unknown> | null;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
    if (!Object.keys(parsed).every((k) => HANDOFF_RESULT_KEYS.has(k))) return undefined;
    return typeof parsed.assistant === 'string' ? parsed.assistant : undefined;
  } catch {
    return undefined;
  }
}

/** The index of the last of `rows[0..end)` whose message matches, or -1. */
function lastIndexOf(rows: readonly SourceRow[], end: number, test: (m: ChatMessage) => boolean): number {
  for (let i = end - 1; i >= 0; i--) if (test(rows[i].message)) return i;
  return -1;
}
