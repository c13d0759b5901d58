/**
 * The pieces every request check shares: the 400 answer (OpenAI's and
 * DeepSeek's shape) and the checks of a function's `type` and `name`, which
 * tool calls, tools, `tool_choice` and `response_format` all carry.
 *
 * @packageDocumentation
 */

import {
  errorBody,
  outOfRangeCode,
  outOfRangeMessage,
  FUNCTION_NAME_PATTERN,
  invalidTypeMessage,
  invalidValueMessage,
  MAX_FUNCTION_NAME_LENGTH,
  missingParameterMessage,
  emptyStringMessage,
  namePatternMessage,
  stringTooLongMessage,
} from './provider-errors';
import type { ValidationFailure } from './types';

/** A 400 `invalid_request_error` with OpenAI's `param` and `code`. */
export function fail(message: string, param: string | null = null, code: string | null = null): ValidationFailure {
  return { status: 400, body: errorBody(message, 'invalid_request_error', param, code) };
}

/** A 400 as DeepSeek answers it: no `param`, `code` repeating the type. */
export function deepseekFail(message: string): ValidationFailure {
  return { status: 400, body: errorBody(message, 'invalid_request_error', null, 'invalid_request_error') };
}

/** Whether `value` is a JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks that a `type` field says `function`. */
export function checkFunctionType(type: unknown, param: string): ValidationFailure | null {
  if (type === undefined || type === null)
    return fail(missingParameterMessage(param), param, 'missing_required_parameter');
  if (type !== 'function') return fail(invalidValueMessage(type, ['function']), param, 'invalid_value');
  return null;
}

/** Checks a function name: present, a string of 1 to 64 of `a-zA-Z0-9_-`. */
export function checkFunctionName(name: unknown, param: string): ValidationFailure | null {
  if (name === undefined || name === null)
    return fail(missingParameterMessage(param), param, 'missing_required_parameter');
  if (typeof name !== 'string') return fail(invalidTypeMessage(param, 'a string', name), param, 'invalid_type');
  if (name.length === 0) return fail(emptyStringMessage(param), param, 'empty_string');
  if (name.length > MAX_FUNCTION_NAME_LENGTH) {
    return fail(stringTooLongMessage(param, MAX_FUNCTION_NAME_LENGTH, name.length), param, 'string_above_max_length');
  }
  if (!FUNCTION_NAME_PATTERN.test(name)) return fail(namePatternMessage(param), param, 'invalid_value');
  return null;
}

/**
 * Checks an optional number parameter: absent or null, else a number from `min` to `max` (an integer with `integer`),
 * as OpenAI refuses one outside ("Invalid 'temperature': decimal above maximum value. Expected a value <= 2, ...").
 */
export function checkNumberParameter(
  value: unknown,
  param: string,
  range: { min: number; max?: number; integer?: boolean },
): ValidationFailure | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || (range.integer && !Number.isInteger(value)))
    return fail(invalidTypeMessage(param, range.integer ? 'an integer' : 'a number', value), param, 'invalid_type');
  if (value < range.min)
    return fail(outOfRangeMessage(param, 'min', range.min, value), param, outOfRangeCode('min', value));
  if (range.max !== undefined && value > range.max)
    return fail(outOfRangeMessage(param, 'max', range.max, value), param, outOfRangeCode('max', value));
  return null;
}
