import type { BatchCall } from '../../src/core/batch';
import type { ConversationCore, CoreEnvironment, SearchAttributeValues } from '../../src/core/conversation';
import type { PatchId } from '../../src/contract/patches';
import type { ChatMessage } from '../../src/contract/messages';
import { StoredTranscript } from './stored-transcript';

/** The search attribute values as a conversation last published them. */
export type Published = Omit<SearchAttributeValues, 'unknownEffects'> & { unknownEffects: number };

/**
 * The world the core driver's conversation lives in, in memory: a clock the
 * test moves, fresh ids, a log, the patches the run predates, what PostgreSQL
 * holds, and what visibility indexes.
 */
export abstract class DriverWorld {
  /** The conversation's core (the run's: continue-as-new makes a new one). */
  abstract core: ConversationCore;
  clock = Date.parse('2026-11-23T10:00:00.000Z');
  readonly warnings: string[] = [];
  /** Every patch the core asked about, in order; `before`: those this run predates (the core keeps the old rule). */
  readonly asked: PatchId[] = [];
  before: string[];
  /** What PostgreSQL holds. */
  readonly db = new StoredTranscript();
  /** The search attribute values as last published. */
  published: Published = DriverWorld.unpublished();
  /** Every change published (each one `upsertSearchAttributes` command of the workflow), in order. */
  readonly upserts: SearchAttributeValues[] = [];
  private ids = 0;
  readonly env: CoreEnvironment = {
    now: () => this.clock,
    newId: () => `generated-${++this.ids}`,
    log: { info: () => undefined, warn: (message) => void this.warnings.push(message) },
    allows: (patchId) => (this.asked.push(patchId), !this.before.includes(patchId)),
  };

  constructor(before: readonly string[]) {
    this.before = [...before];
  }

  /** What a new run has published: nothing yet. */
  static unpublished(): Published {
    return { status: 'idle', pendingApprovals: 0, unknownEffects: 0, approvals: { tags: [], since: null } };
  }

  /** The calls of the open batch (from the model's answer until the batch closes). */
  get calls(): readonly BatchCall[] {
    return this.core.s.batch?.all() ?? [];
  }

  /** What PostgreSQL holds, by seq. */
  get stored(): ChatMessage[] {
    return this.db.messages;
  }

  /** Publishes what changed of the core's search attributes, as the workflow's edge does. */
  publish(): void {
    const changed = this.core.searchAttributeChanges();
    if (!changed) return;
    this.upserts.push(changed);
    this.published = { ...this.published, ...changed };
  }
}
