/**
 * The conversation's contract, as plain data: its input and defaults, the
 * state it shows, user messages and decisions, and the validators that say
 * what is wrong with each. Pure (no Temporal, no I/O): the core, the workflow
 * and clients import it; `src/workflows/api.ts` re-exports it beside the
 * signals, queries and search attributes.
 */
import type { MessageMeta } from './messages';
import { describeUnstorableFields } from './text';

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
}

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
   * Limits on what a turn and the whole conversation may spend. Checked
   * before each model call: once one is reached, the turn ends as
   * `budget_exceeded` with every call answered (the transcript stays valid),
   * and a later turn of a spent conversation ends the same way at once.
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
}

/**
 * The name of each search attribute a conversation sets (see
 * {@link ConversationInput.searchAttributes}); an attribute left out is not set.
 */
export interface ConversationSearchAttributes {
  /** Keyword, the conversation's status (`AgentStatus`). */
  status?: string;
  /** Int, the calls waiting for a decision (`PendingApprovals`). */
  pendingApprovals?: string;
  /** KeywordList, the waiting calls' `call:`, `tool:` and `requester:` tags (`PendingApprovalTags`). */
  pendingApprovalTags?: string;
  /** Datetime, since when the oldest waiting call waits (`AwaitingApprovalSince`). */
  awaitingApprovalSince?: string;
  /** Int, the calls whose effect is unknown (`UnknownEffects`). */
  unknownEffects?: string;
  /** Int, the conversation's tokens (`AgentTokens`). */
  tokens?: string;
  /** Double, the conversation's cost in US dollars (`AgentCostUsd`). */
  costUsd?: string;
}

/** The fields of {@link ConversationSearchAttributes}, in the order the workflow sets them. */
export const CONVERSATION_SEARCH_ATTRIBUTE_FIELDS = [
  'status',
  'pendingApprovals',
  'unknownEffects',
  'pendingApprovalTags',
  'awaitingApprovalSince',
  'tokens',
  'costUsd',
] as const satisfies readonly (keyof ConversationSearchAttributes)[];

/**
 * What a search attribute name may look like here: a letter or `_`, then
 * letters, digits and `_`, at most 64 characters in all. Temporal accepts
 * more, but such names can be written in a visibility query without quoting.
 */
export const SEARCH_ATTRIBUTE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** Lists what is wrong with {@link ConversationInput.searchAttributes}; empty when it is valid. */
export function describeBadSearchAttributeNames(value: unknown): string[] {
  if (value === undefined) return [];
  const example = '{"status": "AgentStatus", "pendingApprovals": "PendingApprovals"}';
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`searchAttributes must be an object such as ${example}`];
  const problems: string[] = [];
  const seen = new Map<string, string>();
  const known: readonly string[] = CONVERSATION_SEARCH_ATTRIBUTE_FIELDS;
  for (const [field, name] of Object.entries(value)) {
    if (!known.includes(field)) {
      problems.push(`searchAttributes.${field} is not an attribute the conversation sets (known: ${known.join(', ')})`);
    } else if (typeof name !== 'string' || !SEARCH_ATTRIBUTE_NAME_PATTERN.test(name)) {
      problems.push(
        `searchAttributes.${field} must be a search attribute name (a letter or _, then letters, digits or _, at most 64 characters), got ${JSON.stringify(name)}`,
      );
    } else if (seen.has(name)) {
      problems.push(`searchAttributes.${field} and searchAttributes.${seen.get(name)} both name ${name}; each attribute needs a name of its own`);
    } else seen.set(name, field);
  }
  return problems;
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

/**
 * What a conversation carries into its next run when it continues as new,
 * always at an idle point (every call settled, everything stored).
 */
export interface CarriedConversation {
  /** Seq of the next message: messages 0..nextSeq-1 are stored in PostgreSQL and settled. */
  nextSeq: number;
  steps: number;
  transcriptRepairs: number;
  lastError?: string;
  phase: 'idle' | 'failed';
  recentTurns: TurnRecord[];
  /** The most recent user message ids, for deduplication (at most {@link DEDUP_MEMORY}). */
  receivedMessageIds: string[];
  /** The most recent applied decisions, for deduplication (at most {@link DEDUP_MEMORY}). */
  decisions: DecisionResult[];
  /** The most recent refused decision signals (absent in runs started by older versions). */
  refusedDecisions?: RefusedDecision[];
  /** Messages received and not yet answered. */
  inbox: { text: string; messageId: string; sentBy?: string }[];
  /** A cancel that arrived for the queued messages before their turn started. */
  pendingCancel?: string;
  /** Calls settled as `effect_unknown` so far, and the most recent of them (absent in runs started by older versions). */
  unknownEffects?: { count: number; recent: UnknownEffect[] };
  ending: boolean;
  /** Runs so far, this one included. */
  runs: number;
  /** Tokens and cost so far (absent in runs started by older versions: counting starts there). */
  usage?: ConversationUsage;
  /** Turns taken so far (absent in runs started by older versions: numbering starts again there). */
  turns?: number;
  /** The agent that answers now, when it is not the input's `agent` (a handoff moved the conversation). */
  agent?: string;
}

/**
 * What an agent's name may be: 1-52 letters, digits, `_` or `-`, so that its
 * handoff tool `transfer_to_<name>` is a valid function name (at most 64).
 */
export const AGENT_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,52}$/;

/** A typed final answer, as {@link ConversationInput.output} declares it. */
export interface OutputSpec {
  /**
   * A JSON Schema (2020-12, or draft-07 when its `$schema` says so) the final
   * answer must match, at most {@link OUTPUT_SCHEMA_MAX_BYTES}. Sent as
   * `strict` structured output when it is in the providers' strict subset
   * (every object lists all its properties in `required` and sets
   * `additionalProperties: false`); checked by the worker either way.
   */
  schema: Record<string, unknown>;
  /** Its name in the request (`response_format.json_schema.name`), 1-64 of `a-zA-Z0-9_-`. Default `output`. */
  name?: string;
  /** How many times a mismatched answer is asked for again in one turn. Default 2, at most 10. */
  retries?: number;
}

/** The largest {@link OutputSpec.schema}, as JSON text in UTF-8 bytes: it travels with each model call's input. */
export const OUTPUT_SCHEMA_MAX_BYTES = 16 * 1024;

/** Re-asks for a typed output in one turn, unless the spec says otherwise, and the most it may say. */
export const OUTPUT_RETRIES = { default: 2, max: 10 } as const;

/**
 * What a name the model reads may be (providers' rule for function names and
 * `json_schema.name`): a tool's, an agent tool's, a typed output's, a
 * guardrail's.
 */
export const FUNCTION_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/** What is wrong with {@link ConversationInput.output}; empty when it is valid (the worker compiles the schema itself). */
export function describeBadOutputSpec(value: unknown): string[] {
  if (value === undefined) return [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return ['output must be an object like {"schema": {...JSON Schema}}'];
  const o = value as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof o.schema !== 'object' || o.schema === null || Array.isArray(o.schema)) problems.push('output.schema must be a JSON Schema object');
  else {
    const bytes = utf8Bytes(JSON.stringify(o.schema));
    if (bytes > OUTPUT_SCHEMA_MAX_BYTES) {
      problems.push(
        `output.schema is ${bytes} bytes as JSON; it may be at most ${OUTPUT_SCHEMA_MAX_BYTES} (it travels with every model call): describe less, or use $defs for repeated parts`,
      );
    }
  }
  if (o.name !== undefined && !(typeof o.name === 'string' && FUNCTION_NAME_PATTERN.test(o.name))) {
    problems.push(`output.name must be 1-64 letters, digits, "_" or "-", got ${JSON.stringify(o.name)}`);
  }
  if (o.retries !== undefined && !(Number.isInteger(o.retries) && (o.retries as number) >= 0 && (o.retries as number) <= OUTPUT_RETRIES.max)) {
    problems.push(`output.retries must be an integer from 0 to ${OUTPUT_RETRIES.max}, got ${JSON.stringify(o.retries)}`);
  }
  for (const key of Object.keys(o))
    if (!['schema', 'name', 'retries'].includes(key)) problems.push(`output has an unknown field "${key}" (it takes schema, name, retries)`);
  return problems;
}

/** A call of the open batch, as {@link ConversationState.openCalls} shows it. */
export interface OpenCall {
  callKey: string;
  toolCallId: string;
  toolName: string;
  /** Once settled: how (`ok`, `rejected`, `tool_failed`, ...) and the result the model reads (a preview when long). */
  outcome?: { kind: string; content: string };
}

/** A guardrail that stopped a turn: where it ran, its name and its reason. */
export interface GuardrailTrip {
  on: 'input' | 'output';
  guardrail: string;
  reason: string;
}

/** Upper bounds on what a conversation may ask for; larger values are refused before anything starts. */
export const CONVERSATION_LIMITS = {
  /** The largest `maxSteps`: model calls with tools in one turn. */
  maxSteps: 100,
  /** The largest `maxHandoffsPerTurn`. */
  maxHandoffsPerTurn: 100,
  /** The largest `maxAgentDepth`. */
  maxAgentDepth: 10,
} as const;

/**
 * The largest user message, in UTF-8 bytes. A user message travels through
 * Temporal's history (as a signal, then as the input of the activity that
 * stores it), where a payload may not exceed 2 MB; larger documents belong
 * in a file or a table a tool reads.
 */
export const USER_MESSAGE_MAX_BYTES = 256 * 1024;

/**
 * The user messages one turn takes at once, in UTF-8 bytes (at least one
 * message): they are stored by one activity whose input must stay under
 * Temporal's payload limit. Messages beyond it wait for the next turn.
 */
export const TURN_INPUT_MAX_BYTES = 1024 * 1024;

/** Queued user messages a conversation carries through continue-as-new, in UTF-8 bytes; with more it answers them first. */
export const CARRIED_INBOX_MAX_BYTES = 1024 * 1024;

/** The UTF-8 length of `text`, in bytes (workflow-safe: no Buffer, no TextEncoder). */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      bytes += 4; // a surrogate pair: one code point of four bytes
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** Says how much a user message is over {@link USER_MESSAGE_MAX_BYTES}; undefined when it is within. */
export function describeOversizedUserMessage(text: string): string | undefined {
  const bytes = utf8Bytes(text);
  if (bytes <= USER_MESSAGE_MAX_BYTES) return undefined;
  return `the message is ${bytes} bytes; a user message may be at most ${USER_MESSAGE_MAX_BYTES} bytes`;
}

/** How many message ids and decisions a conversation remembers for deduplication across runs. */
export const DEDUP_MEMORY = 500;

/** Defaults applied to a {@link ConversationInput}. */
export const CONVERSATION_DEFAULTS = {
  maxSteps: 10,
  modelCallMs: 5 * 60_000,
  modelCallAttempts: 5,
  heartbeatMs: 10_000,
  continueAsNewAfterEvents: 2000,
  approvalTimeoutMs: 7 * 24 * 60 * 60_000,
  onNewMessage: 'interrupt',
  maxHandoffsPerTurn: 5,
  maxAgentDepth: 3,
} as const;

/**
 * Lists what is wrong with a {@link ConversationInput}; empty when it is valid.
 * Checked by the client before starting, and by the workflow at start.
 * `limits: false` leaves out {@link describeOverLimits} (the workflow applies
 * those only to runs started after they existed).
 */
export function describeInvalidInput(input: unknown, options: { limits?: boolean } = {}): string[] {
  if (input === undefined) return [];
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return ['the input must be an object'];
  const i = input as Record<string, unknown>;
  const problems: string[] = [];
  const positiveInt = (value: unknown, name: string): void => {
    if (value !== undefined && !(Number.isInteger(value) && (value as number) > 0)) {
      problems.push(`${name} must be a positive integer, got ${JSON.stringify(value)}`);
    }
  };
  if (i.systemPrompt !== undefined && typeof i.systemPrompt !== 'string') problems.push('systemPrompt must be a string');
  if (i.tools !== undefined && !(Array.isArray(i.tools) && i.tools.every((t) => typeof t === 'string'))) {
    problems.push('tools must be a list of tool names, e.g. ["find_customer"]');
  }
  if (
    i.mcpServers !== undefined &&
    !(Array.isArray(i.mcpServers) && i.mcpServers.length <= 32 && i.mcpServers.every((s) => typeof s === 'string' && /^[a-zA-Z0-9-]{1,24}$/.test(s)))
  ) {
    problems.push('mcpServers must be a list of at most 32 names of the worker\'s MCP servers (1-24 letters, digits or "-"), e.g. ["crm", "tickets"]');
  }
  positiveInt(i.maxSteps, 'maxSteps');
  positiveInt(i.maxHandoffsPerTurn, 'maxHandoffsPerTurn');
  positiveInt(i.maxAgentDepth, 'maxAgentDepth');
  problems.push(...describeBadCaller(i.calledBy));
  problems.push(...describeBadOutputSpec(i.output));
  if (i.agent !== undefined && !(typeof i.agent === 'string' && AGENT_NAME_PATTERN.test(i.agent))) {
    problems.push(`agent must be the name of one of the worker's agents (1-52 letters, digits, "_" or "-"), got ${JSON.stringify(i.agent)}`);
  }
  if (options.limits !== false) problems.push(...describeOverLimits(input), ...describeUnstorableInput(input));
  positiveInt(i.approvalTimeoutMs, 'approvalTimeoutMs');
  positiveInt(i.continueAsNewAfterEvents, 'continueAsNewAfterEvents');
  if (i.onNewMessage !== undefined && i.onNewMessage !== 'interrupt' && i.onNewMessage !== 'queue') {
    problems.push(`onNewMessage must be "interrupt" or "queue", got ${JSON.stringify(i.onNewMessage)}`);
  }
  if (i.localActivities !== undefined) {
    const local = i.localActivities as Record<string, unknown>;
    const known = ['modelCalls', 'idempotentTools'];
    if (typeof local !== 'object' || local === null || Array.isArray(local)) {
      problems.push('localActivities must be an object such as {"modelCalls": true, "idempotentTools": true}');
    } else {
      for (const [key, value] of Object.entries(local)) {
        if (!known.includes(key)) problems.push(`localActivities.${key} is not an option (known: ${known.join(', ')})`);
        else if (typeof value !== 'boolean') problems.push(`localActivities.${key} must be true or false, got ${JSON.stringify(value)}`);
      }
    }
  }
  const timeouts = (i.timeouts ?? {}) as Record<string, unknown>;
  positiveInt(timeouts.modelCallMs, 'timeouts.modelCallMs');
  positiveInt(timeouts.modelCallAttempts, 'timeouts.modelCallAttempts');
  positiveInt(timeouts.heartbeatMs, 'timeouts.heartbeatMs');
  const model = (i.model ?? {}) as Record<string, unknown>;
  if (model.model !== undefined && (typeof model.model !== 'string' || model.model === '')) {
    problems.push('model.model must be a non-empty model name');
  }
  if (model.temperature !== undefined && typeof model.temperature !== 'number') problems.push('model.temperature must be a number');
  positiveInt(model.maxTokens, 'model.maxTokens');
  if (model.stream !== undefined && typeof model.stream !== 'boolean') problems.push('model.stream must be true or false');
  positiveInt(model.streamFallbackAfterAttempts, 'model.streamFallbackAfterAttempts');
  positiveInt(model.streamIdleMs, 'model.streamIdleMs');
  positiveInt(model.contextWindow, 'model.contextWindow');
  if (i.budget !== undefined) {
    const budget = i.budget as Record<string, unknown>;
    const known = ['turnTokens', 'conversationTokens', 'turnCostUsd', 'conversationCostUsd'];
    if (typeof budget !== 'object' || budget === null || Array.isArray(budget)) {
      problems.push('budget must be an object such as {"turnTokens": 20000, "conversationCostUsd": 5}');
    } else {
      for (const [key, value] of Object.entries(budget)) {
        if (!known.includes(key)) problems.push(`budget.${key} is not a limit (known: ${known.join(', ')})`);
        else if (key.endsWith('Tokens')) positiveInt(value, `budget.${key}`);
        else if (!(typeof value === 'number' && Number.isFinite(value) && value > 0)) {
          problems.push(`budget.${key} must be a positive number of US dollars, got ${JSON.stringify(value)}`);
        }
      }
    }
  }
  problems.push(...describeBadSearchAttributeNames(i.searchAttributes));
  return problems;
}

/** Lists the values of a {@link ConversationInput} above {@link CONVERSATION_LIMITS}. */
export function describeOverLimits(input: unknown): string[] {
  const { maxSteps, maxHandoffsPerTurn, maxAgentDepth } = (input ?? {}) as { maxSteps?: unknown; maxHandoffsPerTurn?: unknown; maxAgentDepth?: unknown };
  const over = (value: unknown, max: number) => typeof value === 'number' && Number.isInteger(value) && value > max;
  return [
    ...(over(maxSteps, CONVERSATION_LIMITS.maxSteps)
      ? [`maxSteps must be at most ${CONVERSATION_LIMITS.maxSteps}, got ${maxSteps} (a turn that needs more steps is better split into several turns)`]
      : []),
    ...(over(maxHandoffsPerTurn, CONVERSATION_LIMITS.maxHandoffsPerTurn)
      ? [`maxHandoffsPerTurn must be at most ${CONVERSATION_LIMITS.maxHandoffsPerTurn}, got ${maxHandoffsPerTurn}`]
      : []),
    ...(over(maxAgentDepth, CONVERSATION_LIMITS.maxAgentDepth)
      ? [`maxAgentDepth must be at most ${CONVERSATION_LIMITS.maxAgentDepth}, got ${maxAgentDepth}`]
      : []),
  ];
}

/** What is wrong with {@link ConversationInput.calledBy} (set by the workflow, never by people). */
function describeBadCaller(value: unknown): string[] {
  if (value === undefined) return [];
  const c = value as Partial<Record<keyof AgentCaller, unknown>>;
  const strings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string');
  const ok =
    typeof value === 'object' &&
    value !== null &&
    [c.conversationId, c.rootConversationId, c.callKey, c.toolName, c.task].every((v) => typeof v === 'string') &&
    strings(c.path) &&
    (c.path as string[]).length > 0 &&
    strings(c.requestedBy);
  return ok ? [] : ['calledBy is set by the workflow for an agent called as a tool; it must not be given by hand'];
}

/**
 * Says which text of a {@link ConversationInput} PostgreSQL could not store
 * (the system prompt is stored as message 0; names travel into records), as a
 * list like {@link describeOverLimits}. See `src/contract/text.ts`.
 */
export function describeUnstorableInput(input: unknown): string[] {
  if (typeof input !== 'object' || input === null) return [];
  const model = (input as { model?: unknown }).model;
  const problem = describeUnstorableFields(input, ['systemPrompt', 'tools']) ?? describeUnstorableFields(model, ['model']);
  return problem ? [problem] : [];
}

/** Says which field of a user message holds a character PostgreSQL cannot store; undefined when none does. */
export function describeUnstorableUserMessage(message: UserMessage): string | undefined {
  return describeUnstorableFields(message, ['text', 'messageId', 'sentBy']);
}

/** Says which field of a decision holds a character PostgreSQL cannot store; undefined when none does. */
export function describeUnstorableDecision(decision: ApprovalDecision): string | undefined {
  return (
    describeUnstorableFields(decision, ['reason', 'decisionId', 'toolCallId', 'callKey', 'decidedBy', 'sentAt', 'signature', 'response']) ??
    (decision.arguments === undefined ? undefined : describeUnstorableFields({ arguments: JSON.stringify(decision.arguments) }, ['arguments']))
  );
}

/** Says whether a cancel's reason holds a character PostgreSQL cannot store (it reaches the tool messages of the calls it stops). */
export function describeUnstorableCancel(request: CancelTurnRequest | undefined): string | undefined {
  return describeUnstorableFields(request, ['reason']);
}

/** A message from the user. */
export interface UserMessage {
  text: string;
  /**
   * Client-chosen id. A message whose id was already received is ignored, so
   * a client may resend safely; also how a client finds the turn that answered it.
   */
  messageId?: string;
  /**
   * Who sent it, as the sender's authentication named them: the HTTP API sets
   * the token's subject. Shown as `requestedBy` of the approvals its turn asks
   * for (four eyes). A message signalled directly (not through the API) names
   * whom its sender chose; see "Trust boundary" in the README.
   */
  sentBy?: string;
}

/** Where the conversation stands. */
export type ConversationStatus = 'idle' | 'running' | 'awaiting_approval' | 'failed' | 'closed';

/**
 * What a person may decide on a call waiting for approval: run it
 * (`approve`), not run it (`reject`), run it with other arguments (`edit`),
 * or answer it in the tool's place without running it (`respond`). Each tool
 * says which it allows (`Tool.decisions`).
 */
export type DecisionKind = 'approve' | 'reject' | 'edit' | 'respond';

/** The decisions a call allows when its tool says nothing: all four, but `respond` only for idempotent tools (a model reads a response as the tool's success). */
export function defaultDecisions(idempotent: boolean | undefined): DecisionKind[] {
  return idempotent === false ? ['approve', 'reject', 'edit'] : ['approve', 'reject', 'edit', 'respond'];
}

/** A person's decision on tool calls awaiting approval. Usable as a signal payload or an update argument. */
export interface ApprovalDecision {
  /** Client-chosen id: a decision is applied at most once per id. */
  decisionId: string;
  decision: DecisionKind;
  /**
   * `edit` only: the arguments the call runs with instead of the model's (a
   * JSON object, checked against the tool's schema before anything runs).
   * Names one call (`toolCallId` or `callKey`).
   */
  arguments?: Record<string, unknown>;
  /** `respond` only: the person's answer, stored as the call's result; the tool does not run. Names one call. */
  response?: string;
  /** The call to decide; every call awaiting approval when unset. */
  toolCallId?: string;
  /**
   * The effect key of the call meant (`callKey` of a pending approval).
   * Providers reuse tool-call ids across responses, so a decision made for
   * an earlier call could otherwise land on a later call with the same id:
   * with `callKey`, a decision whose call is no longer the one waiting under
   * that id is refused. With no `toolCallId`, it names the one call to decide.
   */
  callKey?: string;
  /** Why; sent to the model with a rejection. */
  reason?: string;
  /** Who decided, for the records. */
  decidedBy?: string;
  /**
   * When the person decided (ISO 8601, the sender's clock). A decision counts
   * when it was sent before the call's approval deadline and reaches the
   * conversation while the call still waits, even if no worker ran at the
   * deadline to handle it. `AgentClient` stamps it; when absent, the time the
   * conversation handles the decision is used instead.
   */
  sentAt?: string;
  /**
   * The API's signature over this decision and its conversation
   * (`<keyId>.<HMAC-SHA256, base64url>`, see `src/common/decision-signing.ts`).
   * A worker that holds decision keys checks it before applying the decision:
   * a valid signature makes `decidedBy` authenticated; without one the decision
   * is refused (or, where signatures are not required, recorded as unauthenticated).
   */
  signature?: string;
}

/** What a decision did. */
export interface DecisionResult {
  decisionId: string;
  /** False when this decision id was already applied (nothing changed now). */
  applied: boolean;
  /** The calls the decision settled or released. */
  toolCallIds: string[];
}

/** Asks the current turn to stop, as the "Esc" of an interactive agent. */
export interface CancelTurnRequest {
  reason?: string;
}

/** A tool call waiting for a person, as shown in the state. */
export interface PendingApproval {
  toolCallId: string;
  toolName: string;
  /** The arguments, parsed (or the raw text when they are not JSON). */
  arguments: unknown;
  /** When the model asked for it (ISO 8601). */
  requestedAt: string;
  /** How long it has waited, as of the workflow's current time. */
  ageMs: number;
  /** Effect key of this call instance: the tool's idempotency key, unique even where provider ids repeat. */
  callKey: string;
  /** Who sent the messages of the turn that asked for it (their `sentBy`); empty when none said. */
  requestedBy: string[];
  /** What may be decided on it (its tool's `decisions`). Absent: approve or reject. */
  decisions?: DecisionKind[];
}

/** A call waiting for a person inside an agent called as a tool (at any depth below), as its callers' states show it. */
export interface PendingBelow extends PendingApproval {
  /** The conversation of the agent whose call waits: decide it there. */
  conversationId: string;
  /** The agents from the top-level conversation's down to the one whose call waits. */
  agentPath: string[];
}

/** What an agent called as a tool reports to its caller whenever the calls waiting in it (or below it) change. */
export interface SubAgentWaitingReport {
  /** The effect key of the caller's call that runs the reporting agent. */
  callKey: string;
  /** Every call waiting for a person in it and below it; empty when none waits. */
  waiting: PendingBelow[];
}

/** A call that settled as `effect_unknown`: it started, did not report back, and its tool is not idempotent. */
export interface UnknownEffect {
  toolCallId: string;
  /** Effect key of the call instance. */
  callKey: string;
  toolName: string;
  /** Why it did not report back (timed out, worker lost). */
  why: string;
  /** When it settled (ISO 8601, workflow time). */
  settledAt: string;
}

/**
 * Describes what is wrong with an approval decision payload; undefined when
 * its shape is valid (whether its call is pending is checked separately).
 */
export function describeBadDecision(decision: unknown): string | undefined {
  if (typeof decision !== 'object' || decision === null) {
    return 'expected an object like {"decisionId": "d-1", "decision": "approve", "toolCallId": "call_..."}';
  }
  const d = decision as Record<string, unknown>;
  if (typeof d.decisionId !== 'string' || d.decisionId === '') return '"decisionId" must be a non-empty string';
  if (d.decision !== 'approve' && d.decision !== 'reject' && d.decision !== 'edit' && d.decision !== 'respond') {
    return '"decision" must be "approve", "reject", "edit" or "respond"';
  }
  const oneCall = d.toolCallId !== undefined || d.callKey !== undefined;
  if (d.decision === 'edit') {
    if (typeof d.arguments !== 'object' || d.arguments === null || Array.isArray(d.arguments)) {
      return '"edit" needs "arguments": the JSON object the call runs with instead, e.g. {"order_id": "ord_1001", "amount_cents": 12000}';
    }
    if (!oneCall) return '"edit" decides one call: name it with "toolCallId" or "callKey"';
  } else if (d.arguments !== undefined) return '"arguments" go with an "edit" decision only';
  if (d.decision === 'respond') {
    if (typeof d.response !== 'string' || d.response.trim() === '') return '"respond" needs "response": the text that becomes the call\'s result';
    if (!oneCall) return '"respond" decides one call: name it with "toolCallId" or "callKey"';
  } else if (d.response !== undefined) return '"response" goes with a "respond" decision only';
  if (d.toolCallId !== undefined && (typeof d.toolCallId !== 'string' || d.toolCallId === '')) {
    return '"toolCallId", when given, must be a non-empty string (omit it to decide every pending call)';
  }
  if (d.callKey !== undefined && (typeof d.callKey !== 'string' || d.callKey === '')) {
    return '"callKey", when given, must be a non-empty string (the callKey of a pending approval)';
  }
  if (d.reason !== undefined && typeof d.reason !== 'string') return '"reason", when given, must be a string';
  if (d.decidedBy !== undefined && typeof d.decidedBy !== 'string') return '"decidedBy", when given, must be a string';
  if (d.sentAt !== undefined && (typeof d.sentAt !== 'string' || Number.isNaN(Date.parse(d.sentAt)))) {
    return '"sentAt", when given, must be an ISO 8601 time like "2026-11-22T10:15:00.000Z"';
  }
  if (d.signature !== undefined && typeof d.signature !== 'string') return '"signature", when given, must be a string';
  return undefined;
}

/** The longest text each field of a decision may have, in characters. */
export const DECISION_FIELD_MAX_CHARS = {
  decisionId: 256,
  toolCallId: 256,
  callKey: 512,
  decidedBy: 256,
  reason: 4096,
  signature: 512,
  response: 32_768,
} as const;

/** The largest edited arguments of an `edit` decision, in bytes of JSON: as for the model's own arguments. */
export const EDITED_ARGUMENTS_MAX_BYTES = 256 * 1024;

/**
 * Describes which field of a decision is longer than {@link DECISION_FIELD_MAX_CHARS}
 * allows; undefined when none is. (A rejection's reason reaches the model and
 * the transcript, so it is bounded like a message.)
 */
export function describeOversizedDecision(decision: ApprovalDecision): string | undefined {
  for (const [field, max] of Object.entries(DECISION_FIELD_MAX_CHARS)) {
    const value = (decision as unknown as Record<string, unknown>)[field];
    if (typeof value === 'string' && value.length > max) return `"${field}" is ${value.length} characters; it may have at most ${max}`;
  }
  if (decision.arguments !== undefined) {
    const bytes = new TextEncoder().encode(JSON.stringify(decision.arguments)).length;
    if (bytes > EDITED_ARGUMENTS_MAX_BYTES) return `"arguments" are ${bytes} bytes of JSON; they may have at most ${EDITED_ARGUMENTS_MAX_BYTES}`;
  }
  return undefined;
}

/** A finished turn, kept so clients can find the answer to their message. */
export interface TurnRecord {
  /** Ids of the user messages this turn answered. */
  messageIds: string[];
  /** Seq of the turn's first message (absent from records of older workflow code). */
  firstSeq?: number;
  /**
   * `answered`: a final answer. `failed`: the model call failed or maxSteps ran out.
   * `cancelled`: stopped by a cancel request. `interrupted`: stopped by a new user message.
   * `budget_exceeded`: a limit of {@link ConversationInput.budget} was reached before a model call.
   * `invalid_output`: a typed output was asked for and the model's answers did not match it
   * within its retries (`error` says how the last one failed; `answerSeq` is that answer).
   * `guardrail_tripped`: an input guardrail stopped the turn before any model call, or an
   * output guardrail withheld the answer (`guardrail` says which; `answerSeq` is the note
   * stored in the answer's place, which the user and the model read).
   */
  outcome: 'answered' | 'failed' | 'cancelled' | 'interrupted' | 'budget_exceeded' | 'invalid_output' | 'guardrail_tripped';
  /** The guardrail that stopped the turn (`guardrail_tripped`). */
  guardrail?: GuardrailTrip;
  /** Seq of the final assistant message, when the turn answered (or its last answer did not match a typed output). */
  answerSeq?: number;
  /**
   * The typed output (see {@link ConversationInput.output}), parsed from the
   * answer and checked against the schema, when the turn answered with one
   * whose JSON is at most 4,096 characters.
   */
  output?: unknown;
  /** True when the typed output was checked but is too large for the record: parse the answer at `answerSeq` (`AgentClient.ask` does). */
  outputInAnswer?: boolean;
  /** Why the turn failed. */
  error?: string;
  /** Model calls made in the turn. */
  steps: number;
  /** Who sent the turn's messages (their `sentBy`), when any said. */
  requestedBy?: string[];
  /** Tokens the provider counted over the turn's model calls, when it reported them, and their cost when the model has a price. */
  usage?: TurnUsage;
}

/** Tokens of a turn, and what they cost in US dollars when every call's model had a price. */
export interface TurnUsage extends TokenUsage {
  costUsd?: number;
}

/** Tokens and cost of a whole conversation. */
export interface ConversationUsage extends TokenUsage {
  /** US dollars, over the model calls whose model had a price. */
  costUsd: number;
  /** Model calls whose model had no price (their cost is not in `costUsd`). */
  unpricedCalls: number;
}

/** Tokens a provider counted: prompts sent and completions received. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

/** The state returned by {@link stateQuery}. */
export interface ConversationState {
  conversationId: string;
  status: ConversationStatus;
  /** Model calls made so far, all turns together. */
  steps: number;
  /** The last error of a failed turn, cleared when a turn answers. */
  lastError?: string;
  /** The transcript's structure since this run began (bodies live in PostgreSQL). */
  messages: MessageMeta[];
  /** Messages in the whole conversation, all runs together. */
  messageCount: number;
  /** Workflow runs so far (a conversation continues as new between turns). */
  runs: number;
  /** The agent that answers now (see {@link ConversationInput.agent}); absent for conversations of one unnamed agent. */
  agent?: string;
  /** Set when this conversation runs an agent called as a tool: who called it (its task cut to 500 characters). */
  calledBy?: AgentCaller;
  /** User messages received but not yet taken into a turn. */
  queuedMessages: number;
  /** Tool calls waiting for a person's decision. */
  pendingApprovals: PendingApproval[];
  /**
   * Calls waiting for a person inside agents this conversation called as
   * tools (at any depth): the conversation waits on them (its status is
   * `awaiting_approval`). Each is decided in its own `conversationId`.
   */
  waitingBelow?: PendingBelow[];
  /** Ids of tool calls whose activities are running. */
  runningToolCalls: string[];
  /** Decision ids applied so far (a decision is applied once per id). */
  decisionsApplied: number;
  /**
   * Decision signals the conversation refused, and why, newest last (at most
   * {@link REFUSED_DECISIONS_KEPT}). A signal gets no answer, so this is where
   * its sender finds out; the update `submitDecision` answers directly instead.
   */
  refusedDecisions: RefusedDecision[];
  /** The most recent turns, newest last (at most {@link RECENT_TURNS_KEPT}). */
  recentTurns: TurnRecord[];
  /** The turn running now: the user messages it answers, and the seq of its first message. */
  currentTurn?: { messageIds: string[]; firstSeq: number };
  /**
   * The calls of the assistant message being worked on (the open batch), in
   * order, those settled with their outcome: what a client shows before the
   * batch's tool messages are written.
   */
  openCalls?: OpenCall[];
  /**
   * Calls whose effect is unknown (`effect_unknown`), newest last (at most
   * {@link UNKNOWN_EFFECTS_KEPT}); `unknownEffectsCount` counts all of them.
   * Someone should check each in the system the tool acts on.
   */
  unknownEffects: UnknownEffect[];
  /** Calls settled as `effect_unknown` in the whole conversation (also the `UnknownEffects` search attribute). */
  unknownEffectsCount: number;
  /** Tokens and cost of the whole conversation (each turn's are in `recentTurns`). */
  usage: ConversationUsage;
  /**
   * Times the transcript had to be repaired before a model call. Should
   * always be 0: anything else is a bug, and is logged as a warning.
   */
  transcriptRepairs: number;
}

/** A decision signal that changed nothing, as shown in the state. */
export interface RefusedDecision {
  /** The decision's id, when it had a usable one. */
  decisionId?: string;
  toolCallId?: string;
  /** What was wrong, in words meant for the sender. */
  problem: string;
}

/** How many refused decisions {@link ConversationState.refusedDecisions} keeps. */
export const REFUSED_DECISIONS_KEPT = 20;

/** How many calls {@link ConversationState.unknownEffects} keeps. */
export const UNKNOWN_EFFECTS_KEPT = 20;

/** How many finished turns {@link ConversationState.recentTurns} keeps. */
export const RECENT_TURNS_KEPT = 50;

/** The longest `sentBy` of a user message, in characters. */
export const SENT_BY_MAX_CHARS = 256;

/** Describes what is wrong with a user message payload; undefined when it is valid. */
export function describeBadUserMessage(message: unknown): string | undefined {
  if (typeof message !== 'object' || message === null) return 'expected an object like {"text": "..."}';
  const { text, messageId } = message as Record<string, unknown>;
  if (typeof text !== 'string' || text.trim() === '') return '"text" must be a non-empty string';
  if (messageId !== undefined && (typeof messageId !== 'string' || messageId === '')) {
    return '"messageId", when given, must be a non-empty string';
  }
  const { sentBy } = message as Record<string, unknown>;
  if (sentBy !== undefined && (typeof sentBy !== 'string' || sentBy === '' || sentBy.length > SENT_BY_MAX_CHARS)) {
    return `"sentBy", when given, must be a non-empty string of at most ${SENT_BY_MAX_CHARS} characters`;
  }
  return undefined;
}

/** What the workflow returns when the conversation ends. */
export interface ConversationSummary {
  conversationId: string;
  steps: number;
  messages: number;
  transcriptRepairs: number;
  /**
   * How its last turn ended, for a conversation started for an agent called
   * as a tool (`calledBy`): what the calling call's result is made of.
   */
  lastTurn?: SubAgentTurn;
}

/** The one turn of an agent called as a tool, as its caller reads it. */
export interface SubAgentTurn {
  agent?: string;
  outcome: TurnRecord['outcome'];
  /** Why it did not answer. */
  error?: string;
  /** The answer's model response, whose full text becomes the calling call's result, and its text (a preview when long). */
  answer?: { responseKey: string; text: string };
}

/**
 * Lists what is wrong with a conversation's input, as the workflow checks it
 * at start: {@link describeOverLimits} applies only when `limitsApply()`
 * says so (runs started before the limits existed keep what they were
 * given), {@link describeUnstorableInput} only when `unstorableRefused()`
 * does; each is asked only when a value breaks its rule.
 */
export function checkConversationInput(input: unknown, limitsApply: () => boolean, unstorableRefused: () => boolean): string[] {
  const problems = describeInvalidInput(input, { limits: false });
  const overLimits = describeOverLimits(input);
  if (overLimits.length > 0 && limitsApply()) problems.push(...overLimits);
  const unstorable = describeUnstorableInput(input);
  if (unstorable.length > 0 && unstorableRefused()) problems.push(...unstorable);
  return problems;
}
