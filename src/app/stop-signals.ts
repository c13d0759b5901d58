/**
 * Ctrl-C and SIGTERM for `npm start`. Loading this module installs the
 * handlers, so `src/main.ts` imports it before its other modules: a stop
 * while they load is honoured too (nothing has started then).
 *
 * The first signal asks for a stop: its abort signal ends what start-up is
 * waiting for, and `main` closes what was opened, in reverse order, and exits 0.
 * A stop signal more than {@link REPEAT_WINDOW_MS} later forces the exit.
 * Only this module's users get it: the library (`src/index.ts`) never imports it.
 */
import { constants } from 'node:os';
import { inspect } from 'node:util';
import { logger } from '../common/logger';

/**
 * A signal repeated within this many milliseconds is the same stop: one Ctrl-C in a terminal reaches the worker twice,
 * from the terminal (the whole foreground process group gets it) and forwarded by npm.
 */
export const REPEAT_WINDOW_MS = 1_000;

/** The stop of this process, once a signal asked for it. */
export interface StopRequest {
  /** Aborted by the first SIGINT or SIGTERM; its reason is a {@link StopRequestedError}. */
  readonly signal: AbortSignal;
  /** True once a signal asked for the stop. */
  readonly requested: boolean;
  /** Runs `callback` when the stop is asked for (at once if it was). */
  onStop(callback: () => void): void;
}

/** The reason of {@link StopRequest.signal}: what start-up was waiting for ends with it. */
export class StopRequestedError extends Error {
  constructor(readonly stopSignal: NodeJS.Signals) {
    super(`stopped by ${stopSignal}`);
    this.name = 'StopRequestedError';
  }
}

/**
 * True for an error that the stop causes and nothing awaits:
 * - the Temporal client's gRPC retry timer, set while the server answered "Frontend is not healthy yet" (it got the
 *   terminal's Ctrl-C too), fires after the channel has been closed and throws from the timer;
 * - under tsx, the esbuild service that compiles the modules still loading got the terminal's Ctrl-C too.
 */
export function causedByStop(err: unknown): boolean {
  return (
    err instanceof Error &&
    (err.message === 'Channel has been shut down' || err.message === 'The service is no longer running')
  );
}

function watchStopSignals(): StopRequest {
  const controller = new AbortController();
  const callbacks: (() => void)[] = [];
  let firstAt = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (!controller.signal.aborted) {
      firstAt = Date.now();
      logger.info({ signal }, 'stopping: what is starting or running stops, then the services started here stop');
      // From now on, an error that only the stop causes is not a crash; any other still is.
      process.on('uncaughtException', (err, origin) => {
        if (causedByStop(err)) {
          logger.debug({ error: err.message, origin }, 'while stopping: ignored an error the stop caused');
          return;
        }
        process.stderr.write(
          `While stopping, ${origin === 'unhandledRejection' ? 'a promise rejected' : 'an error'} that nothing handled: ${inspect(err)}\n`,
        );
        process.exit(1);
      });
      controller.abort(new StopRequestedError(signal));
      for (const callback of callbacks.splice(0)) callback();
      return;
    }
    if (Date.now() - firstAt < REPEAT_WINDOW_MS) return;
    const code = 128 + (constants.signals[signal] ?? 0);
    logger.warn(
      { signal, exitCode: code },
      `second ${signal}: exiting now without finishing the stop (exit code ${code}); ` +
        'Temporal and PostgreSQL started here may still be running until they get the signal too',
    );
    process.exit(code);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, onSignal);
  return {
    signal: controller.signal,
    get requested() {
      return controller.signal.aborted;
    },
    onStop(callback) {
      if (controller.signal.aborted) callback();
      else callbacks.push(callback);
    },
  };
}

/** This process's stop; the handlers are installed as this module loads. */
export const stop: StopRequest = watchStopSignals();
