/**
 * A Responses answer the model did not finish: `status: 'failed'` with usage,
 * or `incomplete` for another reason than `max_output_tokens` (such as
 * `content_filter`). The provider billed it, so, like a Chat Completions
 * answer that finished on `content_filter`, it is stored as the call's answer
 * and its usage counted once, in the conversation's usage and its budget; a
 * retry would bill it again. What it wrote is kept, followed by a note saying
 * what happened and how to go on; its tool calls are not run (their arguments
 * may be cut short) and its reasoning is not kept (nothing it led to is sent
 * back). A failed response without usage billed nothing: it stays a failed
 * call, retried (`responses-completion.ts`). Pure: no I/O.
 */
import type { Response } from 'openai/resources/responses/responses';
import type { ResponsesAnswerParts } from './responses-answer';

/** Why a response did not finish, when it did not and is an answer all the same; undefined for any other. */
export function stoppedReason(
  response: Pick<Response, 'status' | 'error' | 'incomplete_details' | 'usage'>,
): { status: 'failed'; code: string; message: string } | { status: 'incomplete'; reason: string } | undefined {
  if (response.status === 'failed' && response.usage) {
    return {
      status: 'failed',
      code: response.error?.code ?? 'no code',
      message: response.error?.message ?? 'no message given',
    };
  }
  const reason = response.incomplete_details?.reason;
  if (response.status === 'incomplete' && reason !== 'max_output_tokens') {
    return { status: 'incomplete', reason: reason ?? 'no reason given' };
  }
  return undefined;
}

/** The note that ends a stopped answer: what happened and how to go on. */
export function stoppedNote(stopped: NonNullable<ReturnType<typeof stoppedReason>>, droppedCalls: number): string {
  const calls = droppedCalls > 0 ? ` Its ${droppedCalls} tool call(s) were not run.` : '';
  if (stopped.status === 'failed') {
    return `[The model's response failed (${stopped.code}: ${stopped.message}); its usage was counted and it was not retried.${calls} Send the message again to retry.]`;
  }
  const why =
    stopped.reason === 'content_filter'
      ? "the provider's content filter stopped it (content_filter)"
      : `it stopped early (${stopped.reason})`;
  return `[The model's response is incomplete: ${why}; what it wrote before is kept and its usage was counted.${calls} Rephrase the message and send it again to go on.]`;
}

/** The answer's parts for a stopped response: its text and the note, no tool calls, no reasoning. */
export function stoppedParts(
  parts: ResponsesAnswerParts,
  stopped: NonNullable<ReturnType<typeof stoppedReason>>,
): { parts: ResponsesAnswerParts; note: string } {
  const note = stoppedNote(stopped, parts.toolCalls.length);
  const text = parts.content ?? '';
  const separated = text === '' ? note : `\n\n${note}`;
  return {
    parts: {
      ...parts,
      content: text + separated,
      toolCalls: [],
      reasoning: [],
      finishReason: stopped.status === 'failed' ? 'failed' : stopped.reason,
    },
    note: separated,
  };
}
