/**
 * Watching a conversation's turn, for both ways the API streams one (its
 * own SSE events, `turn-events.ts`, and the AI SDK's UI message stream,
 * `ui-turn.ts`): the model's text as it streams (PostgreSQL NOTIFY), with
 * what streamed before the watch began replayed first (the kept pieces), so
 * no piece is skipped; and a wait that ends at the next piece or after a
 * poll interval, for reading the workflow's state again.
 */
import type { AgentClient } from '../client/client';
import { StreamView } from '../client/stream';
import type { StreamEvent } from '../db/stream-channel';

/**
 * What one stream event changed: the response, the text it added, and whether a newer attempt replaced the text shown.
 */
export type TextChange = NonNullable<ReturnType<StreamView['apply']>>;

/** A conversation's streamed text, and a wait for the next change. Close it when done. */
export class TurnWatch {
  private constructor(
    /** The text shown per model response (a retried attempt replaces the one before). */
    readonly view: StreamView,
    private readonly waiting: { wake?: () => void },
    private readonly unsubscribe: () => Promise<void>,
  ) {}

  /**
   * Starts watching: listens for live pieces, replays the kept ones, then the
   * live ones that came meanwhile; `onChange` hears each change in order.
   */
  static async open(
    client: AgentClient,
    conversationId: string,
    onChange: (change: TextChange) => void = () => undefined,
  ): Promise<TurnWatch> {
    let early: StreamEvent[] | undefined = [];
    const view = new StreamView();
    const wakeUp: { wake?: () => void } = {};
    const apply = (event: StreamEvent) => {
      const change = view.apply(event);
      if (change) onChange(change);
      wakeUp.wake?.();
    };
    const watch = new TurnWatch(
      view,
      wakeUp,
      await client.subscribe(conversationId, (event) => {
        if (early) early.push(event);
        else apply(event);
      }),
    );
    try {
      for (const event of await client.streamedSoFar(conversationId)) apply(event);
      for (const event of early) apply(event);
      early = undefined;
    } catch (err) {
      await watch.close();
      throw err;
    }
    return watch;
  }

  /** Resolves after `ms`, at the next streamed piece, or when `signal` aborts, whichever is first. */
  sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiting.wake = undefined;
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiting.wake = done;
      signal.addEventListener('abort', done);
    });
  }

  async close(): Promise<void> {
    await this.unsubscribe();
  }
}
