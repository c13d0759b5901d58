/**
 * Validation of Responses API requests (`POST /v1/responses`) as OpenAI does
 * it: the body's shape (model, input items, function tools, `tool_choice`,
 * `text.format`, `include`, the ranges of `temperature`, `top_p` and
 * `max_output_tokens`), `previous_response_id` (this server stores
 * nothing, as with `store: false`), then the item sequence rules of
 * `responses-sequence.ts`. docs/provider-protocol.md states the rules.
 *
 * @packageDocumentation
 */

import {
  BODY_NOT_OBJECT_MESSAGE,
  invalidTypeMessage,
  invalidValueMessage,
  missingParameterMessage,
  MAX_TOOLS,
  arrayTooLongMessage,
  emptyStringMessage,
  TOOL_CHOICE_VALUES,
} from './provider-errors';
import { previousResponseNotFoundMessage, typeNotPlayedMessage } from './responses-errors';
import { checkItemSequence, type TypedItem } from './responses-sequence';
import type { ValidationFailure } from './types';
import { checkFunctionName, checkNumberParameter, fail, isObject } from './validate-fields';
import { checkResponseFormat } from './validate-response-format';
import { checkTools } from './validate-tools';

/** Input item types the scripted model plays. */
const PLAYED_ITEM_TYPES = ['message', 'function_call', 'function_call_output', 'reasoning', 'item_reference'] as const;

/** Input item types the Responses API knows (openai SDK 7.x `ResponseInputItem`) beyond the played ones. */
const OTHER_ITEM_TYPES = [
  'file_search_call',
  'computer_call',
  'computer_call_output',
  'web_search_call',
  'tool_search_call',
  'tool_search_output',
  'additional_tools',
  'compaction',
  'image_generation_call',
  'code_interpreter_call',
  'local_shell_call',
  'local_shell_call_output',
  'shell_call',
  'shell_call_output',
  'apply_patch_call',
  'apply_patch_call_output',
  'mcp_list_tools',
  'mcp_approval_request',
  'mcp_approval_response',
  'mcp_call',
  'custom_tool_call',
  'custom_tool_call_output',
] as const;

const MESSAGE_ROLES = ['user', 'assistant', 'system', 'developer'] as const;
const INPUT_PART_TYPES = ['input_text', 'input_image', 'input_file'] as const;
const OUTPUT_PART_TYPES = ['output_text', 'refusal'] as const;

/** Values `include` may hold (openai SDK `ResponseIncludable`). */
const INCLUDABLE = [
  'file_search_call.results',
  'web_search_call.results',
  'web_search_call.action.sources',
  'message.input_image.image_url',
  'computer_call_output.output.image_url',
  'code_interpreter_call.outputs',
  'reasoning.encrypted_content',
  'message.output_text.logprobs',
] as const;

/**
 * Checks a Responses API request body the way OpenAI does.
 *
 * @param body - the parsed JSON request body
 * @returns the 400 answer for the first fault found, or `null` when the request is valid
 */
export function validateResponsesRequest(body: unknown): ValidationFailure | null {
  if (!isObject(body)) return fail(BODY_NOT_OBJECT_MESSAGE);
  const model = body.model;
  if (model === undefined || model === null || model === '')
    return fail(missingParameterMessage('model'), 'model', 'missing_required_parameter');
  if (typeof model !== 'string') return fail(invalidTypeMessage('model', 'a string', model), 'model', 'invalid_type');

  const previous = body.previous_response_id;
  if (previous !== undefined && previous !== null) {
    // Nothing is ever stored here, exactly as with `store: false`: no previous response can be found.
    return fail(
      previousResponseNotFoundMessage(String(previous)),
      'previous_response_id',
      'previous_response_not_found',
    );
  }
  const store = body.store !== false;

  const input = body.input;
  if (input === undefined || input === null)
    return fail(missingParameterMessage('input'), 'input', 'missing_required_parameter');
  if (typeof input !== 'string' && !Array.isArray(input))
    return fail(invalidTypeMessage('input', 'a string or an array', input), 'input', 'invalid_type');
  const items: TypedItem[] = [];
  if (Array.isArray(input)) {
    for (let i = 0; i < input.length; i++) {
      const typed = checkItem(input[i], `input[${i}]`);
      if ('status' in typed) return typed;
      items.push(typed);
    }
  }

  const includeFailure = checkInclude(body.include);
  if (includeFailure) return includeFailure;
  const toolsFailure = checkResponsesTools(body);
  if (toolsFailure) return toolsFailure;
  const formatFailure = checkTextFormat(body.text);
  if (formatFailure) return formatFailure;
  const rangeFailure =
    checkNumberParameter(body.temperature, 'temperature', { min: 0, max: 2 }) ??
    checkNumberParameter(body.top_p, 'top_p', { min: 0, max: 1 }) ??
    checkNumberParameter(body.max_output_tokens, 'max_output_tokens', { min: 16, integer: true });
  if (rangeFailure) return rangeFailure;

  return checkItemSequence(items, store);
}

/** One input item's shape; its resolved type when it is good. */
function checkItem(item: unknown, at: string): TypedItem | ValidationFailure {
  if (!isObject(item)) return fail(invalidTypeMessage(at, 'an object', item), at, 'invalid_type');
  const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
  if (type === undefined || type === null)
    return fail(missingParameterMessage(`${at}.type`), `${at}.type`, 'missing_required_parameter');
  if (!(PLAYED_ITEM_TYPES as readonly unknown[]).includes(type)) {
    if ((OTHER_ITEM_TYPES as readonly unknown[]).includes(type))
      return fail(typeNotPlayedMessage('input items', String(type)), `${at}.type`, 'invalid_value');
    return fail(invalidValueMessage(type, [...PLAYED_ITEM_TYPES, ...OTHER_ITEM_TYPES]), `${at}.type`, 'invalid_value');
  }
  const failure =
    type === 'message'
      ? checkMessageItem(item, at)
      : type === 'function_call'
        ? (requireString(item, 'call_id', at) ??
          checkFunctionName(item.name, `${at}.name`) ??
          requireString(item, 'arguments', at, true))
        : type === 'function_call_output'
          ? (requireString(item, 'call_id', at) ?? checkOutput(item.output, `${at}.output`))
          : type === 'reasoning'
            ? (requireString(item, 'id', at) ??
              (Array.isArray(item.summary)
                ? null
                : fail(missingParameterMessage(`${at}.summary`), `${at}.summary`, 'missing_required_parameter')))
            : requireString(item, 'id', at);
  return failure ?? { type: type as string, item };
}

function checkMessageItem(item: Record<string, unknown>, at: string): ValidationFailure | null {
  const role = item.role;
  if (role === undefined || role === null)
    return fail(missingParameterMessage(`${at}.role`), `${at}.role`, 'missing_required_parameter');
  if (!(MESSAGE_ROLES as readonly unknown[]).includes(role))
    return fail(invalidValueMessage(role, MESSAGE_ROLES), `${at}.role`, 'invalid_value');
  const content = item.content;
  if (typeof content === 'string') return null;
  if (!Array.isArray(content))
    return fail(
      invalidTypeMessage(`${at}.content`, 'one of a string or array', content),
      `${at}.content`,
      'invalid_type',
    );
  const allowed = role === 'assistant' ? OUTPUT_PART_TYPES : INPUT_PART_TYPES;
  for (let j = 0; j < content.length; j++) {
    const part: unknown = content[j];
    const partAt = `${at}.content[${j}]`;
    if (!isObject(part)) return fail(invalidTypeMessage(partAt, 'an object', part), partAt, 'invalid_type');
    if (!(allowed as readonly unknown[]).includes(part.type))
      return fail(invalidValueMessage(part.type, allowed), partAt, 'invalid_value');
    if ((part.type === 'input_text' || part.type === 'output_text') && typeof part.text !== 'string')
      return fail(invalidTypeMessage(`${partAt}.text`, 'a string', part.text), `${partAt}.text`, 'invalid_type');
  }
  return null;
}

function checkOutput(output: unknown, at: string): ValidationFailure | null {
  if (output === undefined || output === null)
    return fail(missingParameterMessage(at), at, 'missing_required_parameter');
  if (typeof output !== 'string' && !Array.isArray(output))
    return fail(invalidTypeMessage(at, 'one of a string or array', output), at, 'invalid_type');
  return null;
}

/** A required string field; `mayBeEmpty` for `arguments`, which a call without parameters sends as `""`. */
function requireString(
  item: Record<string, unknown>,
  field: string,
  at: string,
  mayBeEmpty = false,
): ValidationFailure | null {
  const value = item[field];
  const param = `${at}.${field}`;
  if (value === undefined || value === null)
    return fail(missingParameterMessage(param), param, 'missing_required_parameter');
  if (typeof value !== 'string') return fail(invalidTypeMessage(param, 'a string', value), param, 'invalid_type');
  if (!mayBeEmpty && value.length === 0) return fail(emptyStringMessage(param), param, 'empty_string');
  return null;
}

function checkInclude(include: unknown): ValidationFailure | null {
  if (include === undefined || include === null) return null;
  if (!Array.isArray(include))
    return fail(invalidTypeMessage('include', 'an array of strings', include), 'include', 'invalid_type');
  for (let i = 0; i < include.length; i++) {
    if (!(INCLUDABLE as readonly unknown[]).includes(include[i]))
      return fail(invalidValueMessage(include[i], INCLUDABLE), `include[${i}]`, 'invalid_value');
  }
  return null;
}

/**
 * Responses tools are flat (`{type: 'function', name, parameters, strict}`);
 * they are checked by the Chat Completions rules (names, strict schemas,
 * `tool_choice`, `parallel_tool_calls`) after nesting each under `function`,
 * with the parameter names put back in the Responses form.
 */
function checkResponsesTools(body: Record<string, unknown>): ValidationFailure | null {
  const tools = body.tools;
  let nested: unknown = tools;
  if (Array.isArray(tools)) {
    if (tools.length > MAX_TOOLS)
      return fail(arrayTooLongMessage('tools', MAX_TOOLS, tools.length), 'tools', 'array_above_max_length');
    const out: unknown[] = [];
    for (let k = 0; k < tools.length; k++) {
      const tool: unknown = tools[k];
      if (!isObject(tool)) return fail(invalidTypeMessage(`tools[${k}]`, 'an object', tool), `tools[${k}]`);
      if (tool.type !== 'function')
        return fail(typeNotPlayedMessage('tools', String(tool.type)), `tools[${k}].type`, 'invalid_value');
      const { type, ...fn } = tool;
      out.push({ type, function: fn });
    }
    // The Responses API takes an empty tool list.
    nested = out.length > 0 ? out : undefined;
  }
  const choice = body.tool_choice;
  const nestedChoice =
    isObject(choice) && choice.type === 'function' ? { type: 'function', function: { name: choice.name } } : choice;
  if (typeof choice === 'string' && !(TOOL_CHOICE_VALUES as readonly string[]).includes(choice))
    return fail(invalidValueMessage(choice, TOOL_CHOICE_VALUES), 'tool_choice', 'invalid_value');
  const failure = checkTools({
    tools: nested,
    // Without tools the Responses API takes `tool_choice` and `parallel_tool_calls`; only their shape is checked here.
    tool_choice: nested === undefined ? undefined : nestedChoice,
    parallel_tool_calls: nested === undefined ? undefined : body.parallel_tool_calls,
  });
  if (!failure) return null;
  const param = failure.body.error.param
    ?.replace(/^(tools\[\d+\])\.function/, '$1')
    .replace('tool_choice.function.', 'tool_choice.');
  const message = failure.body.error.message
    .replace(/'(tools\[\d+\])\.function/g, "'$1")
    .replace("'tool_choice.function.", "'tool_choice.");
  return fail(message, param ?? null, failure.body.error.code);
}

/** `text.format`, checked as Chat Completions' `response_format` is, with the Responses parameter names. */
function checkTextFormat(text: unknown): ValidationFailure | null {
  if (text === undefined || text === null) return null;
  if (!isObject(text)) return fail(invalidTypeMessage('text', 'an object', text), 'text', 'invalid_type');
  const format = text.format;
  if (format === undefined || format === null) return null;
  if (!isObject(format))
    return fail(invalidTypeMessage('text.format', 'an object', format), 'text.format', 'invalid_type');
  const responseFormat =
    format.type === 'json_schema'
      ? { type: 'json_schema', json_schema: { name: format.name, schema: format.schema, strict: format.strict } }
      : format;
  const failure = checkResponseFormat(responseFormat);
  if (!failure) return null;
  const { message, code, param } = failure.body.error;
  const renamed = (s: string) =>
    s.replace('response_format.json_schema.', 'text.format.').replace('response_format', 'text.format');
  // OpenAI keeps "Invalid schema for response_format '<name>'" in the Responses API's message; only names in quotes change.
  const words = message
    .replace("'response_format.json_schema.", "'text.format.")
    .replace("'response_format", "'text.format");
  return fail(
    words,
    message.startsWith('Invalid schema') || param === null ? 'text.format.schema' : renamed(param),
    code,
  );
}
