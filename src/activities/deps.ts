/**
 * What the activities are built from: the options they read, picked from
 * `ActivityOptions` (declared once in `options.ts`, with their defaults),
 * and the handles the plugin builds from the others.
 */
import type { Pool } from 'pg';
import type { ActivityOptions, DurableAgentModelOptions } from './options';
import type { ToolRegistry } from '../tools/registry';
import type { AgentRegistry } from '../tools/agents';
import type { McpToolsets } from './mcp-tools';

/** What the activities need. */
export interface ActivityDeps extends Pick<
  ActivityOptions,
  | 'schema'
  | 'inlineResultLimit'
  | 'maxParallelToolCalls'
  | 'decisionTrust'
  | 'defaultAgent'
  | 'guardrails'
  | 'approvalPolicy'
> {
  /**
   * The model options the activities read, with the client: `model.client`, or one built on `model.apiKey` and
   * `model.baseUrl`.
   */
  model: Pick<DurableAgentModelOptions, 'name' | 'contextWindow' | 'prices' | 'api'> &
    Required<Pick<DurableAgentModelOptions, 'client'>>;
  /** The pool of `database`: its `pool`, or one opened on its `url`. */
  pool: Pool;
  /** The registry of `tools`. */
  tools: ToolRegistry;
  /** The tools of the `mcp` servers; unset when the worker has none. */
  mcp?: McpToolsets;
  /** The registry of `agents`; unset when the worker has none. */
  agents?: AgentRegistry;
}

/** What the model activity needs. */
export type ModelActivityDeps = Pick<
  ActivityDeps,
  | 'model'
  | 'pool'
  | 'tools'
  | 'mcp'
  | 'agents'
  | 'defaultAgent'
  | 'schema'
  | 'inlineResultLimit'
  | 'maxParallelToolCalls'
  | 'guardrails'
  | 'approvalPolicy'
>;

/** What the tool activity needs. */
export type ToolActivityDeps = Pick<ActivityDeps, 'pool' | 'tools' | 'mcp' | 'schema' | 'inlineResultLimit'>;

/** What the tool discovery activity needs. */
export type ToolDiscoveryDeps = Pick<ActivityDeps, 'tools' | 'mcp'>;
