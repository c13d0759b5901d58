/** The options of a chaos run ({@link ChaosOptions}), read by the run and shown in its summary. */

/** Options of `runChaos` (`run-chaos.ts`); every one has a default. */
export interface ChaosOptions {
  /** Conversations to drive. Default 50. */
  conversations?: number;
  /** Worker processes to SIGKILL (each replaced at once). Default 20. */
  kills?: number;
  /** Times to stop and restart the Temporal server process. Default 1. */
  serverRestarts?: number;
  /**
   * Run on Temporal's own server binaries (built by
   * scripts/ensure-temporal-server.sh) on the run's PostgreSQL, 4 history
   * shards, mutual TLS, instead of the dev server. Default false.
   */
  cluster?: boolean;
  /** Times to stop PostgreSQL for 5–20 s (`databaseDownMs`) and start it again. Default 1. */
  databaseRestarts?: number;
  /** How long PostgreSQL stays down, [min, max] ms. Default [5000, 20000]. */
  databaseDownMs?: [number, number];
  /** Conversations driven at once. Default 8. */
  concurrency?: number;
  /**
   * The share (0..1) of the conversations on the Responses API (`input.model.api: 'responses'`; their forks and the
   * agents they call as tools inherit it), the others on Chat Completions. Default 0.5.
   */
  responsesShare?: number;
  /** Seed of every random choice; random when unset. */
  seed?: string;
  /** Hard stop: the run ends (and fails) after this long. Default 10. */
  maxMinutes?: number;
  /** Worker processes running at once. Default 2. */
  workers?: number;
  /** `approvalTimeoutMs` of the conversations. Default 3000. */
  approvalTimeoutMs?: number;
  /** `timeouts.heartbeatMs` of the conversations. Default 3000. */
  heartbeatMs?: number;
  /** Lost-worker takeover in the worker processes (`AGENT_LOST_WORKER_TAKEOVER`). Default true. */
  lostWorkerTakeover?: boolean;
  /**
   * Before each worker kill, once every worker is up and every earlier
   * fault's conversations have moved again, measure a control: how long the
   * turns in flight take to move with no fault at all. Default true.
   */
  controls?: boolean;
  /**
   * `continueAsNewAfterEvents` of the conversations (low values make them continue as new between most turns); the
   * workflow's default when unset.
   */
  continueAsNewAfterEvents?: number;
  /** Random pause before each worker kill or server restart, [min, max] ms. Default [1000, 3000]. */
  faultGapMs?: [number, number];
  /** After the last conversation's script, how long conversations may take to settle. Default 60 s. */
  settleTimeoutMs?: number;
  /** A turn not finished after this long is given up (and its conversation counted as stuck). Default 150 s. */
  turnTimeoutMs?: number;
  /** Keep the scratch folder (worker logs, Temporal's SQLite file) instead of removing it. */
  keepFiles?: boolean;
  /** Progress lines; silent when unset. */
  log?: (line: string) => void;
}
