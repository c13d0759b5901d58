/**
 * The third stage of a model call: the request is fitted to the context
 * window and sent (streamed while the model speaks), measured in a span;
 * a refusal as too large is fitted tighter and tried once more; the answer
 * is stored under the call's response key before anything is reported.
 */
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { logger } from '../../common/logger';
import { costOf } from '../../core/pricing';
import { storeModelResponse, type StoredModelResponse } from '../../db/transcript-store';
import { requestCompletion, type CompletionOptions, type ModelCompletion } from '../completion';
import { contextWindowOf } from '../context-budget';
import { withDatabaseRetry } from '../database-retry';
import { modelCallMeasured, modelFailureOutcome } from '../metrics';
import { inSpan } from '../tracing';
import type { ModelEnv, PreparedCall } from './prepare';
import { withFileParts } from './file-parts';
import type { LoadedTranscript } from './read';
import { contextStillExceeded, fittedRequest, smallerWindow, withInstructions, type FittedRequest } from './request';
import type { AnswerStream } from './stream';
import { holdModelSpend, releaseModelSpend } from './spend';
import { withSummary } from './summaries';
import { modelApiOf, requestResponse } from './responses-completion';

/**
 * Asks the model and stores its answer. Any failure of the request ends the
 * stream as failed; a stream that is not held ends as soon as the answer is in.
 */
export async function askModel(
  env: ModelEnv,
  call: PreparedCall,
  read: { transcript: LoadedTranscript; calibration: number },
  answerStream: AnswerStream,
): Promise<StoredModelResponse> {
  const { deps, tables } = env;
  const { input, settings, speaker, responseKey } = call;
  const windowTokens = contextWindowOf(call.model, settings.contextWindow ?? deps.model.contextWindow);
  // With summaries on, earlier turns that no longer fit are sent as their summary (written now when none covers them).
  const outgoing = await withSummary(
    env,
    call,
    withInstructions(read.transcript, speaker),
    read.transcript,
    read.calibration,
    windowTokens,
  ).catch(async (err: unknown) => {
    await answerStream.end(false);
    throw err;
  });
  const streamed =
    settings.stream !== false && call.activity.info.attempt <= (settings.streamFallbackAfterAttempts ?? 2);
  const options = {
    stream: streamed,
    idleTimeoutMs: settings.streamIdleMs ?? 60_000,
    publisher: answerStream.publisher,
  };
  const fit = (window: number) => fittedRequest(call, outgoing, read.calibration, window);
  const first = fit(windowTokens);
  // The budget the call draws on is checked (and its estimate held) only now, when the prompt's size is known.
  const { completion, sent } = await holdModelSpend(
    env,
    call,
    Math.ceil((first.report.promptTokens ?? 0) * read.calibration),
  )
    .then(() => completeWithinWindow(env, call, first, fit, options))
    .catch(async (err: unknown) => {
      await releaseModelSpend(env, call);
      await answerStream.end(false);
      throw err;
    });
  if (!answerStream.held) await answerStream.end(true);
  if (sent.report.truncated.length > 0 || sent.report.elided > 0) {
    logger.info(
      { conversationId: input.conversationId, responseKey, ...sent.report },
      'Fitted the request to the context window',
    );
  }
  if (completion.reassignedIds.length > 0) {
    logger.warn(
      { conversationId: input.conversationId, responseKey, reassigned: completion.reassignedIds },
      'The model sent tool calls with empty or repeated ids in one response; gave them ids of their own',
    );
  }
  return withDatabaseRetry('store the model response', () =>
    storeModelResponse(deps.pool, tables, {
      key: responseKey,
      conversationId: input.conversationId,
      // The transcript names the agent that wrote each answer.
      message: speaker ? { ...completion.message, name: speaker.name } : completion.message,
      finishReason: completion.finishReason,
      usage: completion.usage,
      promptEstimate: sent.report.promptTokens,
      contextBudget: sent.report,
      reasoning: completion.reasoning,
    }),
  );
}

/**
 * Sends `first`; when the provider counts more than the estimate and refuses
 * it as too large, fits to what it says, with room to spare, and tries once
 * more. A second refusal fails the call for good.
 */
async function completeWithinWindow(
  env: ModelEnv,
  call: PreparedCall,
  first: FittedRequest,
  fit: (window: number) => FittedRequest,
  options: CompletionOptions,
): Promise<{ completion: ModelCompletion; sent: FittedRequest }> {
  try {
    return { completion: await completeMeasured(env, call, first.body, options), sent: first };
  } catch (err) {
    const smaller = smallerWindow(err, first.report.windowTokens);
    if (smaller === undefined) throw err;
    logger.warn(
      {
        conversationId: call.input.conversationId,
        responseKey: call.responseKey,
        windowTokens: first.report.windowTokens,
        retryWithin: smaller,
      },
      'The request was over the context window; fitting it tighter and retrying once',
    );
    const tighter = fit(smaller);
    const completion = await completeMeasured(env, call, tighter.body, options).catch((second: unknown) => {
      throw contextStillExceeded(second, tighter.report.windowTokens);
    });
    return { completion, sent: tighter };
  }
}

/** One request to the provider, in a span, measured. */
function completeMeasured(
  { deps, tables }: ModelEnv,
  call: PreparedCall,
  body: ChatCompletionCreateParamsNonStreaming,
  options: CompletionOptions,
): Promise<ModelCompletion> {
  const { model, speaker, activity } = call;
  const streamed = options.stream;
  return inSpan(
    'model call',
    { ...call.spanAttributes, 'agent.streamed': streamed, 'agent.messages': body.messages.length },
    async (span) => {
      const started = Date.now();
      try {
        // A user message's files are read and sent as content parts only now: the fitted body holds their references.
        const sent = await withFileParts(deps.pool, tables, body);
        const done =
          modelApiOf(call.settings.api, deps.model.api) === 'responses'
            ? await requestResponse(deps.model.client, sent, options, true)
            : await requestCompletion(deps.model.client, sent, options);
        const costUsd = costOf(deps.model.prices, model, done.usage);
        modelCallMeasured({
          model,
          agent: speaker?.name,
          outcome: 'ok',
          streamed,
          ms: Date.now() - started,
          usage: done.usage,
          costUsd,
        });
        span.setAttributes({
          'agent.outcome': 'ok',
          'agent.prompt_tokens': done.usage?.promptTokens ?? 0,
          'agent.completion_tokens': done.usage?.completionTokens ?? 0,
          'agent.tool_calls': done.message.tool_calls?.length ?? 0,
          ...(costUsd === undefined ? {} : { 'agent.cost_usd': costUsd }),
        });
        return done;
      } catch (err) {
        const outcome = modelFailureOutcome(err, activity.cancellationSignal.aborted);
        modelCallMeasured({ model, agent: speaker?.name, outcome, streamed, ms: Date.now() - started });
        span.setAttribute('agent.outcome', outcome);
        throw err;
      }
    },
  );
}
