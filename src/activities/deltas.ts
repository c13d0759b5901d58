/**
 * Delivers the text of a model response to people while the model speaks,
 * through PostgreSQL NOTIFY on one channel. Each event names the response
 * (`responseKey`: the same for every attempt of one model call) and the
 * attempt, so a client shows a retried attempt in place of the failed one.
 * Each piece is also kept (`stream_deltas`, in the same statement) until
 * the attempt ends, so a client that reconnects replays what streamed.
 */
import type { Pool } from 'pg';
import { logger } from '../common/logger';
import { toStorableText } from '../contract/text';
import { STREAM_CHANNEL, type StreamEvent } from '../db/stream-channel';
import type { AgentTables } from '../db/schema';

/** NOTIFY payloads must stay under 8000 bytes; texts are cut into pieces below this. */
const MAX_TEXT = 2000;
const FLUSH_EVERY_MS = 50;

/** Publishes one attempt's text deltas, in order, batched every 50 ms. Never fails the model call. */
export class DeltaPublisher {
  private buffer = '';
  private offset = 0;
  private lastFlush = 0;
  private chain: Promise<void> = Promise.resolve();
  /** Events that could not be published (a database outage fails every one: logged once, counted at the end). */
  private failures = 0;

  constructor(
    private readonly pool: Pool,
    private readonly tables: Pick<AgentTables, 'streamDeltas'>,
    private readonly ids: { conversationId: string; responseKey: string; attempt: number },
    /**
     * Hold every delta until {@link end} (an output guardrail checks the answer first): nothing is sent while the model
     * speaks.
     */
    private readonly held = false,
  ) {}

  /** Adds text; sends it when enough time passed since the last send (never, while held). */
  push(text: string): void {
    if (!text) return;
    this.buffer += text;
    if (!this.held && Date.now() - this.lastFlush >= FLUSH_EVERY_MS) this.flush();
  }

  /** Sends what is buffered (held text only when `ok`: a withheld answer is never sent), then an `end` event. */
  async end(ok: boolean): Promise<void> {
    if (this.held && !ok) this.buffer = '';
    this.flush(true);
    // A first attempt that streamed no text (an answer of tool calls only) and succeeded has nothing to end and
    // nothing kept: no listener saw it, no earlier attempt left pieces. One statement less for most steps.
    if (ok && this.offset === 0 && this.ids.attempt === 1) return this.finished();
    this.send({ type: 'end', ...this.ids, ok });
    return this.finished();
  }

  private async finished(): Promise<void> {
    await this.chain;
    if (this.failures > 1) {
      logger.warn(
        { ...this.ids, failed: this.failures },
        'stream events of this response were not published; clients read the stored answer instead',
      );
    }
  }

  /**
   * Sends the buffer in pieces, with what the stored answer will hold: text
   * PostgreSQL cannot store as U+FFFD (one code unit for one, so offsets stay
   * true). A piece never ends inside a surrogate pair: until the `last`
   * flush, a trailing high surrogate waits for the text after it.
   */
  private flush(last = false): void {
    this.lastFlush = Date.now();
    const pieces: Extract<StreamEvent, { type: 'delta' }>[] = [];
    while (this.buffer.length > 0) {
      let end = Math.min(MAX_TEXT, this.buffer.length);
      const high = this.buffer.charCodeAt(end - 1);
      if (high >= 0xd800 && high <= 0xdbff && (end < this.buffer.length || !last)) end--;
      if (end === 0) break;
      const text = toStorableText(this.buffer.slice(0, end));
      this.buffer = this.buffer.slice(end);
      pieces.push({ type: 'delta', ...this.ids, offset: this.offset, text });
      this.offset += text.length;
    }
    if (pieces.length > 0) this.send(pieces);
  }

  /**
   * Sends one flush's pieces, or an end, in one statement. One after the
   * other, so NOTIFYs commit (and reach listeners) in order; each with what
   * it keeps or drops.
   */
  private send(events: StreamEvent | Extract<StreamEvent, { type: 'delta' }>[]): void {
    const [statement, values] = Array.isArray(events) ? this.keepAndNotify(events) : this.dropAndNotify(events);
    this.chain = this.chain
      .then(() => this.pool.query(statement, values))
      .then(
        () => undefined,
        (err: Error) => {
          // The first failure of a response is logged; the rest are counted and reported once by end().
          if (this.failures++ === 0)
            logger.warn({ error: err.message, ...this.ids }, 'could not publish a stream event');
        },
      );
  }

  /** Pieces are kept and notified, in order (a volatile function in the select list runs after its ORDER BY). */
  private keepAndNotify(pieces: Extract<StreamEvent, { type: 'delta' }>[]): [string, unknown[]] {
    const statement = `WITH kept AS (
        INSERT INTO ${this.tables.streamDeltas} (response_key, attempt, start_offset, conversation_id, text)
        SELECT $2, $3, o, $4, x FROM unnest($5::int[], $6::text[]) AS p(o, x) ON CONFLICT DO NOTHING)
      SELECT pg_notify($1, e) FROM unnest($7::text[]) WITH ORDINALITY AS n(e, i) ORDER BY i`;
    const { responseKey, attempt, conversationId } = this.ids;
    return [
      statement,
      [
        STREAM_CHANNEL,
        responseKey,
        attempt,
        conversationId,
        pieces.map((p) => p.offset),
        pieces.map((p) => p.text),
        pieces.map((p) => JSON.stringify(p)),
      ],
    ];
  }

  /**
   * An end drops the attempt's pieces (all of the response's when it
   * succeeded: its answer is stored next), and pieces older than an hour
   * that killed calls left behind.
   */
  private dropAndNotify(event: StreamEvent): [string, unknown[]] {
    const statement = `WITH dropped AS (
        DELETE FROM ${this.tables.streamDeltas} WHERE (response_key = $3 AND (attempt = $4 OR $5)) OR created_at < now() - interval '1 hour')
      SELECT pg_notify($1, $2)`;
    return [
      statement,
      [STREAM_CHANNEL, JSON.stringify(event), event.responseKey, event.attempt, event.type === 'end' && event.ok],
    ];
  }
}
