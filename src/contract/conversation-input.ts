/**
 * What a conversation is started with: {@link ConversationInput} and the
 * settings it is made of (model, timeouts, budget, typed output, local
 * activities), and who called a conversation started for an agent called as
 * a tool. Their defaults and limits are in `limits.ts`; what is wrong with an
 * input, in `conversation-input-checks.ts`. Types only; workflow-safe.
 */
import type { CarriedConversation } from './carried-conversation';
import type { ConversationSearchAttributes } from './search-attribute-names';
import type { ModelApi } from './model-api';

/** What a conversation is started with. Every field has a default. */
export interface ConversationInput {
  /** The system prompt, stored as message 0. */
  systemPrompt?: string;
  /**
   * The agent that answers first: the name of one of the worker's agents
   * (the plugin's `agents`, or the tools module's `agents` export; see
   * docs/agents.md). Its instructions, model settings and tools apply to each
   * model call, in place of `systemPrompt` and `tools` (its model settings
   * over `model`; its MCP tools, named `server__tool`, come from the servers
   * `mcpServers` lists), until it hands off to another agent. Unset: the
   * worker's default agent, else one unnamed agent made of this input.
   */
  agent?: string;
  /** Handoffs one turn may make; a transfer past it is refused (the agent keeps the turn). Default 5. */
  maxHandoffsPerTurn?: number;
  /**
   * How deep agents called as tools may nest: 1 lets this conversation's
   * agents call agents as tools, whose own agent tools are then refused.
   * Default 3; the conversations it starts inherit it.
   */
  maxAgentDepth?: number;
  /**
   * Set by the workflow on a conversation it starts for an agent called as a
   * tool (a child workflow): who called it and with what task. Such a
   * conversation answers its task in one turn, ends, and returns the answer.
   */
  calledBy?: AgentCaller;
  model?: ModelSettings;
  /** Names of the tools the model may call; every tool the worker has when unset. */
  tools?: string[];
  /**
   * Names of the worker's MCP servers whose tools the model may call, beside
   * `tools` (as `server__tool`). Their lists are read at the start of each
   * turn: a server's change shows at the next turn, never in the middle of
   * one. Every worker of the task queue must have these servers.
   */
  mcpServers?: string[];
  /**
   * Model calls with tools allowed in one turn. When reached, one last call is
   * made with `tool_choice: "none"` so the user still gets an answer. Default 10.
   */
  maxSteps?: number;
  timeouts?: ConversationTimeouts;
  /** How long tool calls wait for a person's decision before they settle as `approval_timeout`. Default 7 days. */
  approvalTimeoutMs?: number;
  /**
   * A user message that arrives during a turn: `interrupt` (default) stops the
   * turn (finished results kept, the rest settled) and answers the new message;
   * `queue` lets the turn finish first. Messages are never lost or reordered.
   */
  onNewMessage?: 'interrupt' | 'queue';
  /**
   * Calls run as local activities, inside the workflow task that asks for
   * them, instead of ordinary activities (the default): one round trip to the
   * server fewer per call, so a step takes about half the time and the server
   * less than half the work (see the README's Performance section).
   * `modelCalls`: every model call. `idempotentTools`: calls of tools
   * declared `idempotent: true` (a call cut off by a crash is run again,
   * which such a tool allows; other tools stay ordinary activities).
   *
   * The price: while a local call runs, its workflow task stays open, so
   * signals (a decision, a new message, a cancel), queries' fresh answers and
   * the task's own commands (search attributes) wait for the call to end or
   * for the task's heartbeat at 80% of the workflow task timeout (4 s, as
   * `AgentClient` starts conversations with a 5 s timeout); a worker that
   * dies mid-call is noticed at that timeout rather than the heartbeat
   * timeout. Choose it for fast models and tool chains; keep the default
   * where people interrupt long answers.
   */
  localActivities?: LocalActivityChoice;
  /**
   * Continue as new (a fresh history, same conversation) between turns once
   * a run's history has this many events, or when the server suggests it.
   * Default 2000.
   */
  continueAsNewAfterEvents?: number;
  /**
   * Limits on what a turn and the whole conversation may spend, the agents
   * it calls as tools included (they draw on the same budget). Checked
   * before each model call, with the call's prompt (and `maxTokens`) counted:
   * a call that would pass a limit is not made, the turn ends as
   * `budget_exceeded` with every call answered (the transcript stays valid),
   * and a later turn of a spent conversation ends the same way.
   */
  budget?: ConversationBudget;
  /**
   * A typed final answer: the model is asked for JSON matching this schema
   * (the provider's structured output), the answer is checked when it
   * arrives, and a mismatch is said to the model and asked again within
   * `retries`. The turn's record then carries the value (`TurnRecord.output`),
   * or ends as `invalid_output`. An agent's own `outputType` applies to its
   * answers instead. See docs/typed-output.md.
   */
  output?: OutputSpec;
  /**
   * The search attributes the conversation sets, each under the name the
   * namespace registered; one left out is not set. Absent: all seven under
   * their own names (`AgentStatus`, ...), as conversations begun before this
   * field had. `AgentClient` fills it in from the namespace's attributes
   * (see docs/search-attributes.md); it carries across continue-as-new.
   */
  searchAttributes?: ConversationSearchAttributes;
  /** Set by the workflow itself when it continues as new: the state it carries over. */
  carried?: CarriedConversation;
  /**
   * Set by `AgentClient.fork` on a conversation it starts as a fork: the
   * conversation and seq its transcript was copied from (docs/operating.md,
   * "Fork"). Only data: shown in the state, kept across continue-as-new.
   */
  forkedFrom?: ForkOrigin;
  /**
   * Set on a conversation a schedule starts (each run of a schedule is a conversation of its own,
   * docs/schedules.md): its first run takes `text` as its one message, sent by `schedule:<scheduleId>`, answers it
   * in one turn (messages sent meanwhile are answered too), and ends. Calls of its turn need approval as a person's
   * would, and the schedule, not a person, is their requester.
   */
  scheduled?: ScheduledRun;
}

/** What a schedule starts a conversation with (see {@link ConversationInput.scheduled}). */
export interface ScheduledRun {
  /** The Temporal Schedule's id. */
  scheduleId: string;
  /** The message of its one turn. */
  text: string;
}

/** Who a scheduled conversation's message is from: `schedule:<scheduleId>`. */
export function scheduleSender(scheduleId: string): string {
  return `schedule:${scheduleId}`;
}

/** Where a forked conversation came from (see {@link ConversationInput.forkedFrom}). */
export interface ForkOrigin {
  /** The conversation whose transcript was copied. */
  conversationId: string;
  /** The last seq of the source's transcript that the fork copied (the fork point). */
  seq: number;
}

/** Model parameters sent with every model call of a conversation. */
export interface ModelSettings {
  /** Model name; the worker's `OPENAI_MODEL` when unset. */
  model?: string;
  temperature?: number;
  maxTokens?: number;
  /** Stream the response (text reaches clients as the model speaks). Default true. */
  stream?: boolean;
  /** Attempts that stream before a retry falls back to a non-streaming request. Default 2. */
  streamFallbackAfterAttempts?: number;
  /** A stream that sends nothing for this long is abandoned and retried. Default 60 s. */
  streamIdleMs?: number;
  /**
   * The model's context window in tokens, which every request is fitted to.
   * Default: the worker's `OPENAI_CONTEXT_WINDOW`, else known per model name, else 128000.
   */
  contextWindow?: number;
  /**
   * What a model call does when earlier turns no longer fit the context window: `'elide'` leaves them out with a
   * note (the default); `'summarize'` sends a summary of them, written by the model and stored (docs/summaries.md).
   */
  contextOverflow?: ContextOverflow;
  /** The API model calls speak: `'chat'` (Chat Completions) or `'responses'`. Default: the worker's, else `'chat'`. */
  api?: ModelApi;
}

/** See {@link ModelSettings.contextOverflow}. */
export type ContextOverflow = 'elide' | 'summarize';

/** Limits on the activities the conversation schedules. */
export interface ConversationTimeouts {
  /** Start-to-close timeout of one model call attempt. Default 5 minutes. */
  modelCallMs?: number;
  /** Attempts of a model call before the turn fails. Default 5. */
  modelCallAttempts?: number;
  /**
   * A model call or tool whose worker stops heartbeating for this long is
   * retried elsewhere: how fast a crashed worker is noticed. Default 10 s.
   */
  heartbeatMs?: number;
}

/** See {@link ConversationInput.budget}. Every limit is optional; tokens are prompt and completion tokens together. */
export interface ConversationBudget {
  turnTokens?: number;
  conversationTokens?: number;
  /** US dollars; needs a price for the model (`AGENT_MODEL_PRICES`, the plugin's `model.prices`). */
  turnCostUsd?: number;
  conversationCostUsd?: number;
}

/** Which calls of a conversation run as local activities (see {@link ConversationInput.localActivities}). */
export interface LocalActivityChoice {
  modelCalls?: boolean;
  idempotentTools?: boolean;
}

/** A typed final answer, as {@link ConversationInput.output} declares it. */
export interface OutputSpec {
  /**
   * A JSON Schema (2020-12, or draft-07 when its `$schema` says so) of an
   * object (`"type": "object"` at its root, as structured outputs require)
   * the final answer must match, at most {@link OUTPUT_SCHEMA_MAX_BYTES}.
   * Sent as `strict` structured output when it is in the providers' strict
   * subset (every object lists all its properties in `required` and sets
   * `additionalProperties: false`, with no keyword strict mode refuses);
   * checked by the worker either way.
   */
  schema: Record<string, unknown>;
  /** Its name in the request (`response_format.json_schema.name`), 1-64 of `a-zA-Z0-9_-`. Default `output`. */
  name?: string;
  /** How many times a mismatched answer is asked for again in one turn. Default 2, at most 10. */
  retries?: number;
}

/** Who called the agent of a child conversation as a tool (see {@link ConversationInput.calledBy}). */
export interface AgentCaller {
  /** The conversation whose tool call started this one. */
  conversationId: string;
  /** The top-level conversation (a person's), the same as `conversationId` one level down. */
  rootConversationId: string;
  /** The effect key of the calling tool call. */
  callKey: string;
  /** The calling tool call's name, e.g. `audit_order`. */
  toolName: string;
  /** The agents from the top-level conversation's down to this one, e.g. `["triage", "refunds", "auditor"]`. */
  path: string[];
  /** Who sent the top-level turn's messages: four eyes refuses them as deciders here too. */
  requestedBy: string[];
  /** The task: the `input` the calling model gave, this conversation's one user message. */
  task: string;
  /** The agent that called (absent: the worker's default agent), whose agent tool may extract the result. */
  callerAgent?: string;
  /**
   * The top-level conversation's turn this call is part of: the turn's budget covers what every agent spends in it.
   * Absent in children started before budgets covered agents.
   */
  rootTurn?: number;
}
