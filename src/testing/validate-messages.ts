/**
 * The shape checks of each chat message: its role and name, its content,
 * an assistant message's tool calls and a tool message's answer.
 *
 * @packageDocumentation
 */

import {
  ASSISTANT_CONTENT_NULL_MESSAGE,
  emptyArrayMessage,
  emptyStringMessage,
  invalidTypeMessage,
  invalidValueMessage,
  MAX_TOOL_CALL_ID_LENGTH,
  missingParameterMessage,
  namePatternMessage,
  stringTooLongMessage,
  VALID_ROLES,
} from './provider-errors';
import type { ValidationFailure } from './types';
import { checkContentParts } from './validate-content-parts';
import { checkFunctionName, checkFunctionType, fail, isObject } from './validate-fields';

/** Checks `messages[i]`: an object with a known role, then the fields its role requires. */
export function checkMessage(message: unknown, i: number): ValidationFailure | null {
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
    if (typeof message.name !== 'string')
      return fail(invalidTypeMessage(`${at}.name`, 'a string', message.name), `${at}.name`, 'invalid_type');
    if (!/^[a-zA-Z0-9_-]+$/.test(message.name))
      return fail(namePatternMessage(`${at}.name`), `${at}.name`, 'invalid_value');
  }

  switch (role) {
    case 'assistant':
      return checkAssistantMessage(message, i);
    case 'tool':
      return checkToolMessage(message, i);
    default:
      return (
        checkContent(message.content, `${at}.content`) ?? checkContentParts(message.content, `${at}.content`, role)
      );
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
      return fail(
        invalidTypeMessage(`${at}.tool_calls`, 'an array of objects', toolCalls),
        `${at}.tool_calls`,
        'invalid_type',
      );
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
    return fail(
      invalidTypeMessage(`${at}.content`, 'one of a string or array of objects', content),
      `${at}.content`,
      'invalid_type',
    );
  }
  return checkContentParts(content, `${at}.content`, 'assistant');
}

function checkToolCall(call: unknown, at: string): ValidationFailure | null {
  if (!isObject(call)) return fail(invalidTypeMessage(at, 'an object', call), at, 'invalid_type');

  const id = call.id;
  const idParam = `${at}.id`;
  if (id === undefined || id === null)
    return fail(missingParameterMessage(idParam), idParam, 'missing_required_parameter');
  if (typeof id !== 'string') return fail(invalidTypeMessage(idParam, 'a string', id), idParam, 'invalid_type');
  if (id.length === 0) return fail(emptyStringMessage(idParam), idParam, 'empty_string');
  if (id.length > MAX_TOOL_CALL_ID_LENGTH) {
    return fail(stringTooLongMessage(idParam, MAX_TOOL_CALL_ID_LENGTH, id.length), idParam, 'string_above_max_length');
  }

  const typeFailure = checkFunctionType(call.type, `${at}.type`);
  if (typeFailure) return typeFailure;

  const fn = call.function;
  const fnParam = `${at}.function`;
  if (fn === undefined || fn === null)
    return fail(missingParameterMessage(fnParam), fnParam, 'missing_required_parameter');
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
  if (id === undefined || id === null)
    return fail(missingParameterMessage(idParam), idParam, 'missing_required_parameter');
  if (typeof id !== 'string') return fail(invalidTypeMessage(idParam, 'a string', id), idParam, 'invalid_type');

  const content = message.content;
  const contentParam = `${at}.content`;
  if (content === undefined) {
    return fail(missingParameterMessage(contentParam), contentParam, 'missing_required_parameter');
  }
  if (typeof content === 'string') return null;
  if (!Array.isArray(content)) {
    return fail(
      invalidTypeMessage(contentParam, 'one of a string or array of objects', content),
      contentParam,
      'invalid_type',
    );
  }
  if (content.length === 0) return fail(emptyArrayMessage(contentParam), contentParam, 'empty_array');
  for (let k = 0; k < content.length; k++) {
    const part = content[k];
    const partParam = `${contentParam}[${k}]`;
    if (!isObject(part)) return fail(invalidTypeMessage(partParam, 'an object', part), partParam, 'invalid_type');
    if (part.type === undefined || part.type === null) {
      return fail(missingParameterMessage(`${partParam}.type`), `${partParam}.type`, 'missing_required_parameter');
    }
    if (part.type !== 'text')
      return fail(invalidValueMessage(part.type, ['text']), `${partParam}.type`, 'invalid_value');
    if (part.text === undefined || part.text === null) {
      return fail(missingParameterMessage(`${partParam}.text`), `${partParam}.text`, 'missing_required_parameter');
    }
    if (typeof part.text !== 'string') {
      return fail(invalidTypeMessage(`${partParam}.text`, 'a string', part.text), `${partParam}.text`, 'invalid_type');
    }
  }
  return null;
}
