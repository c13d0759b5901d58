/**
 * Declaring agents: `agent({ name, instructions, tools, handoffs })`, named as
 * in the OpenAI Agents SDK. A conversation starts with one
 * (`ConversationInput.agent`); the model moves it to another with a handoff
 * tool, `transfer_to_<name>`, or calls another as a tool
 * (`auditor.asTool({...})` in `tools`), which runs it in a child conversation
 * and returns its answer. The worker applies the current agent's
 * instructions, model settings and tools to each model call.
 */
import type { ModelSettings } from '../contract/conversation-input';
import { AGENT_NAME_PATTERN, FUNCTION_NAME_PATTERN } from '../contract/limits';
import type { FunctionToolSpec, ToolRegistry } from './registry';
import { MAX_TOOLS } from './registry';
import type { Tool } from './tool';
import { agentTool, type AgentTool, type AgentToolOptions } from './agent-tool';
import { resolveTypedOutput, type OutputType, type ResolvedOutput } from '../common/typed-output';
import { describeUnsendableModelSettings } from '../contract/provider-rules';
import { checkGuardrails, type Guardrail } from './guardrails';
import { allowsStrict } from '../common/strict-schema';
import { findHandoff, HANDOFF_TOOL_PREFIX, resolveHandoffs, type HandoffEntry, type ResolvedHandoff } from './handoff';

/** An agent as its author declares it. */
export interface AgentDefinition {
  /**
   * 1-52 letters, digits, `_` or `-`: conversations name it (`input.agent`), its handoff tool is `transfer_to_<name>`
   * with `-` made `_` (the OpenAI Agents SDK's name).
   */
  name: string;
  /** Its system prompt: sent first in each model call it makes, in place of the conversation's `systemPrompt`. */
  instructions?: string;
  /** What it is for, in the description of its handoff tool (what other agents' models read). */
  handoffDescription?: string;
  /** Its model; the conversation's (`input.model.model`), else the worker's, when unset. */
  model?: string;
  /** Its model settings, over the conversation's `input.model`. */
  modelSettings?: Omit<ModelSettings, 'model'>;
  /**
   * The tools its model may call: tools made with `tool({...})` (the worker
   * gets them too), names of the worker's tools (`server__tool` for an MCP
   * server's, when the conversation's `mcpServers` lists that server), or
   * other agents as tools (`other.asTool({...})`). None when unset: an agent
   * without tools sends no `tools`.
   */
  tools?: readonly (Tool | string | AgentTool)[];
  /**
   * The agents it may transfer the conversation to: names, agents, or
   * `handoff(agent, options)` (src/tools/handoff.ts). Each is offered as a
   * tool, `transfer_to_<name>` with `-` made `_` as in the OpenAI Agents SDK
   * unless `toolNameOverride` names it.
   */
  handoffs?: readonly HandoffEntry[];
  /**
   * Its final answer's type: a zod object or a JSON Schema of an object
   * (`"type": "object"` at its root: structured outputs take no other). The model is
   * asked for JSON matching it (structured output, `strict` when the schema
   * allows), each final answer is checked, and a mismatch is said to the
   * model and asked again within `outputRetries`; the turn's record carries
   * the parsed value (`TurnRecord.output`). Over the conversation's `output`.
   */
  outputType?: OutputType;
  /** Re-asks per turn after an answer that does not match `outputType`. Default 2, at most 10. */
  outputRetries?: number;
  /**
   * Its guardrails (`guardrail({...})`, on `input`, `output` or `tool`),
   * after the worker's: checks that stop a turn, withhold an answer, or block
   * a call of its tools (docs/guardrails.md).
   */
  guardrails?: readonly Guardrail[];
}

/** A declared agent, ready for the worker's `agents`. */
export interface Agent extends AgentDefinition {
  readonly kind: 'agent';
  /**
   * This agent as a tool another agent's model may call with a task
   * (`{"input": "..."}`): the call runs it in a child conversation of its own
   * (its transcript, approvals, budget and effect keys) for one turn, and
   * its final answer is the call's result.
   */
  asTool<Args = { input: string }>(options?: AgentToolOptions<Args>): AgentTool;
}

export type { AgentTool, AgentToolAnswer, AgentToolOptions } from './agent-tool';

/** Declares an agent. */
export function agent(definition: AgentDefinition): Agent {
  return {
    ...definition,
    kind: 'agent',
    asTool: (options) => agentTool(definition, options),
  };
}

export { HANDOFF_TOOL_PREFIX } from './handoff';

/** The tools offered with the agents', taken from their declarations. */
export function toolsOfAgents(agents: readonly Agent[]): Tool[] {
  return agents.flatMap((a) => (a.tools ?? []).filter((t): t is Tool => typeof t !== 'string' && t.kind === 'tool'));
}

export { AGENT_TOOL_PARAMETERS } from './agent-tool';

/** The worker's agents by name, checked against each other and the worker's tools. */
export class AgentRegistry {
  private readonly byName = new Map<string, Agent>();
  /** Each agent's handoffs, resolved once. */
  private readonly handoffs = new Map<string, ResolvedHandoff[]>();
  /** Each agent's agent tools, by tool name, with their specs, built once. */
  private readonly agentTools = new Map<string, { byName: Map<string, AgentTool>; specs: FunctionToolSpec[] }>();
  /** Each agent's typed output, resolved once. */
  private readonly outputs = new Map<string, ResolvedOutput>();

  /** Throws, saying what to fix, when names clash, a handoff names no agent or an agent offers too many tools. */
  constructor(agents: readonly Agent[], tools: ToolRegistry) {
    for (const a of agents) {
      if (a?.kind !== 'agent')
        throw new TypeError(`agents: every agent is made with agent({...}); got ${JSON.stringify(a)}.`);
      if (!AGENT_NAME_PATTERN.test(a.name)) {
        throw new TypeError(
          `Agent name "${a.name}" is not allowed: use 1-52 letters, digits, "_" or "-" (its handoff tool is transfer_to_<name>).`,
        );
      }
      if (this.byName.has(a.name)) throw new TypeError(`Two agents are named "${a.name}"; agent names must be unique.`);
      this.byName.set(a.name, a);
      checkGuardrails(a.guardrails, `Agent "${a.name}"`, ['input', 'output', 'tool']);
      const overflow: unknown = a.modelSettings?.contextOverflow;
      if (overflow !== undefined && overflow !== 'elide' && overflow !== 'summarize')
        throw new TypeError(
          `Agent "${a.name}": modelSettings.contextOverflow must be "elide" (leave earlier turns out, the default) or "summarize" (send a summary of them), got ${JSON.stringify(overflow)}.`,
        );
      const unsendable = describeUnsendableModelSettings(a.modelSettings, a.modelSettings?.api, 'modelSettings');
      if (unsendable.length > 0) throw new TypeError(`Agent "${a.name}": ${unsendable.join('; ')}.`);
      if (a.outputType !== undefined) {
        this.outputs.set(
          a.name,
          resolveTypedOutput(a.outputType, {
            name: `${a.name}_output`,
            retries: a.outputRetries,
            what: `Agent "${a.name}"`,
          }),
        );
      }
    }
    for (const a of agents) {
      for (const name of toolNames(a)) {
        if (name.startsWith(HANDOFF_TOOL_PREFIX))
          throw new TypeError(
            `Agent "${a.name}": tool "${name}" starts with "${HANDOFF_TOOL_PREFIX}", which names handoffs.`,
          );
        if (!name.includes('__') && !tools.get(name)) {
          throw new TypeError(
            `Agent "${a.name}" offers tool "${name}", which the worker does not have (its tools: ${tools.names().join(', ') || 'none'}).`,
          );
        }
      }
      const asTools = agentToolsOf(a);
      const names = new Set(toolNames(a));
      for (const t of asTools) {
        if (!this.byName.has(t.agent))
          throw new TypeError(
            `Agent "${a.name}" calls agent "${t.agent}" as a tool, which is not one of the worker's agents (${this.names().join(', ')}).`,
          );
        if (!FUNCTION_NAME_PATTERN.test(t.toolName) || t.toolName.startsWith(HANDOFF_TOOL_PREFIX)) {
          throw new TypeError(
            `Agent "${a.name}": agent tool name "${t.toolName}" is not allowed: use 1-64 letters, digits, "_" or "-", not starting with "${HANDOFF_TOOL_PREFIX}".`,
          );
        }
        if (names.has(t.toolName))
          throw new TypeError(
            `Agent "${a.name}" offers two tools named "${t.toolName}"; give the agent tool another toolName.`,
          );
        if (t.timeoutMs !== undefined && !(Number.isInteger(t.timeoutMs) && t.timeoutMs >= 1000)) {
          throw new TypeError(
            `Agent "${a.name}": agent tool "${t.toolName}" has timeoutMs ${t.timeoutMs}; give whole milliseconds, at least 1000.`,
          );
        }
        names.add(t.toolName);
      }
      this.agentTools.set(a.name, {
        byName: new Map(
          asTools.flatMap((t) => [
            [t.toolName, t] as const,
            ...(t.formerToolName && !names.has(t.formerToolName) ? [[t.formerToolName, t] as const] : []),
          ]),
        ),
        specs: asTools.map(agentToolSpec),
      });
      const offered = names.size + (a.handoffs?.length ?? 0);
      if (offered > MAX_TOOLS)
        throw new TypeError(
          `Agent "${a.name}" offers ${offered} tools and handoffs; providers take at most ${MAX_TOOLS}.`,
        );
      this.handoffs.set(a.name, resolveHandoffs(a.name, a.handoffs ?? [], this.byName, names));
    }
  }

  /** The typed output `agent` answers with, when it declares one. */
  outputOf(agent: Agent): ResolvedOutput | undefined {
    return this.outputs.get(agent.name);
  }

  /** The agent called `name`. */
  get(name: string): Agent | undefined {
    return this.byName.get(name);
  }

  /** Every agent's name, in the order declared. */
  names(): string[] {
    return [...this.byName.keys()];
  }

  /** The names of the tools `agent` may call (handoffs not included). */
  toolNames(agent: Agent): string[] {
    return toolNames(agent);
  }

  /** The handoff tools `agent` offers, in the shape the Chat Completions API takes. */
  handoffSpecs(agent: Agent): FunctionToolSpec[] {
    return this.handoffsOf(agent).map((h) => h.spec);
  }

  /** The handoffs `agent` offers, with their options (each model call evaluates `isEnabled`). */
  handoffsOf(agent: Agent): readonly ResolvedHandoff[] {
    return this.handoffs.get(agent.name) ?? [];
  }

  /** The agents `agent` calls as tools, in the shape the Chat Completions API takes. */
  agentToolSpecs(agent: Agent): FunctionToolSpec[] {
    return this.agentTools.get(agent.name)?.specs ?? [];
  }

  /** The agent tool `agent` offers as `toolName`, when it offers one. */
  agentTool(agent: Agent, toolName: string): AgentTool | undefined {
    return this.agentTools.get(agent.name)?.byName.get(toolName);
  }

  /** The agent a call of `toolName` by `agent` transfers to, when it is one of its handoffs. */
  handoffTarget(agent: Agent, toolName: string): string | undefined {
    return findHandoff(this.handoffsOf(agent), toolName)?.target;
  }
}

/** The tool that runs another agent with a task. */
function agentToolSpec(t: AgentTool): FunctionToolSpec {
  return {
    type: 'function',
    function: {
      name: t.toolName,
      description: t.toolDescription ?? `Ask the ${t.agent} agent to do a task; its answer is the result.`,
      parameters: structuredClone(t.parametersSchema),
      strict: allowsStrict(t.parametersSchema),
    },
  };
}

/** The names of the worker's tools an agent may call (its agent tools not included). */
function toolNames(agent: AgentDefinition): string[] {
  return (agent.tools ?? []).flatMap((t) => (typeof t === 'string' ? [t] : t.kind === 'tool' ? [t.name] : []));
}

function agentToolsOf(agent: AgentDefinition): AgentTool[] {
  return (agent.tools ?? []).filter((t): t is AgentTool => typeof t !== 'string' && t.kind === 'agent_tool');
}
