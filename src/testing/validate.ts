/**
 * Pure validation of Chat Completions requests, answering like a real
 * provider would (the rules and bodies are described in
 * docs/provider-protocol.md).
 *
 * @packageDocumentation
 */

import type { ModelServerDialect, ProviderErrorBody, ValidationFailure } from './types';

/** Start of OpenAI's message when tool calls are left unanswered; the missing ids follow, joined with ", ". */
export const TOOL_CALLS_NOT_ANSWERED_PREFIX =
  "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ";

/** DeepSeek's message when tool calls are left unanswered. */
export const DEEPSEEK_TOOL_CALLS_NOT_ANSWERED_MESSAGE =
  "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. (insufficient tool messages following tool_calls message)";

/** Message for a `tool` message with no open tool call before it (OpenAI's spelling, "preceeding"). */
export const ORPHAN_TOOL_MESSAGE = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";

/** Message for an assistant message with neither content nor tool calls. */
export const ASSISTANT_CONTENT_NULL_MESSAGE = "Invalid value for 'content': expected a string, got null.";

/** Message for `tool_choice` sent without tools. */
export const TOOL_CHOICE_WITHOUT_TOOLS_MESSAGE = "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.";

/** Message for `parallel_tool_calls` sent without tools. */
export const PARALLEL_TOOL_CALLS_WITHOUT_TOOLS_MESSAGE =
  "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.";

/** Message for `stream_options` sent on a non-streaming request. */
export const STREAM_OPTIONS_WITHOUT_STREAM_MESSAGE = "The 'stream_options' parameter is only allowed when 'stream' is enabled.";

/** OpenAI's message for a request without a model. */
export const MODEL_REQUIRED_MESSAGE = 'you must provide a model parameter';

/** DeepSeek thinking mode: a tool-calling assistant message of the current turn lost its `reasoning_content`. */
export const REASONING_CONTENT_REQUIRED_MESSAGE = 'The reasoning_content in the thinking mode must be passed back to the API.';

/**
 * DeepSeek thinking mode: a named or `required` `tool_choice` is refused.
 * The refusal is documented; this exact wording is this server's own.
 */
export const THINKING_TOOL_CHOICE_MESSAGE = "The tool_choice 'required' or a named function is not supported in the thinking mode.";

/** OpenAI's message for a body that is not valid JSON. */
export const INVALID_JSON_MESSAGE =
  "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)";

/** Message for a JSON body that is not an object. */
export const BODY_NOT_OBJECT_MESSAGE = 'The request body must be a JSON object.';

/** Roles a chat message may have. */
export const VALID_ROLES = ['system', 'user', 'assistant', 'tool', 'developer'] as const;

/** Values a string `tool_choice` may have. */
export const TOOL_CHOICE_VALUES = ['none', 'auto', 'required'] as const;

/** Pattern function names must match. */
export const FUNCTION_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/** Most tools one request may declare. */
export const MAX_TOOLS = 128;

/** Longest tool call id accepted. */
export const MAX_TOOL_CALL_ID_LENGTH = 40;

/** Longest function name accepted. */
export const MAX_FUNCTION_NAME_LENGTH = 64;

/** OpenAI's message for unanswered tool calls, e.g. `toolCallsNotAnsweredMessage(['call_a', 'call_b'])`. */
export function toolCallsNotAnsweredMessage(ids: readonly string[]): string {
  return TOOL_CALLS_NOT_ANSWERED_PREFIX + ids.join(', ');
}

/** Message for two tool messages answering one id, at message indexes `first` and `second`. */
export function duplicateToolCallIdMessage(id: string, first: number, second: number): string {
  return `Invalid parameter: Duplicate value for 'tool_call_id' of '${id}', in messages[${first}] and messages[${second}].`;
}

/** Message for a required parameter that is absent, e.g. `Missing required parameter: 'messages'.` */
export function missingParameterMessage(param: string): string {
  return `Missing required parameter: '${param}'.`;
}

/** Message for a parameter of the wrong JSON type. */
export function invalidTypeMessage(param: string, expected: string, value: unknown): string {
  return `Invalid type for '${param}': expected ${expected}, but got ${describeType(value)} instead.`;
}

/** Message for an empty array where at least one element is required. */
export function emptyArrayMessage(param: string): string {
  return `Invalid '${param}': empty array. Expected an array with minimum length 1, but got an empty array instead.`;
}

/** Message for an array longer than allowed. */
export function arrayTooLongMessage(param: string, max: number, length: number): string {
  return `Invalid '${param}': array too long. Expected an array with maximum length ${max}, but got an array with length ${length} instead.`;
}

/** Message for an empty string where at least one character is required. */
export function emptyStringMessage(param: string): string {
  return `Invalid '${param}': empty string. Expected a string with minimum length 1, but got an empty string instead.`;
}

/** Message for a string longer than allowed. */
export function stringTooLongMessage(param: string, max: number, length: number): string {
  return `Invalid '${param}': string too long. Expected a string with maximum length ${max}, but got a string with length ${length} instead.`;
}

/** Message for a function name with characters outside `[a-zA-Z0-9_-]`. */
export function namePatternMessage(param: string): string {
  return `Invalid '${param}': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`;
}

/** Message for a value outside an enumeration, e.g. `Invalid value: 'robot'. Supported values are: 'a', 'b', and 'c'.` */
export function invalidValueMessage(value: unknown, supported: readonly string[]): string {
  const quoted = supported.map((s) => `'${s}'`);
  const list =
    quoted.length <= 1
      ? quoted.join('')
      : quoted.length === 2
        ? `${quoted[0]} and ${quoted[1]}`
        : `${quoted.slice(0, -1).join(', ')}, and ${quoted[quoted.length - 1]}`;
  return `Invalid value: '${typeof value === 'string' ? value : JSON.stringify(value)}'. Supported values are: ${list}.`;
}

/** Builds a provider error body. */
export function errorBody(message: string, type: string, param: string | null = null, code: string | null = null): ProviderErrorBody {
  return { error: { message, type, param, code } };
}

/**
 * Checks a Chat Completions request body the way a real provider does.
 *
 * Shape checks run first (body, `model`, `messages`, each message, `tools`,
 * `tool_choice`, `parallel_tool_calls`, `stream_options`), then the
 * message-sequence rules, then the DeepSeek thinking-mode rules.
 *
 * @param body - the parsed JSON request body
 * @param dialect - provider to imitate; `openai` when omitted
 * @returns the 400 answer for the first fault found, or `null` when the request is valid
 */
export function validateChatRequest(body: unknown, dialect: ModelServerDialect = 'openai'): ValidationFailure | null {
  if (!isObject(body)) return fail(BODY_NOT_OBJECT_MESSAGE);

  const model = body.model;
  if (model === undefined || model === null || model === '') return fail(MODEL_REQUIRED_MESSAGE);
  if (typeof model !== 'string') return fail(invalidTypeMessage('model', 'a string', model), 'model', 'invalid_type');

  const messages = body.messages;
  if (messages === undefined || messages === null) {
    return fail(missingParameterMessage('messages'), 'messages', 'missing_required_parameter');
  }
  if (!Array.isArray(messages)) {
    return fail(invalidTypeMessage('messages', 'an array of objects', messages), 'messages', 'invalid_type');
  }
  if (messages.length === 0) return fail(emptyArrayMessage('messages'), 'messages', 'empty_array');

  for (let i = 0; i < messages.length; i++) {
    const failure = checkMessage(messages[i], i);
    if (failure) return failure;
  }

  const toolsFailure = checkTools(body);
  if (toolsFailure) return toolsFailure;

  if (body.stream_options !== undefined && body.stream_options !== null && body.stream !== true) {
    return fail(STREAM_OPTIONS_WITHOUT_STREAM_MESSAGE, 'stream_options');
  }

  const formatFailure = checkResponseFormat(body.response_format);
  if (formatFailure) return formatFailure;

  const sequenceFailure = checkSequence(messages as Record<string, unknown>[], dialect);
  if (sequenceFailure) return sequenceFailure;

  if (dialect === 'deepseek-thinking') return checkThinkingMode(body, messages as Record<string, unknown>[]);
  return null;
}

function checkMessage(message: unknown, i: number): ValidationFailure | null {
  const at = `messages[${i}]`;
  if (!isObject(message)) return fail(invalidTypeMessage(at, 'an object', message), at, 'invalid_type');

  const role = message.role;
  if (role === undefined || role === null) {
    return fail(missingParameterMessage(`${at}.role`), `${at}.role`, 'missing_required_parameter');
  }
  if (typeof role !== 'string' || !(VALID_ROLES as readonly string[]).includes(role)) {
    return fail(invalidValueMessage(role, VALID_ROLES), `${at}.role`, 'invalid_value');
  }
  // A participant's name (any role but tool): a string of letters, digits, "_" or "-".
  if (message.name !== undefined) {
    if (typeof message.name !== 'string') return fail(invalidTypeMessage(`${at}.name`, 'a string', message.name), `${at}.name`, 'invalid_type');
    if (!/^[a-zA-Z0-9_-]+$/.test(message.name)) return fail(namePatternMessage(`${at}.name`), `${at}.name`, 'invalid_value');
  }

  switch (role) {
    case 'assistant':
      return checkAssistantMessage(message, i);
    case 'tool':
      return checkToolMessage(message, i);
    default:
      return checkContent(message.content, `${at}.content`);
  }
}

function checkContent(content: unknown, param: string): ValidationFailure | null {
  if (content === undefined) return fail(missingParameterMessage(param), param, 'missing_required_parameter');
  if (typeof content !== 'string' && !Array.isArray(content)) {
    return fail(invalidTypeMessage(param, 'one of a string or array of objects', content), param, 'invalid_type');
  }
  return null;
}

function checkAssistantMessage(message: Record<string, unknown>, i: number): ValidationFailure | null {
  const at = `messages[${i}]`;
  const toolCalls = message.tool_calls;
  const hasToolCalls = toolCalls !== undefined && toolCalls !== null;

  if (hasToolCalls) {
    if (!Array.isArray(toolCalls)) {
      return fail(invalidTypeMessage(`${at}.tool_calls`, 'an array of objects', toolCalls), `${at}.tool_calls`, 'invalid_type');
    }
    if (toolCalls.length === 0) return fail(emptyArrayMessage(`${at}.tool_calls`), `${at}.tool_calls`, 'empty_array');
    for (let j = 0; j < toolCalls.length; j++) {
      const failure = checkToolCall(toolCalls[j], `${at}.tool_calls[${j}]`);
      if (failure) return failure;
    }
  }

  const content = message.content;
  if (content === undefined || content === null) {
    if (!hasToolCalls) return fail(ASSISTANT_CONTENT_NULL_MESSAGE, `messages.[${i}].content`);
  } else if (typeof content !== 'string' && !Array.isArray(content)) {
    return fail(invalidTypeMessage(`${at}.content`, 'one of a string or array of objects', content), `${at}.content`, 'invalid_type');
  }
  return null;
}

function checkToolCall(call: unknown, at: string): ValidationFailure | null {
  if (!isObject(call)) return fail(invalidTypeMessage(at, 'an object', call), at, 'invalid_type');

  const id = call.id;
  const idParam = `${at}.id`;
  if (id === undefined || id === null) return fail(missingParameterMessage(idParam), idParam, 'missing_required_parameter');
  if (typeof id !== 'string') return fail(invalidTypeMessage(idParam, 'a string', id), idParam, 'invalid_type');
  if (id.length === 0) return fail(emptyStringMessage(idParam), idParam, 'empty_string');
  if (id.length > MAX_TOOL_CALL_ID_LENGTH) {
    return fail(stringTooLongMessage(idParam, MAX_TOOL_CALL_ID_LENGTH, id.length), idParam, 'string_above_max_length');
  }

  const typeFailure = checkFunctionType(call.type, `${at}.type`);
  if (typeFailure) return typeFailure;

  const fn = call.function;
  const fnParam = `${at}.function`;
  if (fn === undefined || fn === null) return fail(missingParameterMessage(fnParam), fnParam, 'missing_required_parameter');
  if (!isObject(fn)) return fail(invalidTypeMessage(fnParam, 'an object', fn), fnParam, 'invalid_type');

  const nameFailure = checkFunctionName(fn.name, `${fnParam}.name`);
  if (nameFailure) return nameFailure;

  const args = fn.arguments;
  const argsParam = `${fnParam}.arguments`;
  if (args === undefined || args === null) {
    return fail(missingParameterMessage(argsParam), argsParam, 'missing_required_parameter');
  }
  if (typeof args !== 'string') return fail(invalidTypeMessage(argsParam, 'a string', args), argsParam, 'invalid_type');
  return null;
}

function checkToolMessage(message: Record<string, unknown>, i: number): ValidationFailure | null {
  const at = `messages[${i}]`;
  const id = message.tool_call_id;
  const idParam = `${at}.tool_call_id`;
  if (id === undefined || id === null) return fail(missingParameterMessage(idParam), idParam, 'missing_required_parameter');
  if (typeof id !== 'string') return fail(invalidTypeMessage(idParam, 'a string', id), idParam, 'invalid_type');

  const content = message.content;
  const contentParam = `${at}.content`;
  if (content === undefined) {
    return fail(missingParameterMessage(contentParam), contentParam, 'missing_required_parameter');
  }
  if (typeof content === 'string') return null;
  if (!Array.isArray(content)) {
    return fail(invalidTypeMessage(contentParam, 'one of a string or array of objects', content), contentParam, 'invalid_type');
  }
  if (content.length === 0) return fail(emptyArrayMessage(contentParam), contentParam, 'empty_array');
  for (let k = 0; k < content.length; k++) {
    const part = content[k];
    const partParam = `${contentParam}[${k}]`;
    if (!isObject(part)) return fail(invalidTypeMessage(partParam, 'an object', part), partParam, 'invalid_type');
    if (part.type === undefined || part.type === null) {
      return fail(missingParameterMessage(`${partParam}.type`), `${partParam}.type`, 'missing_required_parameter');
    }
    if (part.type !== 'text') return fail(invalidValueMessage(part.type, ['text']), `${partParam}.type`, 'invalid_value');
    if (part.text === undefined || part.text === null) {
      return fail(missingParameterMessage(`${partParam}.text`), `${partParam}.text`, 'missing_required_parameter');
    }
    if (typeof part.text !== 'string') {
      return fail(invalidTypeMessage(`${partParam}.text`, 'a string', part.text), `${partParam}.text`, 'invalid_type');
    }
  }
  return null;
}

function checkFunctionType(type: unknown, param: string): ValidationFailure | null {
  if (type === undefined || type === null) return fail(missingParameterMessage(param), param, 'missing_required_parameter');
  if (type !== 'function') return fail(invalidValueMessage(type, ['function']), param, 'invalid_value');
  return null;
}

function checkFunctionName(name: unknown, param: string): ValidationFailure | null {
  if (name === undefined || name === null) return fail(missingParameterMessage(param), param, 'missing_required_parameter');
  if (typeof name !== 'string') return fail(invalidTypeMessage(param, 'a string', name), param, 'invalid_type');
  if (name.length === 0) return fail(emptyStringMessage(param), param, 'empty_string');
  if (name.length > MAX_FUNCTION_NAME_LENGTH) {
    return fail(stringTooLongMessage(param, MAX_FUNCTION_NAME_LENGTH, name.length), param, 'string_above_max_length');
  }
  if (!FUNCTION_NAME_PATTERN.test(name)) return fail(namePatternMessage(param), param, 'invalid_value');
  return null;
}

function checkTools(body: Record<string, unknown>): ValidationFailure | null {
  const tools = body.tools;
  const hasTools = tools !== undefined && tools !== null;
  if (hasTools) {
    if (!Array.isArray(tools)) return fail(invalidTypeMessage('tools', 'an array of objects', tools), 'tools', 'invalid_type');
    if (tools.length === 0) return fail(emptyArrayMessage('tools'), 'tools', 'empty_array');
    if (tools.length > MAX_TOOLS) {
      return fail(arrayTooLongMessage('tools', MAX_TOOLS, tools.length), 'tools', 'array_above_max_length');
    }
    for (let k = 0; k < tools.length; k++) {
      const tool = tools[k];
      const at = `tools[${k}]`;
      if (!isObject(tool)) return fail(invalidTypeMessage(at, 'an object', tool), at, 'invalid_type');
      const typeFailure = checkFunctionType(tool.type, `${at}.type`);
      if (typeFailure) return typeFailure;
      const fn = tool.function;
      if (fn === undefined || fn === null) {
        return fail(missingParameterMessage(`${at}.function`), `${at}.function`, 'missing_required_parameter');
      }
      if (!isObject(fn)) return fail(invalidTypeMessage(`${at}.function`, 'an object', fn), `${at}.function`, 'invalid_type');
      const nameFailure = checkFunctionName(fn.name, `${at}.function.name`);
      if (nameFailure) return nameFailure;
    }
  }

  const toolChoice = body.tool_choice;
  if (toolChoice !== undefined && toolChoice !== null) {
    if (!hasTools) return fail(TOOL_CHOICE_WITHOUT_TOOLS_MESSAGE, 'tool_choice');
    if (typeof toolChoice === 'string') {
      if (!(TOOL_CHOICE_VALUES as readonly string[]).includes(toolChoice)) {
        return fail(invalidValueMessage(toolChoice, TOOL_CHOICE_VALUES), 'tool_choice', 'invalid_value');
      }
    } else if (isObject(toolChoice)) {
      const typeFailure = checkFunctionType(toolChoice.type, 'tool_choice.type');
      if (typeFailure) return typeFailure;
      const fn = toolChoice.function;
      if (fn === undefined || fn === null) {
        return fail(missingParameterMessage('tool_choice.function'), 'tool_choice.function', 'missing_required_parameter');
      }
      if (!isObject(fn)) {
        return fail(invalidTypeMessage('tool_choice.function', 'an object', fn), 'tool_choice.function', 'invalid_type');
      }
      const nameFailure = checkFunctionName(fn.name, 'tool_choice.function.name');
      if (nameFailure) return nameFailure;
    } else {
      return fail(invalidTypeMessage('tool_choice', 'one of a string or object', toolChoice), 'tool_choice', 'invalid_type');
    }
  }

  const parallel = body.parallel_tool_calls;
  if (parallel !== undefined && parallel !== null) {
    if (!hasTools) return fail(PARALLEL_TOOL_CALLS_WITHOUT_TOOLS_MESSAGE, 'parallel_tool_calls');
    if (typeof parallel !== 'boolean') {
      return fail(invalidTypeMessage('parallel_tool_calls', 'a boolean', parallel), 'parallel_tool_calls', 'invalid_type');
    }
  }
  return null;
}

interface OpenToolCalls {
  assistantIndex: number;
  ids: string[];
  answeredAt: Map<string, number>;
}

function checkSequence(messages: Record<string, unknown>[], dialect: ModelServerDialect): ValidationFailure | null {
  let open: OpenToolCalls | null = null;

  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (message.role === 'tool') {
      const id = message.tool_call_id as string;
      const earlier = open?.answeredAt.get(id);
      if (earlier !== undefined) {
        return fail(duplicateToolCallIdMessage(id, earlier, i), `messages.[${i}].tool_call_id`);
      }
      if (!open || !open.ids.includes(id)) return fail(ORPHAN_TOOL_MESSAGE, `messages.[${i}].role`);
      open.answeredAt.set(id, i);
      continue;
    }

    if (open) {
      const missing = unanswered(open);
      if (missing.length > 0) return notAnswered(missing, i, dialect);
      open = null;
    }
    if (message.role === 'assistant' && Array.isArray(message.tool_calls)) {
      const ids = (message.tool_calls as Record<string, unknown>[]).map((call) => call.id as string);
      open = { assistantIndex: i, ids, answeredAt: new Map() };
    }
  }

  if (open) {
    const missing = unanswered(open);
    if (missing.length > 0) return notAnswered(missing, open.assistantIndex, dialect);
  }
  return null;
}

function unanswered(open: OpenToolCalls): string[] {
  return open.ids.filter((id, k) => !open.answeredAt.has(id) && open.ids.indexOf(id) === k);
}

function notAnswered(missing: string[], index: number, dialect: ModelServerDialect): ValidationFailure {
  if (dialect === 'openai') return fail(toolCallsNotAnsweredMessage(missing), `messages.[${index}].role`);
  return deepseekFail(DEEPSEEK_TOOL_CALLS_NOT_ANSWERED_MESSAGE);
}

function checkThinkingMode(body: Record<string, unknown>, messages: Record<string, unknown>[]): ValidationFailure | null {
  const toolChoice = body.tool_choice;
  if (toolChoice === 'required' || isObject(toolChoice)) return deepseekFail(THINKING_TOOL_CHOICE_MESSAGE);

  let lastUser = -1;
  messages.forEach((message, i) => {
    if (message.role === 'user') lastUser = i;
  });
  for (let i = lastUser + 1; i < messages.length; i++) {
    const message = messages[i];
    if (message.role === 'assistant' && Array.isArray(message.tool_calls) && typeof message.reasoning_content !== 'string') {
      return deepseekFail(REASONING_CONTENT_REQUIRED_MESSAGE);
    }
  }
  return null;
}

/** The `type`s `response_format` may have. */
const RESPONSE_FORMAT_TYPES = ['text', 'json_object', 'json_schema'] as const;

/**
 * `response_format`: a known type; for `json_schema`, a `json_schema` object
 * with a `name` (1-64 of `a-zA-Z0-9_-`) and, with `strict: true`, a schema
 * in the subset structured outputs take: every object node lists every
 * property in `required` and sets `additionalProperties: false` (OpenAI's
 * words, with the path where it found the fault).
 */
function checkResponseFormat(format: unknown): ValidationFailure | null {
  if (format === undefined || format === null) return null;
  if (!isObject(format)) return fail(invalidTypeMessage('response_format', 'an object', format), 'response_format', 'invalid_type');
  if (!RESPONSE_FORMAT_TYPES.includes(format.type as (typeof RESPONSE_FORMAT_TYPES)[number])) {
    return fail(invalidValueMessage(format.type, RESPONSE_FORMAT_TYPES), 'response_format.type', 'invalid_value');
  }
  if (format.type !== 'json_schema') return null;
  const spec = format.json_schema;
  if (!isObject(spec)) return fail(missingParameterMessage('response_format.json_schema'), 'response_format.json_schema', 'missing_required_parameter');
  const nameFailure = checkFunctionName(spec.name, 'response_format.json_schema.name');
  if (nameFailure) return nameFailure;
  if (spec.strict !== true) return null;
  const problem = strictSchemaProblem(spec.schema, []);
  return problem ? fail(`Invalid schema for response_format '${String(spec.name)}': ${problem}`, 'response_format', null) : null;
}

/** Where a strict schema breaks the structured-outputs subset, in OpenAI's words; undefined when it does not. */
function strictSchemaProblem(schema: unknown, at: string[]): string | undefined {
  if (!isObject(schema)) return undefined;
  const context = `In context=(${at.map((p) => `'${p}'`).join(', ')}${at.length === 1 ? ',' : ''})`;
  const isObjectNode = schema.type === 'object' || (Array.isArray(schema.type) && schema.type.includes('object')) || isObject(schema.properties);
  if (isObjectNode) {
    if (schema.additionalProperties !== false) return `${context}, 'additionalProperties' is required to be supplied and to be false.`;
    const keys = Object.keys(isObject(schema.properties) ? schema.properties : {});
    const required = Array.isArray(schema.required) ? schema.required : [];
    const missing = keys.filter((k) => !required.includes(k));
    if (missing.length > 0)
      return `${context}, 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing[0]}'.`;
    for (const key of keys) {
      const inner = strictSchemaProblem((schema.properties as Record<string, unknown>)[key], [...at, 'properties', key]);
      if (inner) return inner;
    }
  }
  if (schema.items !== undefined) {
    const inner = strictSchemaProblem(schema.items, [...at, 'items']);
    if (inner) return inner;
  }
  for (const combinator of ['anyOf', '$defs'] as const) {
    const branches = schema[combinator];
    const entries = Array.isArray(branches) ? branches.map((b, i) => [String(i), b] as const) : isObject(branches) ? Object.entries(branches) : [];
    for (const [key, branch] of entries) {
      const inner = strictSchemaProblem(branch, [...at, combinator, key]);
      if (inner) return inner;
    }
  }
  return undefined;
}

function fail(message: string, param: string | null = null, code: string | null = null): ValidationFailure {
  return { status: 400, body: errorBody(message, 'invalid_request_error', param, code) };
}

function deepseekFail(message: string): ValidationFailure {
  return { status: 400, body: errorBody(message, 'invalid_request_error', null, 'invalid_request_error') };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return 'a string';
    case 'number':
      return Number.isInteger(value) ? 'an integer' : 'a decimal';
    case 'boolean':
      return 'a boolean';
    case 'object':
      return 'an object';
    default:
      return typeof value;
  }
}
