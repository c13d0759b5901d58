/**
 * The cancellation scope of the turn running now, so a handler can stop it
 * (a new message that interrupts, a cancel). Edge machinery of the workflow,
 * not conversation state: whether a turn must stop is the core's to say.
 */
import { CancellationScope } from '@temporalio/workflow';

/** Runs turns one at a time, each in a scope of its own that {@link TurnScope.cancel} cancels. */
export class TurnScope {
  private current: CancellationScope | undefined;

  /** Runs `turn` in a new scope, cancelled at once when `stopped` (stopped before it began). */
  async run<T>(turn: () => Promise<T>, stopped: boolean): Promise<T> {
    const scope = new CancellationScope();
    this.current = scope;
    if (stopped) scope.cancel();
    try {
      return await scope.run(turn);
    } finally {
      this.current = undefined;
    }
  }

  /** Cancels the turn running now, if one is. */
  cancel(): void {
    this.current?.cancel();
  }
}
