/**
 * What the bench started, stopped in reverse order exactly once: at the end
 * of the run, on an error, or on Ctrl-C / SIGTERM.
 */

/** One thing to stop or remove. */
interface Step {
  name: string;
  run: () => Promise<unknown> | unknown;
}

/** A last-in, first-out list of cleanups; {@link Cleanup.runAll} runs them once, whatever fails. */
export class Cleanup {
  private readonly steps: Step[] = [];
  private done: Promise<void> | undefined;

  constructor(private readonly log: (line: string) => void) {}

  /** Registers a cleanup; returns a function that runs it now (and unregisters it). */
  add(name: string, run: () => Promise<unknown> | unknown): () => Promise<void> {
    const step: Step = { name, run };
    this.steps.push(step);
    return async () => {
      const index = this.steps.indexOf(step);
      if (index < 0) return;
      this.steps.splice(index, 1);
      await this.runStep(step);
    };
  }

  /** Runs every registered cleanup, newest first; each gets at most 30 s and a failure does not stop the others. */
  runAll(): Promise<void> {
    this.done ??= (async () => {
      while (this.steps.length > 0) await this.runStep(this.steps.pop()!);
    })();
    return this.done;
  }

  private async runStep(step: Step): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        Promise.resolve().then(step.run),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('did not finish within 30 s')), 30_000);
        }),
      ]);
    } catch (err) {
      this.log(`cleanup "${step.name}" failed: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Runs `cleanup` on SIGINT / SIGTERM / SIGHUP, then exits with 128 + the signal's number.
 * A second signal while cleaning up exits at once.
 */
export function exitOnSignals(cleanup: Cleanup, log: (line: string) => void): void {
  const numbers: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };
  let stopping = false;
  for (const signal of Object.keys(numbers) as NodeJS.Signals[]) {
    process.on(signal, () => {
      if (stopping) process.exit(128 + numbers[signal]);
      stopping = true;
      log(`${signal}: stopping everything the bench started`);
      void cleanup.runAll().finally(() => process.exit(128 + numbers[signal]));
    });
  }
}
