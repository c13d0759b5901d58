/**
 * One request to the Responses API, streamed or not, turned into the same
 * {@link ModelCompletion} a Chat Completions request gives (its tool calls'
 * ids made unique, its usage counted the same way), with the answer's
 * reasoning items beside it to be stored. The stream's text deltas reach
 * clients as the model speaks, as with Chat Completions; the answer itself is
 * the response the stream's last event carries. Failures read as the Chat
 * Completions path's do (`completion.ts`).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { Response, ResponseCreateParamsNonStreaming } from 'openai/resources/responses/responses';
import { ActivityErrorType } from '../../contract/activities';
import type { ModelApi } from '../../contract/model-api';
import { asCancellation, heartbeatWhileRunning } from '../activity-context';
import {
  readModelStream,
  toActivityFailure,
  toCompletion,
  type CompletionOptions,
  type ModelCompletion,
} from '../completion';
import { logger } from '../../common/logger';
import { readResponsesOutput, reasoningEntries } from './responses-answer';
import { stoppedParts, stoppedReason } from './responses-stopped';
import { findResponsesItemProblems, toResponsesRequest } from './responses-request';

/** The API a call speaks: the call's setting (conversation, then agent), else the worker's, else Chat Completions. */
export function modelApiOf(setting: ModelApi | undefined, worker: ModelApi | undefined): ModelApi {
  return setting ?? worker ?? 'chat';
}

/**
 * Sends a fitted Chat Completions body as a Responses request and assembles
 * the answer. Refuses, for good, input that breaks the Responses form of the
 * guarantee (the transcript's own checks make that unreachable). Heartbeats
 * while waiting; stops at once when the activity is cancelled. `keepStopped`
 * is set by the conversation's own model call: a billed response the model did
 * not finish is then its answer, with a note (`responses-stopped.ts`). Without
 * it (a summary, a guardrail's question) the answer is the model's words only,
 * and a failed response fails the call.
 */
export async function requestResponse(
  openai: OpenAI,
  body: ChatCompletionCreateParamsNonStreaming,
  options: CompletionOptions,
  keepStopped = false,
): Promise<ModelCompletion> {
  const request = toResponsesRequest(body);
  const problems = findResponsesItemProblems(request.input as Parameters<typeof findResponsesItemProblems>[0]);
  if (problems.length > 0) {
    throw ApplicationFailure.nonRetryable(
      `Refusing to send Responses API input that breaks the pairing rules: ${JSON.stringify(problems)}`,
      ActivityErrorType.InvalidTranscript,
    );
  }
  const context = Context.current();
  const stopHeartbeats = heartbeatWhileRunning(context);
  try {
    const response = options.stream
      ? await streamed(openai, request, options, keepStopped)
      : await unstreamed(openai, request, keepStopped);
    const stopped = keepStopped ? stoppedReason(response) : undefined;
    let parts = readResponsesOutput(response);
    if (stopped) {
      const settled = stoppedParts(parts, stopped);
      parts = settled.parts;
      logger.warn(
        { responseId: response.id, ...stopped },
        'The model did not finish its response; kept it as the answer',
      );
      // A streamed answer's text reached clients already; the note follows it.
      if (options.stream) options.publisher?.push(settled.note);
    }
    const completion = toCompletion(parts);
    if (!options.stream) options.publisher?.push(completion.message.content ?? '');
    const reasoning = reasoningEntries(parts, completion.message.tool_calls ?? []);
    return reasoning.length > 0 ? { ...completion, reasoning } : completion;
  } catch (err) {
    throw asCancellation(context) ?? err;
  } finally {
    stopHeartbeats();
  }
}

async function unstreamed(
  openai: OpenAI,
  request: ResponseCreateParamsNonStreaming,
  keepStopped: boolean,
): Promise<Response> {
  let response: Response;
  try {
    response = await openai.responses.create(request, { signal: Context.current().cancellationSignal });
  } catch (err) {
    throw toActivityFailure(err);
  }
  return answered(response, keepStopped);
}

/**
 * A failed response is a failed call, retried, unless it was billed (it reports usage) and `keepStopped` makes it the
 * answer (`responses-stopped.ts`). Any other carries an answer (an incomplete one says why in its status).
 */
function answered(response: Response, keepStopped: boolean): Response {
  if (response.status === 'failed' && !(keepStopped && response.usage)) {
    throw ApplicationFailure.retryable(
      `The model's response failed: ${response.error?.message ?? 'no reason given'} (${response.error?.code ?? 'no code'}). Nothing of it was used; the call is retried.`,
      ActivityErrorType.ModelCallFailed,
    );
  }
  return response;
}

async function streamed(
  openai: OpenAI,
  request: ResponseCreateParamsNonStreaming,
  options: CompletionOptions,
  keepStopped: boolean,
): Promise<Response> {
  let last: Response | undefined;
  const events = await readModelStream(
    options,
    'events',
    (signal) => openai.responses.create({ ...request, stream: true }, { signal }),
    (event) => {
      if (event.type === 'response.output_text.delta') options.publisher?.push(event.delta);
      else if (event.type === 'response.completed' || event.type === 'response.incomplete') last = event.response;
      else if (event.type === 'response.failed') last = answered(event.response, keepStopped);
      else if (event.type === 'error') {
        throw ApplicationFailure.retryable(
          `The model stream reported an error: ${event.message} (${event.code ?? 'no code'}). Nothing of it was used.`,
          ActivityErrorType.ModelCallFailed,
        );
      }
    },
  );
  if (!last) {
    throw ApplicationFailure.retryable(
      `The model stream ended after ${events} events without its final event (response.completed). Nothing of it was used.`,
      ActivityErrorType.IncompleteModelResponse,
    );
  }
  return last;
}
