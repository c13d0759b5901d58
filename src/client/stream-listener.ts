/**
 * Following a conversation's model text as it streams, through PostgreSQL
 * LISTEN on the channel the model activity NOTIFYs. The client imports this
 * module only when it subscribes, so that one talking to Temporal alone never
 * loads `pg`.
 */
import { Client as PgClient } from 'pg';
import { STREAM_CHANNEL, type StreamEvent } from '../db/stream-channel';

/** Stops a subscription. */
export type Unsubscribe = () => Promise<void>;

/**
 * Calls `onEvent` for every stream event of `conversationId`, until the
 * returned function is called. Uses its own connection (LISTEN holds one).
 */
export async function subscribeToStream(
  databaseUrl: string,
  conversationId: string,
  onEvent: (event: StreamEvent) => void,
): Promise<Unsubscribe> {
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
