/**
 * From the standalone worker's configuration to the options of
 * `DurableAgentPlugin`: the one place where a setting of `npm start` becomes
 * a plugin option (`OPENAI_MODEL`, read as `openai.model`, is the plugin's
 * `model.name` here and nowhere else).
 */
import type { Pool } from 'pg';
import { createOpenAIClient } from '../activities/openai-client';
import type { DecisionTrust } from '../common/decision-signing';
import type { Agent } from '../tools/agents';
import type { Guardrail } from '../tools/guardrails';
import type { Tool } from '../tools/tool';
import type { DurableAgentPluginOptions } from '../worker/plugin-options';
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
  /** The decision keys the API signs with, settled with the API's security. */
  decisionTrust: DecisionTrust;
}

/**
 * The plugin options the standalone worker runs with: the model the services
 * found (with the configured context window and prices), the tools module's
 * tools and agents, and each setting the plugin reads (`AGENT_DEFAULT_AGENT`,
 * `AGENT_MAX_PARALLEL_TOOL_CALLS`, `AGENT_DATABASE_SCHEMA`, `AGENT_MCP_SERVERS`,
 * lost-worker takeover, search attributes). The worker's own options (cache
 * size, data converter, bundle) are not the plugin's and stay with the caller.
 *
 * @throws ConfigError when AGENT_DEFAULT_AGENT names none of the agents.
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
    ...defaultAgentOf(config, started.agents),
    maxParallelToolCalls: config.maxParallelToolCalls,
    schema: config.databaseSchema,
    decisionTrust: started.decisionTrust,
    mcp: config.mcpServers ? { servers: config.mcpServers } : undefined,
    lostWorkers: config.lostWorkers,
    searchAttributes: config.searchAttributes,
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
