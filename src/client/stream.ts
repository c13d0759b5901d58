/**
 * Following a conversation's model text as it streams, through PostgreSQL
 * LISTEN on the channel the model activity NOTIFYs.
 */
import { Client as PgClient } from 'pg';
import { STREAM_CHANNEL, type StreamEvent } from '../db/stream-channel';

/** Stops a subscription. */
export type Unsubscribe = () => Promise<void>;

/**
 * Calls `onEvent` for every stream event of `conversationId`, until the
 * returned function is called. Uses its own connection (LISTEN holds one).
 */
export async function subscribeToStream(databaseUrl: string, conversationId: string, onEvent: (event: StreamEvent) => void): Promise<Unsubscribe> {
  const client = new PgClient({ connectionString: databaseUrl });
  await client.connect();
  client.on('notification', (message) => {
    if (message.channel !== STREAM_CHANNEL || !message.payload) return;
    let event: StreamEvent;
    try {
      event = JSON.parse(message.payload) as StreamEvent;
    } catch {
      return;
    }
    if (event.conversationId === conversationId) onEvent(event);
  });
  client.on('error', () => undefined);
  await client.query(`LISTEN ${STREAM_CHANNEL}`);
  return async () => {
    await client.query(`UNLISTEN ${STREAM_CHANNEL}`).catch(() => undefined);
    await client.end().catch(() => undefined);
  };
}

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
    const response: StreamedText = !current || reset ? { responseKey: event.responseKey, attempt: event.attempt, text: '', done: false } : current;
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
