/**
 * The error messages and bodies a provider answers invalid Chat Completions
 * requests with, word for word (docs/provider-protocol.md), and the limits
 * they name. `validate.ts` re-exports them for tests.
 *
 * @packageDocumentation
 */

import type { ProviderErrorBody } from './types';

/** Start of OpenAI's message when tool calls are left unanswered; the missing ids follow, joined with ", ". */
export const TOOL_CALLS_NOT_ANSWERED_PREFIX =
  "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ";

/** DeepSeek's message when tool calls are left unanswered. */
export const DEEPSEEK_TOOL_CALLS_NOT_ANSWERED_MESSAGE =
  "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. (insufficient tool messages following tool_calls message)";

/** Message for a `tool` message with no open tool call before it (OpenAI's spelling, "preceeding"). */
export const ORPHAN_TOOL_MESSAGE =
  "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";

/** Message for an assistant message with neither content nor tool calls. */
export const ASSISTANT_CONTENT_NULL_MESSAGE = "Invalid value for 'content': expected a string, got null.";

/** Message for `tool_choice` sent without tools. */
export const TOOL_CHOICE_WITHOUT_TOOLS_MESSAGE =
  "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.";

/** Message for `parallel_tool_calls` sent without tools. */
export const PARALLEL_TOOL_CALLS_WITHOUT_TOOLS_MESSAGE =
  "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.";

/** Message for `stream_options` sent on a non-streaming request. */
export const STREAM_OPTIONS_WITHOUT_STREAM_MESSAGE =
  "The 'stream_options' parameter is only allowed when 'stream' is enabled.";

/** OpenAI's message for a request without a model. */
export const MODEL_REQUIRED_MESSAGE = 'you must provide a model parameter';

/** DeepSeek thinking mode: a tool-calling assistant message of the current turn lost its `reasoning_content`. */
export const REASONING_CONTENT_REQUIRED_MESSAGE =
  'The reasoning_content in the thinking mode must be passed back to the API.';

/**
 * DeepSeek thinking mode: a named or `required` `tool_choice` is refused.
 * The refusal is documented; this exact wording is this server's own.
 */
export const THINKING_TOOL_CHOICE_MESSAGE =
  "The tool_choice 'required' or a named function is not supported in the thinking mode.";

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

/**
 * Message for a value outside an enumeration, e.g. `Invalid value: 'robot'. Supported values are: 'a', 'b', and 'c'.`
 */
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

/**
 * Message for a number outside its range, as OpenAI words it, e.g. `Invalid 'max_output_tokens': integer below
 * minimum value. Expected a value >= 16, but got 10 instead.`
 */
export function outOfRangeMessage(param: string, bound: 'min' | 'max', limit: number, value: number): string {
  const kind = Number.isInteger(value) ? 'integer' : 'decimal';
  const [side, op] = bound === 'min' ? ['below minimum', '>='] : ['above maximum', '<='];
  return `Invalid '${param}': ${kind} ${side} value. Expected a value ${op} ${limit}, but got ${value} instead.`;
}

/** The code OpenAI gives {@link outOfRangeMessage}, e.g. `integer_below_min_value`. */
export function outOfRangeCode(bound: 'min' | 'max', value: number): string {
  return `${Number.isInteger(value) ? 'integer' : 'decimal'}_${bound === 'min' ? 'below_min' : 'above_max'}_value`;
}

/** Builds a provider error body. */
export function errorBody(
  message: string,
  type: string,
  param: string | null = null,
  code: string | null = null,
): ProviderErrorBody {
  return { error: { message, type, param, code } };
}

/** How a provider names the JSON type of `value` in its messages: "a string", "an integer", "null"... */
export function describeType(value: unknown): string {
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
