/** Loading the worker's tools from a module named in the configuration. */
import path from 'node:path';
import { ConfigError } from '../common/errors';
import type { Tool } from '../tools/tool';
import type { Agent } from '../tools/agents';
import type { Guardrail } from '../tools/guardrails';
import type { ApprovalPolicy } from '../policies/approval-policy';

/**
 * Loads the tools exported by `modulePath` (as `tools`, or as the default
 * export): an array of values made with `tool(...)`; and its agents, when it
 * exports `agents` (values made with `agent(...)`; the first is where
 * conversations started through the API begin, unless they name another);
 * and the guardrails of every conversation, when it exports `guardrails`
 * (values made with `guardrail(...)`); and its approval policy, when it
 * exports `policy` (made with `approvalPolicy([...])`: a policy in code,
 * whose rules may have `when`; named so it does not clash with the import).
 */
export async function loadToolsModule(
  modulePath: string,
): Promise<{ tools: Tool[]; agents: Agent[]; guardrails: Guardrail[]; approvalPolicy?: ApprovalPolicy }> {
  const resolved = path.resolve(modulePath);
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(resolved)) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(`AGENT_TOOLS_MODULE=${modulePath}: cannot load ${resolved} (${(err as Error).message}).`);
  }
  const nested = loaded.default as Record<string, unknown> | undefined;
  const tools = loaded.tools ?? nested?.tools ?? loaded.default;
  if (!Array.isArray(tools) || tools.some((t) => (t as Partial<Tool>)?.kind !== 'tool')) {
    throw new ConfigError(
      `AGENT_TOOLS_MODULE=${modulePath}: export an array of tools made with tool({...}), as "export const tools = [...]".`,
    );
  }
  const agents = loaded.agents ?? nested?.agents ?? [];
  if (!Array.isArray(agents) || agents.some((a) => (a as Partial<Agent>)?.kind !== 'agent')) {
    throw new ConfigError(
      `AGENT_TOOLS_MODULE=${modulePath}: its "agents" export must be an array of agents made with agent({...}).`,
    );
  }
  const guardrails = loaded.guardrails ?? nested?.guardrails ?? [];
  if (!Array.isArray(guardrails) || guardrails.some((g) => (g as Partial<Guardrail>)?.kind !== 'guardrail')) {
    throw new ConfigError(
      `AGENT_TOOLS_MODULE=${modulePath}: its "guardrails" export must be an array of guardrails made with guardrail({...}).`,
    );
  }
  const policy = loaded.policy ?? nested?.policy;
  if (policy !== undefined && (policy as Partial<ApprovalPolicy>)?.kind !== 'approval-policy') {
    throw new ConfigError(
      `AGENT_TOOLS_MODULE=${modulePath}: its "policy" export must be an approval policy made with approvalPolicy([...]).`,
    );
  }
  return {
    tools: tools as Tool[],
    agents: agents as Agent[],
    guardrails: guardrails as Guardrail[],
    ...(policy !== undefined ? { approvalPolicy: policy as ApprovalPolicy } : {}),
  };
}
