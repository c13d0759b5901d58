/**
 * Declaring a tool whose call waits for an event:
 * `waitForEvent({ name, description, parameters, event, key, timeoutMs })`.
 * The model calls it like any tool; the call then waits, durably, until an
 * event with that name and the key made from its arguments arrives (its
 * payload is the call's result) or `timeoutMs` passes (the model reads that it
 * timed out). Nothing runs on a worker while it waits. docs/waiting-for-events.md.
 */
import { z } from 'zod';
import { EVENT_LIMITS, EVENT_NAME_PATTERN } from '../contract/events';
import { tool, type Tool, type ToolDefinition } from './tool';

/** A tool that waits for an event, as declared. */
export interface WaitForEventDefinition<Schema extends z.ZodType = z.ZodType> extends Pick<
  ToolDefinition<Schema>,
  'name' | 'description' | 'parameters' | 'needsApproval' | 'guardrails'
> {
  /** The event's name, e.g. `payment.settled`. */
  event: string;
  /** The key a call waits for, from its checked arguments, e.g. `({ order_id }) => order_id`. */
  key(args: z.infer<Schema>): string;
  /** How long a call waits before the model is told it timed out. Default 3 days; at most a year. */
  timeoutMs?: number;
}

/** The longest a call may wait: a year. */
const MAX_WAIT_MS = 365 * 24 * 60 * 60 * 1000;

/**
 * Declares a tool whose calls wait for an event. Throws a `TypeError` for an event name or timeout that cannot be
 * used, saying what is allowed.
 */
export function waitForEvent<Schema extends z.ZodType>(definition: WaitForEventDefinition<Schema>): Tool {
  const { event, key, timeoutMs = EVENT_LIMITS.defaultWaitMs, ...rest } = definition;
  if (!EVENT_NAME_PATTERN.test(event) || event.length > EVENT_LIMITS.nameMaxChars)
    throw new TypeError(
      `waitForEvent "${definition.name}": the event name "${event}" may hold letters, digits and . _ : - only, starting with a letter or digit, at most ${EVENT_LIMITS.nameMaxChars} characters.`,
    );
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_WAIT_MS)
    throw new TypeError(
      `waitForEvent "${definition.name}": timeoutMs must be a whole number of milliseconds from 1 to ${MAX_WAIT_MS} (a year); it is ${timeoutMs}.`,
    );
  const declared = tool({
    ...rest,
    // A waiting call never runs an activity: the workflow waits for the event instead.
    execute: () => {
      throw new Error(`${definition.name} waits for the event ${event}; it is not executed.`);
    },
  });
  return { ...declared, waitFor: { event, key: key as (args: unknown) => string, timeoutMs } };
}
