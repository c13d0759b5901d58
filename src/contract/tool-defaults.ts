/**
 * Defaults of a tool's durability settings, in one place: the tool
 * declaration documents them, the model activity plans with them, the batch
 * falls back to them. Pure module, safe in workflow code.
 */
export const TOOL_DEFAULTS = {
  /** Start-to-close timeout of one attempt. */
  timeoutMs: 60_000,
  /** Attempts of an idempotent tool (a tool that is not runs once). */
  maxAttempts: 3,
} as const;
