import type { AppendEntry, ApprovalRequest, ModelCallInput, ModelCallResult } from '../../src/contract/activities';
import type { ChatMessage } from '../../src/contract/messages';
import type { ConversationCore } from '../../src/core/conversation';

/** What PostgreSQL says when a write is refused ({@link StoredTranscript.refuseNextWrite}). */
export const STORE_REFUSAL = 'a CHECK constraint refused it';

/**
 * What PostgreSQL holds of one conversation, in memory, for the core driver:
 * messages by seq, as the append activity stores them (a body by reference
 * from the model response stored), and the calls listed for approvers.
 */
export class StoredTranscript {
  /** The messages, by seq. */
  readonly messages: ChatMessage[] = [];
  /** The calls listed for approvers (the waiting calls written with the flush before a wait). */
  readonly listed: ApprovalRequest[] = [];
  /** PostgreSQL refuses the first message of the next write (a value no retry can fix). */
  refuseNextWrite = false;
  /** The seqs refused, in order. */
  readonly refusedSeqs: number[] = [];
  /** The entries refused, in order (what a note took the place of). */
  readonly refusedEntries: AppendEntry[] = [];
  /** Hold the next flush open until {@link completeFlush} (a write that takes time); how many were held. */
  holdFlushes = false;
  flushesHeld = 0;
  /** Model answers by response key: what a message stored by reference is. */
  private readonly responses = new Map<string, ChatMessage>();
  private held:
    { core: ConversationCore; entries: AppendEntry[]; waiting?: ApprovalRequest[]; then: () => void } | undefined;

  /** Writes what the core has unwritten (held open with {@link holdFlushes} when `mayHold`), then `then`. */
  flush(core: ConversationCore, then: () => void, waiting?: ApprovalRequest[], mayHold = true): void {
    const { messages: entries, supersedeFrom } = core.takeWrites();
    if (supersedeFrom !== undefined) this.stoppedAnswers.push(...this.messages.splice(supersedeFrom));
    if (entries.length === 0) {
      if (supersedeFrom !== undefined) core.writesDone();
      return then();
    }
    if (this.holdFlushes && mayHold) {
      this.holdFlushes = false;
      this.flushesHeld++;
      this.held = { core, entries, waiting, then };
      return;
    }
    this.written(core, entries, waiting);
    then();
  }

  /** Ends the held flush: its messages are written, and the edge goes on (unless a stop ends it: `goOn` false). */
  completeFlush(goOn = true): void {
    const held = this.held;
    if (!held) return;
    this.held = undefined;
    this.written(held.core, held.entries, held.waiting);
    if (goOn) held.then();
  }

  /** True while a flush is held open. */
  get flushHeld(): boolean {
    return this.held !== undefined;
  }

  /** The messages of the held flush. */
  get heldEntries(): AppendEntry[] | undefined {
    return this.held?.entries;
  }

  private written(core: ConversationCore, entries: AppendEntry[], waiting?: ApprovalRequest[]): void {
    this.write(entries, (refused, refusal) => core.writeRefused(refused, refusal), waiting);
    core.writesDone();
  }

  /** The messages superseded by a regenerated turn, in the order they left the live transcript. */
  readonly superseded: ChatMessage[] = [];

  /** A regenerated turn's first write: the messages from `fromSeq` on leave the live transcript. */
  supersede(fromSeq: number): void {
    this.superseded.push(...this.messages.splice(fromSeq));
  }

  /** What a stopped turn's flush superseded: answers its model call wrote that the run did not take. */
  readonly stoppedAnswers: ChatMessage[] = [];

  /**
   * As the model activity does when the request names `answerSeq`: a final answer (no tool calls) is written there,
   * after the messages the request carries; says so for the result.
   */
  writeFinalAnswer(request: ModelCallInput, responseKey: string): Pick<ModelCallResult, 'answerWritten'> {
    const message = this.responses.get(responseKey);
    if (request.answerSeq === undefined || !message || (message.role === 'assistant' && message.tool_calls?.length))
      return {};
    this.messages[request.answerSeq] = message;
    return { answerWritten: true };
  }

  /** Keeps a model answer under a fresh response key, as the model activity does; returns the key. */
  keepResponse(message: ChatMessage): string {
    const key = `resp-${this.responses.size}`;
    this.responses.set(key, message);
    return key;
  }

  /**
   * Stores entries (upserts at their seqs). With {@link refuseNextWrite}, the
   * first is refused, the others stored, and what `inPlace` gives for the
   * refusal (the core's notes) is written next.
   */
  write(
    entries: readonly AppendEntry[],
    inPlace: (refused: readonly AppendEntry[], refusal: { message: string; refusedSeqs: number[] }) => AppendEntry[],
    waiting?: readonly ApprovalRequest[],
  ): void {
    if (this.refuseNextWrite && entries.length > 0) {
      this.refuseNextWrite = false;
      const [refused, ...rest] = entries;
      this.refusedSeqs.push(refused.seq);
      this.refusedEntries.push(refused);
      for (const entry of rest) this.messages[entry.seq] = this.body(entry);
      return this.write(inPlace(entries, { message: STORE_REFUSAL, refusedSeqs: [refused.seq] }), inPlace, waiting);
    }
    for (const entry of entries) this.messages[entry.seq] = this.body(entry);
    if (waiting) this.listed.push(...waiting);
  }

  /** Throws unless every message through `seq` is stored: what a model call reads. */
  mustHoldThrough(seq: number): void {
    if (this.messages.length !== seq + 1 || this.messages.some((m) => m === undefined)) {
      throw new Error(`the model would read ${this.messages.length} stored messages through seq ${seq}`);
    }
  }

  /** The messages as they are once `pending` entries are written too. */
  with(...pending: (readonly AppendEntry[] | undefined)[]): ChatMessage[] {
    const view = [...this.messages];
    for (const entry of pending.flatMap((entries) => entries ?? [])) view[entry.seq] = this.body(entry);
    return view;
  }

  private body(entry: AppendEntry): ChatMessage {
    if ('message' in entry) return entry.message;
    const { kind, key } = entry.ref;
    if (kind !== 'model_response') {
      return {
        role: 'tool',
        tool_call_id: entry.ref.toolCallId,
        content: kind === 'agent_answer' ? `answer stored under ${key}` : `stored under ${key}`,
      };
    }
    const message = this.responses.get(key);
    if (!message) throw new Error(`nothing is stored under ${key}`);
    return message;
  }
}
