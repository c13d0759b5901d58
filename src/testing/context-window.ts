/**
 * The scripted model server's context window: how many tokens a request's
 * prompt holds, counted as a provider does (message contents, tool calls and
 * tool definitions with the o200k tokenizer, plus a few tokens of framing per
 * message; in pieces, like the worker, see `src/common/tokens.ts`; an image
 * part at a fixed share, see `content-tokens.ts`), and
 * OpenAI's exact answer when it is over the window.
 */
import { countTokens } from '../common/tokens';
import { contentTokens } from './content-tokens';
import type { ProviderErrorBody } from './types';
import { errorBody } from './validate';

/** Framing tokens per message (role and separators), as OpenAI's chat format adds them. */
const TOKENS_PER_MESSAGE = 4;
/** Tokens that prime every reply. */
const REPLY_PRIMING_TOKENS = 3;

/** The prompt tokens of a chat completions request body. */
export function countPromptTokens(body: { messages?: unknown; tools?: unknown }): number {
  const messages = Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : [];
  let tokens = REPLY_PRIMING_TOKENS;
  for (const message of messages) {
    tokens += TOKENS_PER_MESSAGE;
    tokens += contentTokens(message.content);
    for (const field of ['reasoning_content', 'name'] as const) {
      const value = message[field];
      if (typeof value === 'string') tokens += countTokens(value);
    }
    if (message.tool_calls !== undefined) tokens += countTokens(JSON.stringify(message.tool_calls));
  }
  if (body.tools !== undefined) tokens += countTokens(JSON.stringify(body.tools));
  return tokens;
}

/** OpenAI's 400 body for a request over the context window. */
export function contextLengthExceededBody(windowTokens: number, promptTokens: number): ProviderErrorBody {
  return errorBody(
    `This model's maximum context length is ${windowTokens} tokens. However, your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`,
    'invalid_request_error',
    'messages',
    'context_length_exceeded',
  );
}
