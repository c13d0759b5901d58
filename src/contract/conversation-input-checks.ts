/**
 * What is wrong with a conversation's input: the checks the client makes
 * before it starts one and the workflow makes at start, by the limits of
 * `limits.ts`. Each returns a list of problems in words meant for the sender,
 * empty when the input is valid. Pure and workflow-safe.
 */
import type { AgentCaller, ForkOrigin, ScheduledRun } from './conversation-input';
import {
  AGENT_NAME_PATTERN,
  CONVERSATION_LIMITS,
  FUNCTION_NAME_PATTERN,
  OUTPUT_RETRIES,
  OUTPUT_SCHEMA_MAX_BYTES,
  utf8Bytes,
} from './limits';
import { describeBadSearchAttributeNames } from './search-attribute-names';
import { MODEL_APIS, type ModelApi } from './model-api';
import { describeRefusedByProviders } from './provider-rules';
import { describeUnstorableFields } from './text';
import { describeOversizedUserMessage } from './user-messages';

/**
 * Lists what is wrong with a conversation's input, as the workflow checks it
 * at start: {@link describeOverLimits} applies only when `limitsApply()`
 * says so (runs started before the limits existed keep what they were
 * given), {@link describeUnstorableInput} only when `unstorableRefused()`
 * does; each is asked only when a value breaks its rule.
 */
export function checkConversationInput(
  input: unknown,
  limitsApply: () => boolean,
  unstorableRefused: () => boolean,
): string[] {
  const problems = describeInvalidInput(input, { limits: false });
  const overLimits = describeOverLimits(input);
  if (overLimits.length > 0 && limitsApply()) problems.push(...overLimits);
  const unstorable = describeUnstorableInput(input);
  if (unstorable.length > 0 && unstorableRefused()) problems.push(...unstorable);
  return problems;
}

/**
 * Lists what is wrong with a {@link ConversationInput}; empty when it is valid.
 * Checked by the client before starting, and by the workflow at start.
 * `limits: false` leaves out {@link describeOverLimits} (the workflow applies
 * those only to runs started after they existed). `providers: true` adds
 * what a model provider would refuse for certain
 * ({@link describeRefusedByProviders}): the client, a fork and the HTTP API
 * ask it; the workflow's check at start does not, since a run begun with such
 * an input would then fail where it replayed (the worker refuses such a model
 * call before sending it instead).
 */
export function describeInvalidInput(
  input: unknown,
  options: { limits?: boolean; providers?: boolean } = {},
): string[] {
  if (input === undefined) return [];
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return ['the input must be an object'];
  const i = input as Record<string, unknown>;
  const problems: string[] = [];
  const positiveInt = (value: unknown, name: string): void => {
    if (value !== undefined && !(Number.isInteger(value) && (value as number) > 0)) {
      problems.push(`${name} must be a positive integer, got ${JSON.stringify(value)}`);
    }
  };
  if (i.systemPrompt !== undefined && typeof i.systemPrompt !== 'string')
    problems.push('systemPrompt must be a string');
  if (i.tools !== undefined && !(Array.isArray(i.tools) && i.tools.every((t) => typeof t === 'string'))) {
    problems.push('tools must be a list of tool names, e.g. ["find_customer"]');
  }
  if (
    i.mcpServers !== undefined &&
    !(
      Array.isArray(i.mcpServers) &&
      i.mcpServers.length <= 32 &&
      i.mcpServers.every((s) => typeof s === 'string' && /^[a-zA-Z0-9-]{1,24}$/.test(s))
    )
  ) {
    problems.push(
      'mcpServers must be a list of at most 32 names of the worker\'s MCP servers (1-24 letters, digits or "-"), e.g. ["crm", "tickets"]',
    );
  }
  positiveInt(i.maxSteps, 'maxSteps');
  positiveInt(i.maxHandoffsPerTurn, 'maxHandoffsPerTurn');
  positiveInt(i.maxAgentDepth, 'maxAgentDepth');
  problems.push(...describeBadCaller(i.calledBy));
  problems.push(...describeBadForkOrigin(i.forkedFrom));
  problems.push(...describeBadScheduledRun(i.scheduled));
  problems.push(...describeBadOutputSpec(i.output));
  if (i.agent !== undefined && !(typeof i.agent === 'string' && AGENT_NAME_PATTERN.test(i.agent))) {
    problems.push(
      `agent must be the name of one of the worker's agents (1-52 letters, digits, "_" or "-"), got ${JSON.stringify(i.agent)}`,
    );
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
        else if (typeof value !== 'boolean')
          problems.push(`localActivities.${key} must be true or false, got ${JSON.stringify(value)}`);
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
  if (model.temperature !== undefined && typeof model.temperature !== 'number')
    problems.push('model.temperature must be a number');
  positiveInt(model.maxTokens, 'model.maxTokens');
  if (model.stream !== undefined && typeof model.stream !== 'boolean')
    problems.push('model.stream must be true or false');
  positiveInt(model.streamFallbackAfterAttempts, 'model.streamFallbackAfterAttempts');
  positiveInt(model.streamIdleMs, 'model.streamIdleMs');
  positiveInt(model.contextWindow, 'model.contextWindow');
  if (model.api !== undefined && !MODEL_APIS.includes(model.api as ModelApi))
    problems.push(
      `model.api must be "chat" (Chat Completions, the default) or "responses", got ${JSON.stringify(model.api)}`,
    );
  if (model.contextOverflow !== undefined && model.contextOverflow !== 'elide' && model.contextOverflow !== 'summarize')
    problems.push(
      `model.contextOverflow must be "elide" (leave earlier turns out, the default) or "summarize" (send a summary of them), got ${JSON.stringify(model.contextOverflow)}`,
    );
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
  if (options.providers === true) problems.push(...describeRefusedByProviders(input));
  return problems;
}

/** Lists the values of a {@link ConversationInput} above {@link CONVERSATION_LIMITS}. */
export function describeOverLimits(input: unknown): string[] {
  const { maxSteps, maxHandoffsPerTurn, maxAgentDepth } = (input ?? {}) as {
    maxSteps?: unknown;
    maxHandoffsPerTurn?: unknown;
    maxAgentDepth?: unknown;
  };
  const over = (value: unknown, max: number) => typeof value === 'number' && Number.isInteger(value) && value > max;
  return [
    ...(over(maxSteps, CONVERSATION_LIMITS.maxSteps)
      ? [
          `maxSteps must be at most ${CONVERSATION_LIMITS.maxSteps}, got ${maxSteps} (a turn that needs more steps is better split into several turns)`,
        ]
      : []),
    ...(over(maxHandoffsPerTurn, CONVERSATION_LIMITS.maxHandoffsPerTurn)
      ? [`maxHandoffsPerTurn must be at most ${CONVERSATION_LIMITS.maxHandoffsPerTurn}, got ${maxHandoffsPerTurn}`]
      : []),
    ...(over(maxAgentDepth, CONVERSATION_LIMITS.maxAgentDepth)
      ? [`maxAgentDepth must be at most ${CONVERSATION_LIMITS.maxAgentDepth}, got ${maxAgentDepth}`]
      : []),
  ];
}

/**
 * What is wrong with {@link ConversationInput.output}; empty when it is valid (the worker compiles the schema itself).
 */
export function describeBadOutputSpec(value: unknown): string[] {
  if (value === undefined) return [];
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return ['output must be an object like {"schema": {...JSON Schema}}'];
  const o = value as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof o.schema !== 'object' || o.schema === null || Array.isArray(o.schema))
    problems.push('output.schema must be a JSON Schema object');
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
  if (
    o.retries !== undefined &&
    !(Number.isInteger(o.retries) && (o.retries as number) >= 0 && (o.retries as number) <= OUTPUT_RETRIES.max)
  ) {
    problems.push(
      `output.retries must be an integer from 0 to ${OUTPUT_RETRIES.max}, got ${JSON.stringify(o.retries)}`,
    );
  }
  for (const key of Object.keys(o))
    if (!['schema', 'name', 'retries'].includes(key))
      problems.push(`output has an unknown field "${key}" (it takes schema, name, retries)`);
  return problems;
}

/** What is wrong with {@link ConversationInput.forkedFrom} (set by `AgentClient.fork`). */
function describeBadForkOrigin(value: unknown): string[] {
  if (value === undefined) return [];
  const f = value as Partial<Record<keyof ForkOrigin, unknown>>;
  const ok =
    typeof value === 'object' &&
    value !== null &&
    typeof f.conversationId === 'string' &&
    f.conversationId !== '' &&
    Number.isInteger(f.seq) &&
    (f.seq as number) >= 0 &&
    Object.keys(value).every((key) => key === 'conversationId' || key === 'seq');
  return ok
    ? []
    : [
        `forkedFrom must be {"conversationId": "<source id>", "seq": <integer >= 0>} (AgentClient.fork sets it), got ${JSON.stringify(value)}`,
      ];
}

/** What is wrong with {@link ConversationInput.scheduled} (set by a schedule's action). */
function describeBadScheduledRun(value: unknown): string[] {
  if (value === undefined) return [];
  const r = value as Partial<Record<keyof ScheduledRun, unknown>>;
  const ok =
    typeof value === 'object' &&
    value !== null &&
    typeof r.scheduleId === 'string' &&
    r.scheduleId !== '' &&
    typeof r.text === 'string' &&
    r.text.trim() !== '' &&
    Object.keys(value).every((key) => key === 'scheduleId' || key === 'text');
  if (!ok)
    return [
      `scheduled must be {"scheduleId": "<schedule id>", "text": "<the message of its turn>"} (a schedule's action sets it), got ${JSON.stringify(value)?.slice(0, 200)}`,
    ];
  const oversized = describeOversizedUserMessage(r.text as string);
  return oversized ? [`scheduled.text: ${oversized}`] : [];
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
    strings(c.requestedBy) &&
    (c.callerAgent === undefined || typeof c.callerAgent === 'string') &&
    (c.rootTurn === undefined || (Number.isInteger(c.rootTurn) && (c.rootTurn as number) >= 0));
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
  const problem =
    describeUnstorableFields(input, ['systemPrompt', 'tools']) ?? describeUnstorableFields(model, ['model']);
  return problem ? [problem] : [];
}
