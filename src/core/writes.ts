/**
 * A run's messages between the seq they are given and PostgreSQL. A message
 * gets its seq when the conversation decides it (a user message taken into a
 * turn, the model's answer, the tool messages of a batch) and is written
 * later, in one round trip with others: the next model call writes what is
 * unwritten before it reads the transcript, and a flush writes it before
 * anyone may read it (a turn's end, a wait for a person, the end). Pure.
 */
import type { AppendEntry, StoredMessageRef } from '../contract/activities';
import type { ChatMessage } from '../contract/messages';

/** What a flush writes: the unwritten messages, and the seq from which stored messages leave the live transcript. */
export interface PendingWrite {
  messages: AppendEntry[];
  /** A turn stopped while its model call ran: what that call may have written from here on is superseded. */
  supersedeFrom?: number;
}

/** Where a run's unwritten messages stand. */
export class TranscriptWrites {
  private unwritten: AppendEntry[] = [];
  /** The seq from which the next flush supersedes stored messages (see {@link PendingWrite}). */
  private supersede: number | undefined;
  /** How many of the first unwritten messages the last model call was asked to write. */
  private sentWithModelCall = 0;
  /** Flushes under way (their messages are being written). */
  private flushing = 0;

  constructor(private seq: number) {}

  /** The seq the next message gets. */
  get nextSeq(): number {
    return this.seq;
  }

  /** True while a flush writes messages: whoever reads the transcript now may not find them yet. */
  get inProgress(): boolean {
    return this.flushing > 0;
  }

  /** True when every message is written and no write is under way. */
  get allWritten(): boolean {
    return this.flushing === 0 && this.unwritten.length === 0 && this.supersede === undefined;
  }

  /** Gives the messages the next seqs and queues them for writing. Returns them with their seqs. */
  add(messages: readonly ({ message: ChatMessage } | { ref: StoredMessageRef })[]): AppendEntry[] {
    const added = messages.map((m, i): AppendEntry => ({ ...m, seq: this.seq + i }));
    this.seq += messages.length;
    this.unwritten.push(...added);
    return added;
  }

  /**
   * The next message gets `seq` again (a regenerated turn: the messages from there on are superseded). Messages from
   * `seq` on not yet written are dropped with them.
   */
  rewind(seq: number): void {
    this.seq = seq;
    this.unwritten = this.unwritten.filter((m) => m.seq < seq);
    this.sentWithModelCall = 0;
  }

  /** What the next model call writes before it reads the transcript (undefined: nothing). */
  forModelCall(): AppendEntry[] | undefined {
    this.sentWithModelCall = this.unwritten.length;
    return this.unwritten.length > 0 ? [...this.unwritten] : undefined;
  }

  /** The model call answered, so it wrote what it was given. */
  modelCallAnswered(): void {
    this.unwritten = this.unwritten.slice(this.sentWithModelCall);
    this.sentWithModelCall = 0;
  }

  /** The model call wrote its answer, given `seq`, itself: it is no longer unwritten. */
  writtenByModelCall(seq: number): void {
    this.unwritten = this.unwritten.filter((m) => m.seq !== seq);
  }

  /**
   * A model call that was asked to write its final answer at `seq` was
   * stopped: whatever it wrote there is unknown to the run, so the next flush
   * supersedes the stored messages from `seq` on.
   */
  supersedeOnFlush(seq: number): void {
    this.supersede = Math.min(seq, this.supersede ?? seq);
  }

  /**
   * Takes every unwritten message for a flush (a model call that failed or
   * was cancelled may not have written what it was given: the same seqs and
   * content are written again), with what it supersedes. Call {@link flushed}
   * when the write ends.
   */
  takeForFlush(): PendingWrite {
    const taken = this.unwritten;
    const supersedeFrom = this.supersede;
    this.unwritten = [];
    this.supersede = undefined;
    this.sentWithModelCall = 0;
    if (taken.length > 0 || supersedeFrom !== undefined) this.flushing++;
    return supersedeFrom === undefined ? { messages: taken } : { messages: taken, supersedeFrom };
  }

  /** A flush that took messages ended (written, or given up). */
  flushed(): void {
    this.flushing = Math.max(this.flushing - 1, 0);
  }
}
