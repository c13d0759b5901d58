/**
 * Declaring tools: `tool({ name, description, parameters, execute, needsApproval })`,
 * the shape the ecosystem already uses, with durability settings on top.
 */
import type { Pool, PoolClient } from 'pg';
import { z } from 'zod';
import type { NeedsApproval } from './call-context';
import type { Guardrail } from './guardrails';
import type { DecisionKind } from '../contract/decisions';

export { ToolEffectUnknownError, ToolError } from '../common/errors';

/** What a tool's `execute` receives besides its arguments. */
export interface ToolContext {
  conversationId: string;
  toolCallId: string;
  /**
   * The effect key of this call: the call instance the workflow minted
   * (`${conversationId}/msg-${assistantSeq}/call-${index}`) and what runs
   * (`/args-` and 16 hex digits of a hash of the tool's name and its validated
   * arguments). The same for every attempt of this call, also when a reset run
   * asks for it again with the same arguments; different for every other call,
   * even when the provider reuses its tool-call id or a reset run asks for other
   * arguments at the same place. Key external side effects by it.
   */
  idempotencyKey: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** Aborted when the call is cancelled or its activity times out. */
  signal: AbortSignal;
  /** The worker's PostgreSQL pool (the demo domain lives there). */
  db: Pool;
  /**
   * Applies a side effect at most once per tool call: runs `effect` in one
   * PostgreSQL transaction together with a ledger row keyed by the idempotency
   * key. A retry (after a crash, a timeout, a lost completion) gets the
   * recorded result back without running `effect` again.
   */
  once<T>(effect: (tx: PoolClient) => Promise<T>): Promise<T>;
}

/** A tool as declared by its author. */
export interface ToolDefinition<Schema extends z.ZodType = z.ZodType, Result = unknown> {
  /** snake_case name the model calls; `^[a-zA-Z0-9_-]{1,64}$`. */
  name: string;
  description: string;
  /** Zod schema of the arguments; sent to the model as JSON Schema and checked before `execute`. */
  parameters: Schema;
  /**
   * The JSON Schema the model is sent, when it is written by hand rather than
   * derived from `parameters` (which still checks the arguments), e.g. a
   * schema an MCP server gave.
   */
  jsonSchema?: Record<string, unknown>;
  /** Does the work. A string result is sent as is; anything else as JSON. */
  execute(args: z.infer<Schema>, context: ToolContext): Promise<Result> | Result;
  /**
   * What a person may decide on a call waiting for approval: `approve`,
   * `reject`, `edit` (run it with arguments they give, checked against
   * `parameters` first) and `respond` (their text is the result; the tool
   * does not run). Default: all four, without `respond` for a tool that is
   * not idempotent (a model reads a response as the tool's success).
   */
  decisions?: readonly DecisionKind[];
  /**
   * Whether a person must approve a call first: always, never, or a function
   * of the arguments and the call's context (conversation, who asked, the
   * agent, earlier messages on request), which may be async. Evaluated once,
   * when the model call's activity plans the call; a function that throws or
   * times out makes the call wait for a person. Default false.
   */
  needsApproval?: NeedsApproval<z.infer<Schema>>;
  /** Start-to-close timeout of one attempt. Default 60 s. */
  timeoutMs?: number;
  /**
   * True when a retry cannot apply an effect twice: the tool only reads, or it
   * writes through `context.once`. Idempotent tools are retried (up to
   * `maxAttempts`); others run at most once, and a run that times out or loses
   * its worker settles as `effect_unknown` (the model is told not to retry it
   * without checking). Default true.
   */
  idempotent?: boolean;
  /** Attempts for idempotent tools. Default 3. */
  maxAttempts?: number;
  /**
   * Tool guardrails (`guardrail({ on: 'tool', ... })`) that check each call's
   * arguments before it runs: they may block it or make it wait for a person
   * (see docs/guardrails.md). After the worker's and the agent's.
   */
  guardrails?: readonly Guardrail[];
}

/** What a call of a `waitForEvent()` tool waits for (`src/tools/wait-for-event.ts`). */
export interface ToolEventWait {
  /** The event's name, e.g. `payment.settled`. */
  event: string;
  /** The key the call waits for, from its checked arguments (e.g. the order's id). */
  key(args: unknown): string;
  /** How long a call waits. */
  timeoutMs: number;
}

/** A declared tool, ready for a {@link ToolRegistry}. */
export interface Tool extends ToolDefinition<z.ZodType, unknown> {
  readonly kind: 'tool';
  /** Set for a `waitForEvent()` tool: its calls wait for an event instead of running `execute`. */
  readonly waitFor?: ToolEventWait;
  /** Set for the `comeBackLater()` tool: its calls ask the conversation to come back (the furthest ahead, in ms). */
  readonly comeBack?: { maxDelayMs: number };
}

/** Declares a tool. */
export function tool<Schema extends z.ZodType, Result>(definition: ToolDefinition<Schema, Result>): Tool {
  return { ...(definition as unknown as ToolDefinition<z.ZodType, unknown>), kind: 'tool' };
}
