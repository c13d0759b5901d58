/**
 * Pure validation of Chat Completions requests, answering like a real
 * provider would (the rules and bodies are described in
 * docs/provider-protocol.md). The checks live beside it by concern
 * (`validate-messages.ts`, `validate-tools.ts`, `validate-response-format.ts`,
 * `validate-sequence.ts`); the words of each answer in `provider-errors.ts`.
 *
 * @packageDocumentation
 */

import {
  BODY_NOT_OBJECT_MESSAGE,
  emptyArrayMessage,
  invalidTypeMessage,
  missingParameterMessage,
  MODEL_REQUIRED_MESSAGE,
  STREAM_OPTIONS_WITHOUT_STREAM_MESSAGE,
} from './provider-errors';
import type { ModelServerDialect, ValidationFailure } from './types';
import { checkNumberParameter, fail, isObject } from './validate-fields';
import { checkMessage } from './validate-messages';
import { checkResponseFormat } from './validate-response-format';
import { checkSequence, checkThinkingMode } from './validate-sequence';
import { checkTools } from './validate-tools';

export {
  arrayTooLongMessage,
  ASSISTANT_CONTENT_NULL_MESSAGE,
  BODY_NOT_OBJECT_MESSAGE,
  DEEPSEEK_TOOL_CALLS_NOT_ANSWERED_MESSAGE,
  duplicateToolCallIdMessage,
  emptyArrayMessage,
  emptyStringMessage,
  errorBody,
  FUNCTION_NAME_PATTERN,
  INVALID_JSON_MESSAGE,
  invalidTypeMessage,
  invalidValueMessage,
  MAX_FUNCTION_NAME_LENGTH,
  MAX_TOOL_CALL_ID_LENGTH,
  MAX_TOOLS,
  missingParameterMessage,
  MODEL_REQUIRED_MESSAGE,
  namePatternMessage,
  ORPHAN_TOOL_MESSAGE,
  outOfRangeCode,
  outOfRangeMessage,
  PARALLEL_TOOL_CALLS_WITHOUT_TOOLS_MESSAGE,
  REASONING_CONTENT_REQUIRED_MESSAGE,
  STREAM_OPTIONS_WITHOUT_STREAM_MESSAGE,
  stringTooLongMessage,
  THINKING_TOOL_CHOICE_MESSAGE,
  TOOL_CALLS_NOT_ANSWERED_PREFIX,
  TOOL_CHOICE_VALUES,
  TOOL_CHOICE_WITHOUT_TOOLS_MESSAGE,
  toolCallsNotAnsweredMessage,
  VALID_ROLES,
} from './provider-errors';

/**
 * Checks a Chat Completions request body the way a real provider does.
 *
 * Shape checks run first (body, `model`, `messages`, each message, `tools`,
 * `tool_choice`, `parallel_tool_calls`, `stream_options`, `response_format`,
 * the ranges of `temperature`, `top_p` and the token limits), then the
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

  const rangeFailure =
    checkNumberParameter(body.temperature, 'temperature', { min: 0, max: 2 }) ??
    checkNumberParameter(body.top_p, 'top_p', { min: 0, max: 1 }) ??
    checkNumberParameter(body.max_tokens, 'max_tokens', { min: 1, integer: true }) ??
    checkNumberParameter(body.max_completion_tokens, 'max_completion_tokens', { min: 1, integer: true });
  if (rangeFailure) return rangeFailure;

  const sequenceFailure = checkSequence(messages as Record<string, unknown>[], dialect);
  if (sequenceFailure) return sequenceFailure;

  if (dialect === 'deepseek-thinking') return checkThinkingMode(body, messages as Record<string, unknown>[]);
  return null;
}
