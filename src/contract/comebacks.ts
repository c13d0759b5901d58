/**
 * Coming back later: a conversation asked (by the model through a
 * `comeBackLater()` tool, or by the API and the client) to start a turn at a
 * time, with a note as that turn's message, sent by the conversation itself
 * (`conversation:<id>`). Kept across continue-as-new; cancellable
 * (docs/coming-back-later.md). Types, limits and checks; workflow-safe.
 */
import { describeUnstorableText } from './text';

/** The limits of a come-back. */
export const COME_BACK_LIMITS = {
  /** Characters of its note. */
  noteMaxChars: 4000,
  /** Come-backs a conversation holds at once. */
  maxPending: 20,
  /** How far ahead one may be: a year. */
  maxDelayMs: 365 * 24 * 60 * 60 * 1000,
} as const;

/** Asks a conversation to come back: the `comeBack` signal's argument. */
export interface ComeBackRequest {
  /** Its id: asking again with the same id changes nothing; cancel it by this id. */
  comeBackId: string;
  /** When (ISO 8601): the turn starts then, or once the turn running then ends. */
  at: string;
  /** What the turn is about: its message. */
  note: string;
  /** Who asked: the API token's subject, or `model` for the model's own tool call. */
  requestedBy?: string;
}

/** Cancels a come-back: the `cancelComeBack` signal's argument. */
export interface ComeBackCancel {
  comeBackId: string;
  /** Who cancelled it. */
  cancelledBy?: string;
}

/** When a call of the `comeBackLater()` tool comes back, as its plan says. */
export interface ComeBackPlan {
  /** ISO 8601. */
  at: string;
  note: string;
}

/** A come-back the conversation holds. */
export interface ComeBack {
  id: string;
  /** Workflow ms since the epoch. */
  at: number;
  note: string;
  requestedBy?: string;
  /** Workflow ms since the epoch. */
  requestedAt: number;
}

/** A come-back as the state shows it (times in ISO 8601). */
export interface ComeBackView {
  comeBackId: string;
  at: string;
  note: string;
  requestedBy?: string;
  requestedAt: string;
}

/** Who a come-back's turn is from: the conversation itself. */
export function comeBackSender(conversationId: string): string {
  return `conversation:${conversationId}`;
}

/** The message a come-back's turn starts with. */
export function comeBackMessage(note: string): string {
  return `[come back] ${note}`;
}

/** What is wrong with a come-back request, or undefined when nothing is (`now`: ms since the epoch). */
export function comeBackProblem(request: unknown, now: number): string | undefined {
  const r = request as Partial<Record<keyof ComeBackRequest, unknown>> | null;
  if (typeof r !== 'object' || r === null) return 'A come-back is an object {"comeBackId", "at", "note"}.';
  if (typeof r.comeBackId !== 'string' || r.comeBackId.length === 0 || [...r.comeBackId].length > 200)
    return 'A come-back needs an id of 1 to 200 characters.';
  if (typeof r.note !== 'string' || r.note.trim().length === 0)
    return "A come-back needs a note: what its turn is about (the turn's message).";
  if ([...r.note].length > COME_BACK_LIMITS.noteMaxChars)
    return `The note has ${[...r.note].length} characters; at most ${COME_BACK_LIMITS.noteMaxChars}.`;
  const unstorable = describeUnstorableText('The note', r.note);
  if (unstorable) return `${unstorable}.`;
  const at = typeof r.at === 'string' ? Date.parse(r.at) : Number.NaN;
  if (Number.isNaN(at))
    return `"at" must be a time in ISO 8601, such as 2026-03-02T09:00:00Z; got ${JSON.stringify(r.at)}.`;
  if (at - now > COME_BACK_LIMITS.maxDelayMs) return 'A come-back may be at most a year ahead.';
  if (r.requestedBy !== undefined && (typeof r.requestedBy !== 'string' || r.requestedBy.length > 200))
    return 'requestedBy is a string of at most 200 characters.';
  return undefined;
}
