/**
 * The options of the worker the activities read, declared once here with
 * their defaults: `DurableAgentPluginOptions` (src/worker/plugin-options.ts)
 * extends them with the worker's own, and the activities' dependencies
 * (`deps.ts`) pick from them.
 */
import type OpenAI from 'openai';
import type { DecisionTrust } from '../common/decision-signing';
import type { ModelPrices } from '../core/pricing';
import type { ModelApi } from '../contract/model-api';
import type { Tool } from '../tools/tool';
import type { Agent } from '../tools/agents';
import type { Guardrail } from '../tools/guardrails';
import type { ApprovalPolicy } from '../policies/approval-policy';

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
  /**
   * Context window of the models used, in tokens, when a conversation does not say. Default: known per model name, else
   * 128000.
   */
  contextWindow?: number;
  /**
   * The API model calls speak when a conversation or agent does not choose (`ModelSettings.api`): `'chat'` (Chat
   * Completions) or `'responses'` (the Responses API, with `store: false`; docs/model-apis.md). Default `'chat'`.
   */
  api?: ModelApi;
  /**
   * Prices by model name in US dollars per million tokens, e.g.
   * `{ 'gpt-4.1': { input: 2, output: 8 } }`: turns and conversations then
   * report their cost, and cost budgets apply. Default: no prices.
   */
  prices?: ModelPrices;
}

/** The options of `DurableAgentPlugin` the activities read. */
export interface ActivityOptions {
  /** The tools the model may call, made with `tool({...})`. */
  tools: readonly Tool[];
  /**
   * The agents conversations may be with, made with `agent({...})` (see
   * docs/agents.md); the tools they carry are the worker's too. A
   * conversation names the one it starts with (`input.agent`). Default none.
   */
  agents?: readonly Agent[];
  /**
   * The agent of conversations that name none (`input.agent` unset): one of
   * `agents`. Default none: such a conversation is one unnamed agent made of
   * its input (`systemPrompt`, `tools`, `mcpServers`).
   */
  defaultAgent?: string;
  /** The model the conversations call. */
  model: DurableAgentModelOptions;
  /**
   * PostgreSQL schema of the project's tables (a plain lowercase SQL
   * identifier, not `public`); every query names it, so a pool shared with
   * your own queries is fine. Default `durable_agent`.
   */
  schema?: string;
  /**
   * Tool results and answers longer than this many characters travel through workflow history as a preview only.
   * Default 4096.
   */
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
   * Guardrails of every conversation, made with `guardrail({...})`: `input`
   * (the turn's user messages, before the first model call), `output` (a
   * final answer, before anyone sees it) and `tool` (each call's arguments,
   * before it runs). Agents and tools add their own (docs/guardrails.md). Default none.
   */
  guardrails?: readonly Guardrail[];
  /**
   * Who decides each tool call: rules made with `approvalPolicy([...])` that ask a person (of some groups, N of
   * them), allow or deny a call without asking; the first that matches decides, a call none matches keeps its tool's
   * `needsApproval` (docs/approval-policies.md). Default none.
   */
  approvalPolicy?: ApprovalPolicy;
}
