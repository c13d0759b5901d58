/**
 * Reading what a conversation said: its stored transcript, the model's
 * answers as soon as they are stored, and the text streamed so far. All of it
 * is in PostgreSQL, so each needs the client's `databaseUrl`.
 */
import type { AssistantMessage } from '../contract';
import { readKeptDeltas, type StreamEvent } from '../db/stream-channel';
import {
  readModelResponses,
  readSuperseded,
  readTranscript,
  readTranscriptPage,
  type StoredMessage,
  type SupersededMessage,
} from '../db/transcript-store';
import type { ClientContext } from './context';
import type { Unsubscribe } from './stream-listener';

/** The stored transcript, as `AgentClient.transcript` reads it. */
export async function transcript(
  context: ClientContext,
  conversationId: string,
  throughSeq?: number,
): Promise<StoredMessage[]> {
  return readTranscript(await context.database(), context.tables, conversationId, throughSeq);
}

/** A page of the stored transcript, as `AgentClient.transcriptPage` reads it. */
export async function transcriptPage(
  context: ClientContext,
  conversationId: string,
  after: number,
  limit: number,
): Promise<StoredMessage[]> {
  return readTranscriptPage(await context.database(), context.tables, conversationId, after, limit);
}

/** The messages taken out of the transcript, as `AgentClient.superseded` reads them. */
export async function superseded(context: ClientContext, conversationId: string): Promise<SupersededMessage[]> {
  return readSuperseded(await context.database(), context.tables, conversationId);
}

/** The stored model responses under `keys`, as `AgentClient.modelResponses` reads them. */
export async function modelResponses(
  context: ClientContext,
  keys: readonly string[],
): Promise<Map<string, AssistantMessage>> {
  return readModelResponses(await context.database(), context.tables, keys);
}

/** The stream events kept of the running model calls, as `AgentClient.streamedSoFar` reads them. */
export async function streamedSoFar(context: ClientContext, conversationId: string): Promise<StreamEvent[]> {
  return readKeptDeltas(await context.database(), context.tables, conversationId);
}

/**
 * Follows the conversation's stream events, as `AgentClient.subscribe` does; loads the listener (and `pg`) only now.
 */
export async function subscribe(
  context: ClientContext,
  conversationId: string,
  onEvent: (event: StreamEvent) => void,
): Promise<Unsubscribe> {
  if (!context.databaseUrl)
    throw new Error(
      'This client has no databaseUrl, so it cannot follow streams. Pass databaseUrl to AgentClient.connect.',
    );
  const { subscribeToStream } = await import('./stream-listener.js');
  return subscribeToStream(context.databaseUrl, conversationId, onEvent);
}
