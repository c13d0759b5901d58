/**
 * Knowing when a project turn has answered without asking the worker:
 * the bench polls PostgreSQL for the final assistant message of every
 * conversation it waits on, with one query for all of them every 10 ms
 * (every 50 ms while more than 10 wait: turns then take seconds, and the
 * polls would add to PostgreSQL's CPU figures).
 * (The client's `waitForTurn` polls a workflow query every 200 ms: each poll
 * is a query task for the worker, and 200 ms would blur the figures. It is
 * used after a phase to check every turn's record instead.)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'pg';
import { agentTables } from '../../src/db/schema';
import { ANSWER_PREFIX } from './responder';

/** Resolves promises when a conversation's final answer is stored. */
export class AnswerWatcher {
  private readonly waiters = new Map<
    string,
    { resolve: (at: number) => void; reject: (err: Error) => void; deadline: number }
  >();
  private running = false;
  private stopped = false;
  private readonly table: string;

  constructor(
    private readonly pool: Pool,
    private readonly intervalMs = 10,
    private readonly busyIntervalMs = 50,
    /** The PostgreSQL schema of the worker's tables (the project's default unless given). */
    schema?: string,
  ) {
    this.table = agentTables(schema).conversationMessages;
  }

  /**
   * Resolves with `Date.now()` at the poll that first saw an assistant
   * message starting with the answer prefix in `conversationId` (every bench
   * conversation answers once); rejects after `timeoutMs`, or when the
   * watcher stops. A caller that throws before awaiting it leaves that
   * rejection handled: it must not end the run, whose cleanup would not run.
   */
  answered(conversationId: string, timeoutMs = 600_000): Promise<number> {
    const answer = new Promise<number>((resolve, reject) => {
      this.waiters.set(conversationId, { resolve, reject, deadline: Date.now() + timeoutMs });
      if (!this.running) void this.loop();
    });
    answer.catch(() => undefined);
    return answer;
  }

  /** Stops polling; waiting promises reject. */
  stop(): void {
    this.stopped = true;
    for (const [id, w] of this.waiters) w.reject(new Error(`stopped while waiting for ${id}`));
    this.waiters.clear();
  }

  private async loop(): Promise<void> {
    this.running = true;
    try {
      while (this.waiters.size > 0 && !this.stopped) {
        const ids = [...this.waiters.keys()];
        const { rows } = await this.pool.query<{ conversation_id: string }>(
          `SELECT DISTINCT conversation_id FROM ${this.table}
           WHERE conversation_id = ANY($1) AND role = 'assistant' AND message->>'content' LIKE $2`,
          [ids, `${ANSWER_PREFIX}%`],
        );
        const now = Date.now();
        for (const { conversation_id: id } of rows) {
          this.waiters.get(id)?.resolve(now);
          this.waiters.delete(id);
        }
        for (const [id, w] of this.waiters) {
          if (now > w.deadline) {
            w.reject(new Error(`conversation ${id}: no answer stored in time`));
            this.waiters.delete(id);
          }
        }
        await sleep(this.waiters.size > 10 ? this.busyIntervalMs : this.intervalMs);
      }
    } catch (err) {
      for (const w of this.waiters.values()) w.reject(err as Error);
      this.waiters.clear();
    } finally {
      this.running = false;
    }
  }
}
