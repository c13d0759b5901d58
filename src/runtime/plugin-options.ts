/**
 * The plugin's options, each declared once with its default: the plugin
 * takes them, the standalone worker (`createAgentWorker`) passes them
 * through, and the activities pick the ones they read
 * (`src/activities/deps.ts`).
 */
import type { PayloadCodec } from '@temporalio/common';
import type OpenAI from 'openai';
import type { Pool } from 'pg';
import type { DecisionTrust } from '../activities/decision-signing';
import type { ModelPrices } from '../core/pricing';
import type { McpServers } from '../mcp/protocol';
import type { Tool } from '../tools/tool';
import type { LostWorkerOptions } from './lost-workers';
import type { SearchAttributeOptions } from './search-attributes';

/** The model the conversations call: a client of yours, or the endpoint and key for one built here. */
export interface DurableAgentModelOptions {
  /** Model used when a conversation names none, e.g. `gpt-4.1`. */
  name: string;
  /** An OpenAI SDK client of your own. Turn its retries off (`maxRetries: 0`): Temporal retries model calls. */
  client?: OpenAI;
  /** API key for a client built here (when `client` is unset). */
  apiKey?: string;
  /** Base URL of an OpenAI-compatible endpoint for a client built here; the SDK's default when unset. */
  baseUrl?: string;
  /** Context window of the models used, in tokens, when a conversation does not say. Default: known per model name, else 128000. */
  contextWindow?: number;
  /**
   * Prices by model name in US dollars per million tokens, e.g.
   * `{ 'gpt-4.1': { input: 2, output: 8 } }`: turns and conversations then
   * report their cost, and cost budgets apply. Default: no prices.
   */
  prices?: ModelPrices;
}

/** Options of `DurableAgentPlugin`; every option is in docs/configuration.md. */
export interface DurableAgentPluginOptions {
  /** The tools the model may call, made with `tool({...})`. */
  tools: readonly Tool[];
  /** The model the conversations call. */
  model: DurableAgentModelOptions;
  /**
   * PostgreSQL with the transcripts: a pool of yours (left open when the
   * worker stops), or a URL the plugin opens a pool on (closed when the worker stops).
   */
  database: { pool: Pool } | { url: string };
  /**
   * PostgreSQL schema of the project's tables (a plain lowercase SQL
   * identifier, not `public`); every query names it, so a pool shared with
   * your own queries is fine. Default `durable_agent`.
   */
  schema?: string;
  /** Apply the project's migrations before the worker polls. Default true. */
  migrate?: boolean;
  /**
   * How long a starting worker waits for PostgreSQL to be reachable before
   * it migrates (a database restarting delays the start rather than failing
   * it), in ms. Default 60 000.
   */
  databaseWaitMs?: number;
  /** Register the conversation's search attributes where missing before the worker polls. Default true. */
  registerSearchAttributes?: boolean;
  /**
   * Which search attribute groups to register and under which names: by
   * default each group that fits in the namespace (status, approvals,
   * unknownEffects, usage, in that order), the others left off and logged;
   * `groups` asks for exactly those (one that does not fit fails the start),
   * `prefix` puts a prefix before every name (clients need the same prefix).
   * See docs/search-attributes.md.
   */
  searchAttributes?: SearchAttributeOptions;
  /**
   * Payload codecs (encryption, compression) applied after the team's own
   * ones: `dataConverter.payloadCodecs` of the worker and the client become
   * the team's codecs followed by these, and the rest of the team's data
   * converter is kept. Default none.
   */
  payloadCodecs?: PayloadCodec[];
  /** Tool results and answers longer than this many characters travel through workflow history as a preview only. Default 4096. */
  inlineResultLimit?: number;
  /**
   * Tool calls of one model response that run; the calls after them are
   * answered with a `tool_failed` message (reason `too_many_calls`) the
   * model reads. Default 16.
   */
  maxParallelToolCalls?: number;
  /**
   * Keys that authenticate decisions signed by the HTTP API (the same keys the
   * API signs with), and whether unsigned decisions are refused (default: yes
   * when keys are given). Default none: every decision applies and is recorded
   * as unauthenticated, so anyone who can signal the workflow can decide.
   */
  decisionTrust?: DecisionTrust;
  /**
   * MCP servers whose tools conversations may use (`ConversationInput.mcpServers`),
   * by name: `{ crm: { command: 'node', args: ['crm-mcp.js'] }, tickets: { url: 'https://…/mcp', headers: {…} } }`,
   * and how long a server's tool list is kept (`listTtlMs`, default 60 s).
   * Every worker of the task queue must have the same servers. Default none.
   * See docs/tools-and-mcp.md.
   */
  mcp?: { servers: McpServers; listTtlMs?: number };
  /**
   * Lost-worker takeover: peers notice a worker killed outright within about
   * a second (its PostgreSQL session ends) and have its model calls and tools
   * retried at once instead of at their heartbeat timeouts. On by default;
   * `{ enabled: false }` leaves a killed worker's attempts to the timeouts.
   * See docs/operating.md, "When a worker dies".
   */
  lostWorkers?: LostWorkerOptions;
}
