/**
 * What a model call offers the model: the tool specs it sends, the names of
 * the tools the answer may call, and the current agent's handoffs and agents
 * as tools.
 */
import type { ModelCallInput } from '../../contract/activities';
import { parseMcpToolName } from '../../mcp/protocol';
import type { Agent, AgentRegistry, AgentTool } from '../../tools/agents';
import type { FunctionToolSpec, ToolRegistry } from '../../tools/registry';
import { findHandoff, type ResolvedHandoff } from '../../tools/handoff';

/**
 * What a model call offers: tool specs, the names of the tools it may call (undefined: all), and the current agent's
 * handoffs.
 */
export interface ToolOffer {
  specs: FunctionToolSpec[];
  allowed: string[] | undefined;
  /** The handoff a call of `toolName` makes (by its name, or the name older workers gave it), when offered. */
  handoff(toolName: string): ResolvedHandoff | undefined;
  agentTool(toolName: string): AgentTool | undefined;
}

/**
 * The current agent's tools and handoffs, or, for a conversation of one
 * unnamed agent, its choice of the worker's tools and the turn's MCP tools.
 */
export function toolOffer(
  registry: ToolRegistry,
  agents: AgentRegistry | undefined,
  speaker: Agent | undefined,
  input: ModelCallInput,
  handoffs: readonly ResolvedHandoff[] = speaker && agents ? agents.handoffsOf(speaker) : [],
): ToolOffer {
  if (!speaker || !agents) {
    const allowed = offeredNames(registry, input);
    return { specs: registry.specsFor(allowed), allowed, handoff: () => undefined, agentTool: () => undefined };
  }
  const allowed = agents.toolNames(speaker);
  return {
    specs: [...registry.specsFor(allowed), ...agents.agentToolSpecs(speaker), ...handoffs.map((h) => h.spec)],
    allowed,
    handoff: (toolName) => findHandoff(handoffs, toolName),
    agentTool: (toolName) => agents.agentTool(speaker, toolName),
  };
}

/** The names of the tools a call may use (undefined: all of the worker's). */
function offeredNames(registry: ToolRegistry, input: ModelCallInput): string[] | undefined {
  if (!input.toolset || !input.tools) return input.tools;
  return [...input.tools, ...registry.names().filter((name) => parseMcpToolName(name))];
}
