/**
 * An agent offered as a tool (`auditor.asTool({...})`), with the options of
 * the OpenAI Agents SDK's `agent.asTool()`: its arguments (`parameters`),
 * how they become the agent's task (`inputBuilder`), whether a person
 * approves each call (`needsApproval`), and how its final answer becomes
 * the call's result (`customOutputExtractor`).
 */
import type { z } from 'zod';
import { resolveOutput, type OutputType, type ResolvedOutput } from '../common/typed-output';
import type { NeedsApproval, ToolCallContext } from './call-context';

/** The arguments every agent tool takes unless it declares `parameters`: the task, in words. */
export const AGENT_TOOL_PARAMETERS = {
  type: 'object',
  properties: { input: { type: 'string', description: 'The task for the agent, with everything it needs to know.' } },
  required: ['input'],
  additionalProperties: false,
} as const;

/** What an agent tool's output extractor gets: how the agent answered. */
export interface AgentToolAnswer {
  /** The agent's final answer, in full. */
  text: string;
  /** Its typed output, parsed and checked, when the agent declares an `outputType`. */
  output?: unknown;
  /** The child conversation that answered. */
  conversationId: string;
  /** The agent that answered (the last one, when it handed off). */
  agent?: string;
}

/** How an agent is offered as a tool (see `Agent.asTool`). `Args`: its arguments, `{ input: string }` by default. */
export interface AgentToolOptions<Args = { input: string }> {
  /**
   * The tool's name, `^[a-zA-Z0-9_-]{1,64}$`. Default: the agent's name with anything but letters and digits as `_`,
   * as the OpenAI Agents SDK names it.
   */
  toolName?: string;
  /** What the calling model reads about it. Default: the agent's `handoffDescription`. */
  toolDescription?: string;
  /**
   * Its arguments, a zod schema or a JSON Schema of an object, in place of
   * `{ input: string }`: sent to the model, and each call's arguments are
   * checked against it before anything runs (a mismatch is said to the model).
   */
  parameters?: z.ZodType<Args> | Record<string, unknown>;
  /**
   * Makes the agent's task (its one user message) from the checked
   * arguments. Runs in the model call's activity when the call is planned;
   * the task it returns is recorded with the plan and fixed from then on.
   * Default: the `input` argument, or, with `parameters`, the arguments as
   * JSON under a line saying so.
   */
  inputBuilder?: (args: Args, context: ToolCallContext) => string | Promise<string>;
  /**
   * Whether a person approves each call before the agent runs: always,
   * never, or a function of the arguments and the call's context (see
   * `tool({ needsApproval })`). Default false (its own tools ask for theirs).
   */
  needsApproval?: NeedsApproval<Args>;
  /**
   * Makes the call's result from the agent's final answer (its text, and its
   * typed output when it declares one). Runs once, in the activity of the
   * agent's final model call, and its result is stored with that answer: a
   * string is sent as is, anything else as JSON. One that throws settles the
   * call as `tool_failed`. Default: the answer's text.
   */
  customOutputExtractor?: (answer: AgentToolAnswer) => unknown;
  /**
   * How long the agent's conversation may take, waits for people included;
   * past it the call settles as `effect_unknown`. Default: no limit (the
   * calling turn's cancel still stops it).
   */
  timeoutMs?: number;
}

/** An agent offered as a tool, for another agent's `tools`. */
export interface AgentTool {
  readonly kind: 'agent_tool';
  /** The agent it runs. */
  readonly agent: string;
  readonly toolName: string;
  /** The name a call of it may still carry in a running conversation (the agent's name, before the SDK's naming). */
  readonly formerToolName?: string;
  readonly toolDescription?: string;
  readonly needsApproval: NeedsApproval<unknown>;
  readonly timeoutMs?: number;
  /** The JSON Schema of its arguments, as the model is sent it. */
  readonly parametersSchema: Record<string, unknown>;
  /** Set when it declares `parameters`: checks a call's arguments. */
  readonly arguments?: ResolvedOutput;
  readonly inputBuilder?: (args: unknown, context: ToolCallContext) => string | Promise<string>;
  readonly customOutputExtractor?: (answer: AgentToolAnswer) => unknown;
}

/**
 * The agent tool of agent `agent` (with its `handoffDescription`) made with
 * `options`. Throws a `TypeError` saying what to fix when `parameters`
 * cannot be used or an option is not a function.
 */
export function agentTool<Args>(
  agent: { name: string; handoffDescription?: string },
  options: AgentToolOptions<Args> = {},
): AgentTool {
  // Named as the OpenAI Agents SDK names it: anything but letters and digits becomes `_`.
  const toolName = options.toolName ?? agent.name.replace(/[^a-zA-Z0-9]/g, '_');
  const what = `Agent tool "${toolName}" (agent "${agent.name}")`;
  for (const key of ['inputBuilder', 'customOutputExtractor'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'function')
      throw new TypeError(`${what}: ${key} must be a function, got ${typeof options[key]}.`);
  }
  const resolved = options.parameters === undefined ? undefined : resolveParameters(options.parameters, what);
  const description = options.toolDescription ?? agent.handoffDescription;
  return {
    kind: 'agent_tool',
    agent: agent.name,
    toolName,
    // Before the SDK's naming, the default was the agent's name itself: a call of it in a running conversation holds.
    ...(options.toolName === undefined && toolName !== agent.name ? { formerToolName: agent.name } : {}),
    ...(description ? { toolDescription: description } : {}),
    needsApproval: (options.needsApproval ?? false) as NeedsApproval<unknown>,
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    parametersSchema: resolved?.schema ?? structuredClone(AGENT_TOOL_PARAMETERS),
    ...(resolved ? { arguments: resolved } : {}),
    ...(options.inputBuilder
      ? { inputBuilder: options.inputBuilder as (args: unknown, context: ToolCallContext) => string | Promise<string> }
      : {}),
    ...(options.customOutputExtractor ? { customOutputExtractor: options.customOutputExtractor } : {}),
  };
}

/** The arguments' schema made into what the model is sent and a check; it must describe an object. */
function resolveParameters(parameters: OutputType, what: string): ResolvedOutput {
  const resolved = resolveOutput(parameters, { name: 'arguments', what });
  if (resolved.schema.type !== 'object')
    throw new TypeError(
      `${what}: parameters must describe an object (JSON Schema "type": "object", or z.object({...})); got type ${JSON.stringify(resolved.schema.type)}.`,
    );
  return resolved;
}
