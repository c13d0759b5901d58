/**
 * Declaring agents: `agent({ name, instructions, tools, handoffs })`, named as
 * in the OpenAI Agents SDK. A conversation starts with one
 * (`ConversationInput.agent`); the model moves it to another with a handoff
 * tool, `transfer_to_<name>`. The worker applies the current agent's
 * instructions, model settings and tools to each model call.
 */
import { AGENT_NAME_PATTERN, type ModelSettings } from '../contract/conversation';
import type { FunctionToolSpec, ToolRegistry } from './registry';
import { MAX_TOOLS } from './registry';
import type { Tool } from './tool';

/** An agent as its author declares it. */
export interface AgentDefinition {
  /** 1-52 letters, digits, `_` or `-`: conversations name it (`input.agent`), its handoff tool is `transfer_to_<name>`. */
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
   * gets them too), or names of the worker's tools (`server__tool` for an MCP
   * server's, when the conversation's `mcpServers` lists that server). None
   * when unset: an agent without tools sends no `tools`.
   */
  tools?: readonly (Tool | string)[];
  /** Names of the agents it may transfer the conversation to, each offered as a `transfer_to_<name>` tool. */
  handoffs?: readonly string[];
}

/** A declared agent, ready for the worker's `agents`. */
export interface Agent extends AgentDefinition {
  readonly kind: 'agent';
}

/** Declares an agent. */
export function agent(definition: AgentDefinition): Agent {
  return { ...definition, kind: 'agent' };
}

/** The prefix of handoff tools: `transfer_to_refunds` moves the conversation to agent `refunds`. */
export const HANDOFF_TOOL_PREFIX = 'transfer_to_';

/** The tools offered with the agents', taken from their declarations. */
export function toolsOfAgents(agents: readonly Agent[]): Tool[] {
  return agents.flatMap((a) => (a.tools ?? []).filter((t): t is Tool => typeof t !== 'string'));
}

/** The worker's agents by name, checked against each other and the worker's tools. */
export class AgentRegistry {
  private readonly byName = new Map<string, Agent>();
  /** Each agent's handoff tools, built once. */
  private readonly handoffs = new Map<string, FunctionToolSpec[]>();

  /** Throws, saying what to fix, when names clash, a handoff names no agent or an agent offers too many tools. */
  constructor(agents: readonly Agent[], tools: ToolRegistry) {
    for (const a of agents) {
      if (a?.kind !== 'agent') throw new TypeError(`agents: every agent is made with agent({...}); got ${JSON.stringify(a)}.`);
      if (!AGENT_NAME_PATTERN.test(a.name)) {
        throw new TypeError(`Agent name "${a.name}" is not allowed: use 1-52 letters, digits, "_" or "-" (its handoff tool is transfer_to_<name>).`);
      }
      if (this.byName.has(a.name)) throw new TypeError(`Two agents are named "${a.name}"; agent names must be unique.`);
      this.byName.set(a.name, a);
    }
    for (const a of agents) {
      for (const target of a.handoffs ?? []) {
        if (!this.byName.has(target))
          throw new TypeError(`Agent "${a.name}" hands off to "${target}", which is not one of the worker's agents (${this.names().join(', ')}).`);
      }
      for (const name of toolNames(a)) {
        if (name.startsWith(HANDOFF_TOOL_PREFIX))
          throw new TypeError(`Agent "${a.name}": tool "${name}" starts with "${HANDOFF_TOOL_PREFIX}", which names handoffs.`);
        if (!name.includes('__') && !tools.get(name)) {
          throw new TypeError(`Agent "${a.name}" offers tool "${name}", which the worker does not have (its tools: ${tools.names().join(', ') || 'none'}).`);
        }
      }
      const offered = toolNames(a).length + (a.handoffs?.length ?? 0);
      if (offered > MAX_TOOLS) throw new TypeError(`Agent "${a.name}" offers ${offered} tools and handoffs; providers take at most ${MAX_TOOLS}.`);
      this.handoffs.set(
        a.name,
        (a.handoffs ?? []).map((name) => handoffSpec(name, this.byName.get(name)?.handoffDescription)),
      );
    }
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
    return this.handoffs.get(agent.name) ?? [];
  }

  /** The agent a call of `toolName` by `agent` transfers to, when it is one of its handoffs. */
  handoffTarget(agent: Agent, toolName: string): string | undefined {
    if (!toolName.startsWith(HANDOFF_TOOL_PREFIX)) return undefined;
    const target = toolName.slice(HANDOFF_TOOL_PREFIX.length);
    return agent.handoffs?.includes(target) ? target : undefined;
  }
}

/** The tool that hands a conversation to agent `name`, described with what it is for. */
function handoffSpec(name: string, description: string | undefined): FunctionToolSpec {
  return {
    type: 'function',
    function: {
      name: `${HANDOFF_TOOL_PREFIX}${name}`,
      description: `Hand off to the ${name} agent to handle the request.${description ? ` ${description}` : ''}`,
      parameters: { type: 'object', properties: {}, additionalProperties: false },
    },
  };
}

function toolNames(agent: AgentDefinition): string[] {
  return (agent.tools ?? []).map((t) => (typeof t === 'string' ? t : t.name));
}
