/**
 * Delivers the text of a model response to people while the model speaks,
 * through PostgreSQL NOTIFY on one channel. Each event names the response
 * (`responseKey`: the same for every attempt of one model call) and the
 * attempt, so a client shows a retried attempt in place of the failed one.
 */
import type { Pool } from 'pg';
import { logger } from '../common/logger';
import { toStorableText } from '../contract/text';
import { STREAM_CHANNEL, type StreamEvent } from '../db/stream-channel';

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
    private readonly ids: { conversationId: string; responseKey: string; attempt: number },
    /** Hold every delta until {@link end} (an output guardrail checks the answer first): nothing is sent while the model speaks. */
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
    this.send({ type: 'end', ...this.ids, ok });
    await this.chain;
    if (this.failures > 1) {
      logger.warn({ ...this.ids, failed: this.failures }, 'stream events of this response were not published; clients read the stored answer instead');
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
    while (this.buffer.length > 0) {
      let end = Math.min(MAX_TEXT, this.buffer.length);
      const high = this.buffer.charCodeAt(end - 1);
      if (high >= 0xd800 && high <= 0xdbff && (end < this.buffer.length || !last)) end--;
      if (end === 0) return;
      const text = toStorableText(this.buffer.slice(0, end));
      this.buffer = this.buffer.slice(end);
      this.send({ type: 'delta', ...this.ids, offset: this.offset, text });
      this.offset += text.length;
    }
  }

  private send(event: StreamEvent): void {
    // One after the other, so NOTIFYs commit (and reach listeners) in order.
    this.chain = this.chain
      .then(() => this.pool.query('SELECT pg_notify($1, $2)', [STREAM_CHANNEL, JSON.stringify(event)]))
      .then(
        () => undefined,
        (err: Error) => {
          // The first failure of a response is logged; the rest are counted and reported once by end().
          if (this.failures++ === 0) logger.warn({ error: err.message, ...this.ids }, 'could not publish a stream event');
        },
      );
  }
}
