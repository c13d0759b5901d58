/**
 * The user messages a conversation has received and not yet taken into a
 * turn, with the ids it remembers so a resent message is taken once. Pure.
 */
import type { CarriedConversation } from '../contract/carried-conversation';
import { DEDUP_MEMORY, utf8Bytes } from '../contract/limits';
import type { MessageFile } from '../contract/message-files';

/** One queued message. */
export interface QueuedMessage {
  text: string;
  messageId: string;
  /** Who sent it (the message's `sentBy`), when it said. */
  sentBy?: string;
  /** The files it carries, by reference. */
  files?: MessageFile[];
}

/** Received messages in arrival order, deduplicated by id. */
export class Inbox {
  private readonly queued: QueuedMessage[];
  private readonly received: Set<string>;

  constructor(carried?: Pick<CarriedConversation, 'inbox' | 'receivedMessageIds'>) {
    this.queued = (carried?.inbox ?? []).map((m) => ({ ...m }));
    this.received = new Set(carried?.receivedMessageIds ?? []);
  }

  /** Messages waiting for a turn. */
  get length(): number {
    return this.queued.length;
  }

  /** Their text, in UTF-8 bytes. */
  bytes(): number {
    return this.queued.reduce((sum, m) => sum + utf8Bytes(m.text), 0);
  }

  /** Queues a message; false (nothing queued) when its id was already received. */
  receive(message: QueuedMessage): boolean {
    if (this.received.has(message.messageId)) return false;
    this.received.add(message.messageId);
    this.queued.push({ ...message });
    return true;
  }

  /** True when a message or a request with this id was received (it is among the ids remembered). */
  has(id: string): boolean {
    return this.received.has(id);
  }

  /** Remembers the id of a request that is no message (a regeneration), so a resend of it is known. */
  remember(id: string): void {
    this.received.add(id);
  }

  /** Takes the queued messages, oldest first, up to `maxBytes` together (at least one; all when unset). */
  take(maxBytes?: number): QueuedMessage[] {
    let count = this.queued.length;
    if (maxBytes !== undefined) {
      for (let bytes = 0, i = 0; i < this.queued.length; i++) {
        bytes += utf8Bytes(this.queued[i].text);
        if (bytes > maxBytes) {
          count = Math.max(1, i);
          break;
        }
      }
    }
    return this.queued.splice(0, count);
  }

  /** What continue-as-new carries: the queue, and the most recent ids (at most {@link DEDUP_MEMORY}). */
  carry(): Pick<CarriedConversation, 'inbox' | 'receivedMessageIds'> {
    return { inbox: this.queued.map((m) => ({ ...m })), receivedMessageIds: [...this.received].slice(-DEDUP_MEMORY) };
  }
}
