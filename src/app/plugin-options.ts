/**
 * From the standalone worker's configuration to the options of
 * `DurableAgentPlugin`: the one place where a setting of `npm start` becomes
 * a plugin option (`OPENAI_MODEL`, read as `openai.model`, is the plugin's
 * `model.name` here and nowhere else).
 */
import type { Pool } from 'pg';
import { createOpenAIClient } from '../activities/openai-client';
import type { DecisionTrust } from '../common/decision-signing';
import { toolsOfAgents, type Agent } from '../tools/agents';
import type { Guardrail } from '../tools/guardrails';
import type { Tool } from '../tools/tool';
import type { ApprovalPolicy } from '../policies/approval-policy';
import { MCP_NAME_SEPARATOR } from '../mcp/protocol';
import type { DurableAgentPluginOptions } from '../worker/plugin-options';
import type { NotificationOptions } from '../notifications/options';
import { ConfigError, type WorkerConfig } from './config';
import type { RunningServices } from './services';

/** What `npm start` has made by the time it creates the worker, besides its configuration. */
export interface StartedWorkerParts {
  /** The pool on the database the services found or started (left open by the plugin). */
  pool: Pool;
  /** The model the services found: the configured provider, or the offline demo model when no key is set. */
  model: Pick<RunningServices['model'], 'name' | 'apiKey' | 'baseUrl'>;
  /** The tools, agents and guardrails of AGENT_TOOLS_MODULE, else the demo's. */
  tools: readonly Tool[];
  agents: readonly Agent[];
  guardrails: readonly Guardrail[];
  /** The approval policy of AGENT_TOOLS_MODULE (its `policy` export), when it has one. */
  approvalPolicy?: ApprovalPolicy;
  /** The approval policy of AGENT_APPROVAL_POLICY_FILE or AGENT_APPROVAL_POLICY, read before anything started. */
  configuredPolicy?: ApprovalPolicy;
  /** The decision keys the API signs with, settled with the API's security. */
  decisionTrust: DecisionTrust;
  /** The webhooks of AGENT_WEBHOOKS_FILE, or AGENT_WEBHOOK_URL and AGENT_WEBHOOK_SECRET, read before anything started. */
  notifications?: NotificationOptions;
}

/**
 * The plugin options the standalone worker runs with: the model the services
 * found (with the configured context window and prices), the tools module's
 * tools and agents, and each setting the plugin reads (`AGENT_DEFAULT_AGENT`,
 * `AGENT_MAX_PARALLEL_TOOL_CALLS`, `AGENT_DATABASE_SCHEMA`, `AGENT_MCP_SERVERS`,
 * lost-worker takeover, search attributes, the approval policy, the webhooks). The worker's
 * own options (cache size, data converter, bundle) are not the plugin's and
 * stay with the caller.
 *
 * @throws ConfigError when AGENT_DEFAULT_AGENT names none of the agents, when both the tools module and the variables
 * give an approval policy, or when a rule names a tool or agent the worker does not have.
 */
export function pluginOptionsFrom(config: WorkerConfig, started: StartedWorkerParts): DurableAgentPluginOptions {
  return {
    database: { pool: started.pool },
    model: {
      name: started.model.name,
      client: createOpenAIClient({ apiKey: started.model.apiKey, baseUrl: started.model.baseUrl }),
      contextWindow: config.openai.contextWindow,
      ...(config.openai.api ? { api: config.openai.api } : {}),
      prices: config.openai.prices,
    },
    tools: started.tools,
    agents: started.agents,
    guardrails: started.guardrails,
    ...approvalPolicyOf(config, started),
    ...defaultAgentOf(config, started.agents),
    maxParallelToolCalls: config.maxParallelToolCalls,
    schema: config.databaseSchema,
    decisionTrust: started.decisionTrust,
    mcp: config.mcpServers ? { servers: config.mcpServers } : undefined,
    lostWorkers: config.lostWorkers,
    searchAttributes: config.searchAttributes,
    ...(started.notifications ? { notifications: started.notifications } : {}),
  };
}

/** The agent of conversations that name none: AGENT_DEFAULT_AGENT (`none`: one unnamed agent), else the first agent. */
function defaultAgentOf(config: WorkerConfig, agents: readonly Agent[]): { defaultAgent?: string } {
  const chosen = config.defaultAgent ?? agents[0]?.name;
  if (chosen === undefined || chosen === 'none') return {};
  if (!agents.some((a) => a.name === chosen)) {
    throw new ConfigError(
      `AGENT_DEFAULT_AGENT=${chosen}: no such agent (the agents: ${agents.map((a) => a.name).join(', ') || 'none'}). Name one of them, or "none".`,
    );
  }
  return { defaultAgent: chosen };
}

/**
 * The one approval policy of the worker: the tools module's or the variables', never both. Its rules may name only
 * the worker's tools (its own, its agents', its agents called as tools, `server__tool` of its MCP servers) and agents:
 * a misspelt name would make a rule match nothing, and a call it was written to stop would run.
 */
function approvalPolicyOf(config: WorkerConfig, started: StartedWorkerParts): { approvalPolicy?: ApprovalPolicy } {
  const fromVariables = config.approvalPolicy.file
    ? `AGENT_APPROVAL_POLICY_FILE=${config.approvalPolicy.file}`
    : 'AGENT_APPROVAL_POLICY';
  if (started.approvalPolicy && started.configuredPolicy) {
    throw new ConfigError(
      `AGENT_TOOLS_MODULE=${config.toolsModule} exports an approval policy ("policy"), and ${fromVariables} gives another: ` +
        'a worker has one. Unset the variable, or drop the export.',
    );
  }
  const policy = started.approvalPolicy ?? started.configuredPolicy;
  if (!policy) return {};
  const origin = started.approvalPolicy ? `AGENT_TOOLS_MODULE=${config.toolsModule} (its "policy")` : fromVariables;
  const tools = new Set([
    ...started.tools.map((t) => t.name),
    ...toolsOfAgents(started.agents).map((t) => t.name),
    ...started.agents.flatMap((a) =>
      (a.tools ?? []).flatMap((t) => (typeof t === 'string' ? [t] : t.kind === 'agent_tool' ? [t.toolName] : [])),
    ),
  ]);
  const mcpServers = Object.keys(config.mcpServers ?? {});
  const agents = started.agents.map((a) => a.name);
  for (const rule of policy.rules) {
    const unknownTool = rule.tools?.find(
      (name) => !tools.has(name) && !mcpServers.some((server) => name.startsWith(`${server}${MCP_NAME_SEPARATOR}`)),
    );
    if (unknownTool !== undefined) {
      throw new ConfigError(
        `${origin}: approval policy rule "${rule.name}" names tool "${unknownTool}", which this worker does not have ` +
          `(its tools: ${[...tools].sort().join(', ') || 'none'}${mcpServers.length > 0 ? `, and ${mcpServers.map((m) => `${m}${MCP_NAME_SEPARATOR}…`).join(', ')}` : ''}). ` +
          'Name one of them: a rule naming no tool of the worker would match no call.',
      );
    }
    const unknownAgent = rule.agents?.find((name) => !agents.includes(name));
    if (unknownAgent !== undefined) {
      throw new ConfigError(
        `${origin}: approval policy rule "${rule.name}" names agent "${unknownAgent}", which this worker does not have ` +
          `(its agents: ${agents.join(', ') || 'none'}). Name one of them: a rule naming no agent of the worker would match no call.`,
      );
    }
  }
  return { approvalPolicy: policy };
}
