/**
 * The stream of a model's text to people: a PostgreSQL NOTIFY channel and the
 * events on it. Shared by the model activity, which publishes, and clients,
 * which listen.
 */

/** The NOTIFY channel carrying {@link StreamEvent}s. */
export const STREAM_CHANNEL = 'agent_stream';

/** One event on {@link STREAM_CHANNEL}. */
export type StreamEvent =
  | {
      type: 'delta';
      conversationId: string;
      responseKey: string;
      attempt: number;
      /** Characters of this attempt's text before `text`. */
      offset: number;
      text: string;
    }
  | { type: 'end'; conversationId: string; responseKey: string; attempt: number; ok: boolean };
