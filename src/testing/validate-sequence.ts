/**
 * The rules across messages: every tool call answered once, by a tool message
 * right after its assistant message; and DeepSeek's thinking-mode rules.
 *
 * @packageDocumentation
 */

import {
  DEEPSEEK_TOOL_CALLS_NOT_ANSWERED_MESSAGE,
  duplicateToolCallIdMessage,
  ORPHAN_TOOL_MESSAGE,
  REASONING_CONTENT_REQUIRED_MESSAGE,
  THINKING_TOOL_CHOICE_MESSAGE,
  toolCallsNotAnsweredMessage,
} from './provider-errors';
import type { ModelServerDialect, ValidationFailure } from './types';
import { deepseekFail, fail, isObject } from './validate-fields';

interface OpenToolCalls {
  assistantIndex: number;
  ids: string[];
  answeredAt: Map<string, number>;
}

/** Checks that each tool call is answered, once, by the tool messages that follow its assistant message. */
export function checkSequence(
  messages: Record<string, unknown>[],
  dialect: ModelServerDialect,
): ValidationFailure | null {
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

/**
 * DeepSeek thinking mode: no forced tool choice, and the current turn's tool-calling messages keep their
 * `reasoning_content`.
 */
export function checkThinkingMode(
  body: Record<string, unknown>,
  messages: Record<string, unknown>[],
): ValidationFailure | null {
  const toolChoice = body.tool_choice;
  if (toolChoice === 'required' || isObject(toolChoice)) return deepseekFail(THINKING_TOOL_CHOICE_MESSAGE);

  let lastUser = -1;
  messages.forEach((message, i) => {
    if (message.role === 'user') lastUser = i;
  });
  for (let i = lastUser + 1; i < messages.length; i++) {
    const message = messages[i];
    if (
      message.role === 'assistant' &&
      Array.isArray(message.tool_calls) &&
      typeof message.reasoning_content !== 'string'
    ) {
      return deepseekFail(REASONING_CONTENT_REQUIRED_MESSAGE);
    }
  }
  return null;
}
