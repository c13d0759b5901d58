/**
 * Guardrails: checks that stop a turn before a request, a tool call or an
 * answer does harm, as in the OpenAI Agents SDK. Each runs inside the
 * activity it guards, so a step gains no workflow task:
 *
 * - `input`: the turn's user messages, in its first model call's activity,
 *   before the model is asked; a tripwire ends the turn as `guardrail_tripped`.
 * - `output`: a final answer (and its typed output), in the model call's
 *   activity, before anyone sees it (its text is not streamed until it
 *   passed); a tripwire withholds it and ends the turn as `guardrail_tripped`.
 * - `tool`: each call's arguments, when the model call's activity plans the
 *   call (and again for arguments a person edits): it may block the call
 *   (settled as `guardrail_blocked`, the others run) or make it wait for a
 *   person.
 */
import { FUNCTION_NAME_PATTERN } from '../contract/limits';
import type { ToolCallContext } from './call-context';

/** What every check gets besides its subject. */
export interface GuardrailContext {
  conversationId: string;
  /** The agent that answers, for conversations with named agents. */
  agent?: string;
  /**
   * Asks the worker's model (non-streaming, no tools) and returns its text,
   * for a guardrail that is a model call: `await complete('Is this a refund request? yes/no\n\n' + text)`.
   * Its tokens are not counted in the turn's usage.
   */
  complete(prompt: string, options?: { system?: string }): Promise<string>;
  /** Aborted when the activity is cancelled (the turn stopped). */
  signal: AbortSignal;
}

/** What a tool guardrail's check gets: a guardrail's context and the call's. */
export type ToolGuardrailContext = GuardrailContext & ToolCallContext;

/**
 * What an input or output check says: `tripwire: true` stops the turn; `reason` is what the user and the model read;
 * `outputInfo` (JSON, at most `GUARDRAIL_OUTPUT_INFO_MAX_CHARS` characters) is kept in the turn's record for operators.
 * The OpenAI Agents SDK's `{ tripwireTriggered, outputInfo }` is taken as well.
 */
export type GuardrailVerdict =
  | { tripwire: boolean; reason?: string; outputInfo?: unknown }
  | { tripwireTriggered: boolean; reason?: string; outputInfo?: unknown };

/** What a tool check says about one call. */
export interface ToolGuardrailVerdict {
  /**
   * `allow`: run it as planned. `block`: settle it as `guardrail_blocked`, unrun. `require_approval`: a person decides
   * first.
   */
  action: 'allow' | 'block' | 'require_approval';
  /** Why, for the model (a block) and for the approver. */
  reason?: string;
  /** What it found, kept in the turn's record as for input and output guardrails (`GuardrailResult`). */
  outputInfo?: unknown;
}

/** A guardrail as its author declares it: where it runs (`on`) and its check. */
export type GuardrailDefinition =
  | {
      name: string;
      on: 'input';
      check(input: { messages: string[] }, context: GuardrailContext): GuardrailVerdict | Promise<GuardrailVerdict>;
    }
  | {
      name: string;
      on: 'output';
      /** `text` is the answer; `output` its typed value, when a typed output was asked for. */
      check(
        answer: { text: string; output?: unknown },
        context: GuardrailContext,
      ): GuardrailVerdict | Promise<GuardrailVerdict>;
    }
  | {
      name: string;
      on: 'tool';
      /** `arguments` are parsed and checked against the tool's schema; `context` carries the call's too. */
      check(
        call: { toolName: string; arguments: unknown },
        context: ToolGuardrailContext,
      ): ToolGuardrailVerdict | Promise<ToolGuardrailVerdict>;
    };

/** A declared guardrail, for the plugin's, an agent's or a tool's `guardrails`. */
export type Guardrail = GuardrailDefinition & { readonly kind: 'guardrail' };

/**
 * Declares a guardrail. Throws a `TypeError` when its name is not 1-64
 * letters, digits, `_` or `-`, or `on` is not `input`, `output` or `tool`.
 */
export function guardrail(definition: GuardrailDefinition): Guardrail {
  if (!FUNCTION_NAME_PATTERN.test(definition.name ?? '')) {
    throw new TypeError(
      `Guardrail name ${JSON.stringify(definition.name)} is not allowed: use 1-64 letters, digits, "_" or "-".`,
    );
  }
  if (!['input', 'output', 'tool'].includes(definition.on)) {
    throw new TypeError(
      `Guardrail "${definition.name}": on must be "input", "output" or "tool", got ${JSON.stringify(definition.on)}.`,
    );
  }
  return { ...definition, kind: 'guardrail' };
}

/** The guardrails of `on` among `lists`, in order (worker's, then agent's, then tool's). */
export function guardrailsOn<On extends Guardrail['on']>(
  on: On,
  ...lists: (readonly Guardrail[] | undefined)[]
): Extract<Guardrail, { on: On }>[] {
  return lists.flatMap((list) => (list ?? []).filter((g): g is Extract<Guardrail, { on: On }> => g.on === on));
}

/** Checks a list of guardrails before the worker polls: made with guardrail(), names unique; `where` names the list. */
export function checkGuardrails(
  list: readonly Guardrail[] | undefined,
  where: string,
  allowed: readonly Guardrail['on'][],
): void {
  const seen = new Set<string>();
  for (const g of list ?? []) {
    if (g?.kind !== 'guardrail')
      throw new TypeError(`${where}: every guardrail is made with guardrail({...}); got ${JSON.stringify(g)}.`);
    if (!allowed.includes(g.on))
      throw new TypeError(
        `${where}: guardrail "${g.name}" is on "${g.on}"; here only ${allowed.join(', ')} guardrails apply.`,
      );
    if (seen.has(g.name)) throw new TypeError(`${where}: two guardrails are named "${g.name}".`);
    seen.add(g.name);
  }
}
