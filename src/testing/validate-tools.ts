/**
 * The checks of a request's `tools`, `tool_choice` and `parallel_tool_calls`:
 * the last two only with tools. A tool sent with `strict: true` must have
 * parameters strict mode takes, else OpenAI's 400 "Invalid schema for
 * function '<name>': ..." (src/common/strict-schema.ts).
 *
 * @packageDocumentation
 */

import {
  arrayTooLongMessage,
  emptyArrayMessage,
  invalidTypeMessage,
  invalidValueMessage,
  MAX_TOOLS,
  missingParameterMessage,
  PARALLEL_TOOL_CALLS_WITHOUT_TOOLS_MESSAGE,
  TOOL_CHOICE_VALUES,
  TOOL_CHOICE_WITHOUT_TOOLS_MESSAGE,
} from './provider-errors';
import type { ValidationFailure } from './types';
import { checkFunctionName, checkFunctionType, fail, isObject } from './validate-fields';
import { strictSchemaProblem } from '../common/strict-schema';

/** Checks the request's tools and the parameters that go with them. */
export function checkTools(body: Record<string, unknown>): ValidationFailure | null {
  const tools = body.tools;
  const hasTools = tools !== undefined && tools !== null;
  if (hasTools) {
    if (!Array.isArray(tools))
      return fail(invalidTypeMessage('tools', 'an array of objects', tools), 'tools', 'invalid_type');
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
      if (!isObject(fn))
        return fail(invalidTypeMessage(`${at}.function`, 'an object', fn), `${at}.function`, 'invalid_type');
      const nameFailure = checkFunctionName(fn.name, `${at}.function.name`);
      if (nameFailure) return nameFailure;
      const strictFailure = checkStrictFunction(fn, `${at}.function`);
      if (strictFailure) return strictFailure;
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
        return fail(
          missingParameterMessage('tool_choice.function'),
          'tool_choice.function',
          'missing_required_parameter',
        );
      }
      if (!isObject(fn)) {
        return fail(
          invalidTypeMessage('tool_choice.function', 'an object', fn),
          'tool_choice.function',
          'invalid_type',
        );
      }
      const nameFailure = checkFunctionName(fn.name, 'tool_choice.function.name');
      if (nameFailure) return nameFailure;
    } else {
      return fail(
        invalidTypeMessage('tool_choice', 'one of a string or object', toolChoice),
        'tool_choice',
        'invalid_type',
      );
    }
  }

  const parallel = body.parallel_tool_calls;
  if (parallel !== undefined && parallel !== null) {
    if (!hasTools) return fail(PARALLEL_TOOL_CALLS_WITHOUT_TOOLS_MESSAGE, 'parallel_tool_calls');
    if (typeof parallel !== 'boolean') {
      return fail(
        invalidTypeMessage('parallel_tool_calls', 'a boolean', parallel),
        'parallel_tool_calls',
        'invalid_type',
      );
    }
  }
  return null;
}

/**
 * A function sent with `strict: true`: a boolean `strict`, and parameters in the subset strict mode takes (OpenAI's
 * wording and code).
 */
function checkStrictFunction(fn: Record<string, unknown>, at: string): ValidationFailure | null {
  const strict = fn.strict;
  if (strict === undefined || strict === null || strict === false) return null;
  if (strict !== true)
    return fail(invalidTypeMessage(`${at}.strict`, 'a boolean', strict), `${at}.strict`, 'invalid_type');
  // Without parameters a function takes no arguments: nothing for strict mode to refuse.
  if (fn.parameters === undefined || fn.parameters === null) return null;
  const problem = strictSchemaProblem(fn.parameters);
  return problem
    ? fail(
        `Invalid schema for function '${String(fn.name)}': ${problem}`,
        `${at}.parameters`,
        'invalid_function_parameters',
      )
    : null;
}
