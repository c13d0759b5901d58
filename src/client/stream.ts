/**
 * Showing a conversation's model text as it streams: {@link StreamView} turns
 * the stream events into text. Following them from PostgreSQL is
 * `stream-listener.ts`, loaded only when a client subscribes.
 */
import type { StreamEvent } from '../db/stream-channel';

/** What a client shows of one model response. */
export interface StreamedText {
  responseKey: string;
  /** The attempt whose text is shown. */
  attempt: number;
  text: string;
  done: boolean;
  ok?: boolean;
}

/**
 * Turns stream events into the text to show per model response. A retried
 * attempt replaces the text of the one before it (never appended to it);
 * late events of an older attempt, and repeated events, are ignored.
 */
export class StreamView {
  private readonly responses = new Map<string, StreamedText>();

  /** Applies an event. Returns what changed: `reset` when a newer attempt replaced the text shown. */
  apply(event: StreamEvent): { response: StreamedText; appended: string; reset: boolean } | undefined {
    const current = this.responses.get(event.responseKey);
    if (current && event.attempt < current.attempt) return undefined;
    const reset = current !== undefined && event.attempt > current.attempt;
    const response: StreamedText =
      !current || reset ? { responseKey: event.responseKey, attempt: event.attempt, text: '', done: false } : current;
    this.responses.set(event.responseKey, response);
    if (event.type === 'end') {
      response.done = true;
      response.ok = event.ok;
      return { response, appended: '', reset };
    }
    // Only the part past what is shown is new (an event repeated or out of order adds nothing).
    const known = response.text.length;
    if (event.offset > known) return undefined;
    const appended = event.text.slice(known - event.offset);
    response.text += appended;
    return { response, appended, reset };
  }

  /** The text shown for a response. */
  get(responseKey: string): StreamedText | undefined {
    return this.responses.get(responseKey);
  }

  /** Every response seen, in order of first appearance. */
  all(): StreamedText[] {
    return [...this.responses.values()];
  }
}
