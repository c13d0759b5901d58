/**
 * Handoffs as the OpenAI Agents SDK declares them: an agent's `handoffs`
 * take agent names, agents, or `handoff(agent, options)` with a tool name
 * and description of its own, a typed input, a function run when the model
 * hands off, a filter of what the new agent is sent, and a switch that says
 * whether the model is offered it at all. Each option is durable: the model
 * call's activity evaluates `isEnabled`, checks the input and runs
 * `onHandoff` when it plans the call, and records what they did in the plan;
 * the input filter is data, carried in the handoff's result and applied by
 * the new agent's model calls (src/activities/model/handoffs.ts).
 */
import { z } from 'zod';
import { compileJsonSchema } from '../common/json-schema';
import { allowsStrict } from '../common/strict-schema';
import { isZodSchema, type OutputType } from '../common/typed-output';
import { HANDOFF_KEEP_LAST_MAX, type HandoffInputFilter } from '../contract/handoffs';
import { FUNCTION_NAME_PATTERN } from '../contract/limits';
import type { FunctionToolSpec } from './registry';

export type { HandoffInputFilter } from '../contract/handoffs';

/** The prefix of handoff tools: `transfer_to_refunds` moves the conversation to agent `refunds`. */
export const HANDOFF_TOOL_PREFIX = 'transfer_to_';

/** What `isEnabled` gets: the conversation and the agent that would hand off. */
export interface HandoffEnabledContext {
  conversationId: string;
  /** The agent that offers the handoff (the one answering now). */
  agent: string;
  /** Aborted when the model call is cancelled. */
  signal: AbortSignal;
}

/** What `onHandoff` gets besides the input. */
export interface OnHandoffContext extends HandoffEnabledContext {
  /** The agent the conversation moves to. */
  target: string;
  /** The model's call of the handoff tool. */
  toolCallId: string;
}

/** A handoff's options, named as in the OpenAI Agents SDK. */
export interface HandoffOptions {
  /** The tool's name, `^[a-zA-Z0-9_-]{1,64}$`. Default: `transfer_to_<agent>`, `-` and spaces made `_` as the SDK does. */
  toolNameOverride?: string;
  /** What the model reads about it. Default: "Hand off to the <agent> agent to handle the request." and its `handoffDescription`. */
  toolDescriptionOverride?: string;
  /**
   * The arguments the model gives with the handoff: a zod schema or a JSON
   * Schema object (sent `strict` when the schema allows). A call whose
   * arguments do not match settles as `tool_failed` (`invalid_arguments`) and
   * the conversation stays; the checked value is recorded in the plan and in
   * the handoff's result, and is what `onHandoff` gets.
   */
  inputType?: OutputType;
  /**
   * Runs in the model call's activity when the handoff is planned, before the
   * conversation moves: at least once (a retried model call runs it again),
   * so make it idempotent. What it returns (as JSON) is recorded in the plan;
   * when it throws, the handoff is refused (`tool_failed`, `handoff_refused`)
   * with its message and the conversation stays.
   */
  onHandoff?: (context: OnHandoffContext, input: unknown) => unknown;
  /** What the new agent is sent of the conversation before the handoff: data, see {@link HandoffInputFilter}. */
  inputFilter?: HandoffInputFilter;
  /**
   * Whether the model is offered the handoff, evaluated in each model call's
   * activity (I/O allowed); a predicate that throws counts as false. Default true.
   */
  isEnabled?: boolean | ((context: HandoffEnabledContext) => boolean | Promise<boolean>);
}

/** A handoff made with {@link handoff}, for an agent's `handoffs`. */
export interface Handoff {
  readonly kind: 'handoff';
  /** The agent it transfers to. */
  readonly agent: string;
  readonly options: HandoffOptions;
}

/** What an agent's `handoffs` may list: a name, an agent (`{ kind: 'agent', name }`) or a {@link Handoff}. */
export type HandoffEntry = string | Handoff | { readonly kind: 'agent'; readonly name: string };

/** A handoff to `agent` (an agent or its name) with options, for an agent's `handoffs`. Checked by the worker. */
export function handoff(agent: string | { readonly name: string }, options: HandoffOptions = {}): Handoff {
  return { kind: 'handoff', agent: typeof agent === 'string' ? agent : agent.name, options };
}

/** The handoff tool's name as the OpenAI Agents SDK makes it: `transfer_to_` and the name, each other character than a letter or digit made `_`. */
export function handoffToolName(agent: string): string {
  return `${HANDOFF_TOOL_PREFIX}${agent.replace(/[^a-zA-Z0-9]/g, '_')}`;
}

/** How a checked input fared. */
export type HandoffInputVerdict = { ok: true; value: unknown } | { ok: false; problem: string };

/** One handoff an agent offers, ready for model calls. */
export interface ResolvedHandoff {
  /** The agent it transfers to. */
  target: string;
  /** The name the model calls now. */
  toolName: string;
  /** `transfer_to_<agent>` as workers named it before the SDK's names, still taken from running conversations. */
  legacyToolName?: string;
  spec: FunctionToolSpec;
  options: HandoffOptions;
  /** Checks the call's arguments against `inputType`; undefined when it has none (arguments are then ignored). */
  checkInput?: (args: string) => HandoffInputVerdict;
}

/** No input: the empty object, strict, as the SDK sends it. */
const NO_INPUT = { type: 'object', properties: {}, required: [], additionalProperties: false } as const;

/**
 * Resolves agent `from`'s handoffs. Throws a `TypeError` saying what to fix
 * when one names no agent of the worker, has a bad option, or its tool name
 * clashes with another of the agent's tools or handoffs (`taken`).
 */
export function resolveHandoffs(
  from: string,
  entries: readonly HandoffEntry[],
  agents: ReadonlyMap<string, { handoffDescription?: string }>,
  taken: ReadonlySet<string>,
): ResolvedHandoff[] {
  const names = new Set(taken);
  const resolved = entries.map((entry) => {
    const h = asHandoff(entry, from);
    const what = `Agent "${from}": handoff to "${h.agent}"`;
    if (!agents.has(h.agent))
      throw new TypeError(
        `Agent "${from}" hands off to "${h.agent}", which is not one of the worker's agents (${[...agents.keys()].join(', ')}).`,
      );
    const resolvedHandoff = resolveOne(h, what, agents.get(h.agent)?.handoffDescription);
    if (names.has(resolvedHandoff.toolName))
      throw new TypeError(
        `${what} is offered as tool "${resolvedHandoff.toolName}", which another of its tools or handoffs already has; give it a toolNameOverride.`,
      );
    names.add(resolvedHandoff.toolName);
    return resolvedHandoff;
  });
  // An older name stays callable only where it names nothing else.
  return resolved.map((r) =>
    r.legacyToolName !== undefined && names.has(r.legacyToolName) ? { ...r, legacyToolName: undefined } : r,
  );
}

/** The handoff a call of `toolName` makes: by its name now, else by the name older workers gave it. */
export function findHandoff(handoffs: readonly ResolvedHandoff[], toolName: string): ResolvedHandoff | undefined {
  return handoffs.find((h) => h.toolName === toolName) ?? handoffs.find((h) => h.legacyToolName === toolName);
}

function asHandoff(entry: HandoffEntry, from: string): Handoff {
  if (typeof entry === 'string') return handoff(entry);
  if (entry?.kind === 'handoff' || entry?.kind === 'agent')
    return entry.kind === 'handoff' ? entry : handoff(entry.name);
  throw new TypeError(
    `Agent "${from}": handoffs take agent names, agents or handoff(agent, options); got ${JSON.stringify(entry)}.`,
  );
}

function resolveOne(h: Handoff, what: string, handoffDescription: string | undefined): ResolvedHandoff {
  const o = h.options ?? {};
  const known = ['toolNameOverride', 'toolDescriptionOverride', 'inputType', 'onHandoff', 'inputFilter', 'isEnabled'];
  const unknown = Object.keys(o).filter((k) => !known.includes(k));
  if (unknown.length > 0)
    throw new TypeError(`${what} has unknown option ${unknown.join(', ')}; its options are ${known.join(', ')}.`);
  const toolName = o.toolNameOverride ?? handoffToolName(h.agent);
  if (!FUNCTION_NAME_PATTERN.test(toolName))
    throw new TypeError(
      `${what}: toolNameOverride "${toolName}" is not allowed: use 1-64 letters, digits, "_" or "-".`,
    );
  if (o.onHandoff !== undefined && typeof o.onHandoff !== 'function')
    throw new TypeError(`${what}: onHandoff must be a function (context, input) => ...; got ${typeof o.onHandoff}.`);
  if (o.isEnabled !== undefined && typeof o.isEnabled !== 'boolean' && typeof o.isEnabled !== 'function')
    throw new TypeError(
      `${what}: isEnabled must be a boolean or a function of the context; got ${typeof o.isEnabled}.`,
    );
  const input = o.inputType === undefined ? undefined : resolveInput(o.inputType, what);
  const parameters = input?.schema ?? structuredClone(NO_INPUT);
  const legacy = `${HANDOFF_TOOL_PREFIX}${h.agent}`;
  return {
    target: h.agent,
    toolName,
    ...(legacy !== toolName ? { legacyToolName: legacy } : {}),
    spec: {
      type: 'function',
      function: {
        name: toolName,
        description:
          o.toolDescriptionOverride ??
          `Hand off to the ${h.agent} agent to handle the request.${handoffDescription ? ` ${handoffDescription}` : ''}`,
        parameters: parameters as Record<string, unknown>,
        strict: allowsStrict(parameters),
      },
    },
    options: { ...o, ...(o.inputFilter ? { inputFilter: checkedFilter(o.inputFilter, what) } : {}) },
    ...(input ? { checkInput: input.check } : {}),
  };
}

/** The input type as the JSON Schema sent and a check of the model's arguments. */
function resolveInput(
  type: OutputType,
  what: string,
): { schema: Record<string, unknown>; check: (args: string) => HandoffInputVerdict } {
  const zod = isZodSchema(type) ? type : undefined;
  let json: Record<string, unknown>;
  let validate: (value: unknown) => HandoffInputVerdict;
  try {
    json = zod
      ? (z.toJSONSchema(zod, { unrepresentable: 'any' }) as Record<string, unknown>)
      : (type as Record<string, unknown>);
    if (zod) {
      validate = (value) => {
        const parsed = zod.safeParse(value);
        return parsed.success
          ? { ok: true, value: parsed.data }
          : { ok: false, problem: z.prettifyError(parsed.error) };
      };
    } else {
      const compiled = compileJsonSchema(json, 'input');
      validate = (value) => {
        const problem = compiled(value);
        return problem === undefined ? { ok: true, value } : { ok: false, problem };
      };
    }
  } catch (err) {
    throw new TypeError(`${what}: its inputType cannot be used as a JSON Schema: ${(err as Error).message}.`, {
      cause: err,
    });
  }
  const { $schema: _dialect, ...schema } = json;
  if (schema.type !== 'object')
    throw new TypeError(
      `${what}: its inputType must describe an object (tool arguments are one); got type ${JSON.stringify(schema.type)}.`,
    );
  return {
    schema,
    check(args) {
      let value: unknown;
      try {
        value = JSON.parse(args.trim() === '' ? '{}' : args);
      } catch (err) {
        return { ok: false, problem: `The arguments are not JSON (${(err as Error).message}).` };
      }
      return validate(value);
    },
  };
}

function checkedFilter(filter: HandoffInputFilter, what: string): HandoffInputFilter {
  const f = filter as Record<string, unknown>;
  const extra = Object.keys(f ?? {}).filter((k) => k !== 'dropToolCalls' && k !== 'keepLast');
  if (typeof filter !== 'object' || filter === null || extra.length > 0)
    throw new TypeError(
      `${what}: inputFilter is data: { dropToolCalls?: boolean, keepLast?: number }${extra.length > 0 ? `; got unknown ${extra.join(', ')}` : ''}.`,
    );
  if (f.dropToolCalls !== undefined && typeof f.dropToolCalls !== 'boolean')
    throw new TypeError(
      `${what}: inputFilter.dropToolCalls must be true or false; got ${JSON.stringify(f.dropToolCalls)}.`,
    );
  const keep = f.keepLast;
  if (
    keep !== undefined &&
    !(Number.isInteger(keep) && (keep as number) >= 0 && (keep as number) <= HANDOFF_KEEP_LAST_MAX)
  )
    throw new TypeError(
      `${what}: inputFilter.keepLast must be a whole number from 0 to ${HANDOFF_KEEP_LAST_MAX}; got ${JSON.stringify(keep)}.`,
    );
  return {
    ...(filter.dropToolCalls !== undefined ? { dropToolCalls: filter.dropToolCalls } : {}),
    ...(filter.keepLast !== undefined ? { keepLast: filter.keepLast } : {}),
  };
}
