/**
 * Reading a stream's raw body as its client does: the server-sent events parsed, then the text joined from its
 * deltas. How a stream splits text into deltas depends on timing (the worker publishes what the model said every
 * 50 ms, the API sends what it has at each look), so a test asserts on the text a client assembles, never on a
 * sentence in the raw bytes, which a split between two chunks hides.
 *
 * - {@link readUiStreamBody}: the AI SDK's UI message stream of the chat route (`POST /v1/chat`,
 *   `GET /v1/chat/{id}/stream`), parsed with `ai`'s own parser and chunk schema, as `DefaultChatTransport` does.
 * - {@link turnEvents}, {@link readTurnEvents}: the API's own turn events (`GET /v1/conversations/{id}/events`),
 *   which the CLI follows; the text is the `turn` event's answer, or the `delta` events joined per `responseKey`.
 */
import { parseJsonEventStream, uiMessageChunkSchema, type UIMessageChunk } from 'ai';

/** One server-sent event: its name (`message` when it has no `event:` field) and its data lines, joined by `\n`. */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/**
 * The events of a server-sent event stream as they arrive, as `EventSource` splits them: a block ends at a blank
 * line, its `data:` lines are joined by `\n`, comments (`: keep-alive`) and blocks without data are skipped, an
 * unfinished block at the end is dropped. Lines may end in `\n` or `\r\n`.
 */
export async function* serverSentEvents(body: ReadableStream<Uint8Array> | string): AsyncGenerator<ServerSentEvent> {
  let buffered = '';
  const decoder = new TextDecoder();
  const pieces = typeof body === 'string' ? [body] : (body as unknown as AsyncIterable<Uint8Array>);
  for await (const piece of pieces) {
    buffered += typeof piece === 'string' ? piece : decoder.decode(piece, { stream: true });
    buffered = buffered.replace(/\r\n/g, '\n');
    for (let end = buffered.indexOf('\n\n'); end >= 0; end = buffered.indexOf('\n\n')) {
      const event = parseBlock(buffered.slice(0, end));
      buffered = buffered.slice(end + 2);
      if (event) yield event;
    }
  }
}

function parseBlock(block: string): ServerSentEvent | undefined {
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return data.length > 0 ? { event, data: data.join('\n') } : undefined;
}

/** A chat route's UI message stream, read as the AI SDK's client reads it. */
export interface UiStreamRead {
  /** Every chunk, parsed and checked against `ai`'s `uiMessageChunkSchema` (a chunk that fails it fails the read). */
  chunks: UIMessageChunk[];
  /**
   * The text of each text part the stream adds, in order: its `text-delta` chunks joined, as `readUIMessageStream`
   * joins them (a `text-start` begins a part, a delta goes to the part its id started last).
   */
  texts: string[];
  /** The `errorText` of each `error` chunk. */
  errors: string[];
}

/**
 * Reads the body of a UI message stream (`POST /v1/chat`, `GET /v1/chat/{id}/stream`) as `DefaultChatTransport`
 * does: `ai`'s `parseJsonEventStream` with its chunk schema; then joins the text of each part. Unlike
 * `readUIMessageStream` it needs no message for the stream to continue (a stream after approvals adds to one).
 */
export async function readUiStreamBody(body: string | ReadableStream<Uint8Array>): Promise<UiStreamRead> {
  const stream = typeof body === 'string' ? new Response(body).body! : body;
  const chunks: UIMessageChunk[] = [];
  for await (const result of parseJsonEventStream({ stream, schema: uiMessageChunkSchema }) as unknown as AsyncIterable<
    { success: true; value: UIMessageChunk } | { success: false; error: Error }
  >) {
    if (!result.success) throw new Error(`Not a UI message chunk: ${result.error.message}`);
    chunks.push(result.value);
  }
  const parts: { text: string }[] = [];
  const active = new Map<string, { text: string }>();
  for (const chunk of chunks) {
    if (chunk.type === 'text-start') {
      const part = { text: '' };
      active.set(chunk.id, part);
      parts.push(part);
    } else if (chunk.type === 'text-delta') {
      const part = active.get(chunk.id);
      if (!part) throw new Error(`A text-delta of part ${chunk.id}, which did not start.`);
      part.text += chunk.delta;
    }
  }
  return {
    chunks,
    texts: parts.map((p) => p.text),
    errors: chunks.flatMap((c) => (c.type === 'error' ? [c.errorText] : [])),
  };
}

/** An event of the API's turn stream: its name and its data, parsed. */
export interface TurnStreamEvent {
  event: string;
  data: any;
}

/** The turn events of `GET /v1/conversations/{id}/events` as they arrive, their data parsed, as the CLI reads them. */
export async function* turnEvents(body: ReadableStream<Uint8Array> | string): AsyncGenerator<TurnStreamEvent> {
  for await (const { event, data } of serverSentEvents(body)) yield { event, data: JSON.parse(data) };
}

/** Every turn event of a whole body (or of the response's body, read to its end). */
export async function readTurnEvents(body: ReadableStream<Uint8Array> | string): Promise<TurnStreamEvent[]> {
  const events: TurnStreamEvent[] = [];
  for await (const e of turnEvents(body)) events.push(e);
  return events;
}
