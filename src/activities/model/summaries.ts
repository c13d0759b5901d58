/**
 * Summaries of earlier turns, for conversations and agents with `model.contextOverflow: 'summarize'`: when the
 * request would leave earlier turns out to fit the context window, the model call sends a summary of them instead.
 *
 * The summary is written by the model (a request of its own: not streamed, no tools, the call's model), stored in
 * PostgreSQL with the seq range it replaces and what it cost (`src/db/context-summaries.ts`), and used again by
 * later calls and by a retried attempt; when more must be left out, the stored summary is extended (the model is
 * sent it with the messages that follow). The transcript is never changed: operators, the API and the CLI read
 * every message. What summary requests cost is held, recorded and reported as `summary-spend.ts` says: in the
 * budget's ledger before and after each request, and in the result of the call (`ModelCallResult.summary`), so the
 * workflow counts it once; a replay reads that result from history and asks no model.
 */
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { logger } from '../../common/logger';
import { countTokens } from '../../common/tokens';
import type { ChatMessage } from '../../contract/messages';
import type { TokenUsage } from '../../contract/turn-records';
import { costOf } from '../../core/pricing';
import type { FollowingCall } from '../../db/budget-ledger';
import { readSummaries, storeSummary, summaryLedgerKey, type StoredSummary } from '../../db/context-summaries';
import { requestCompletion } from '../completion';
import { withDatabaseRetry } from '../database-retry';
import {
  chunkEnds,
  currentTurnStart,
  digestOf,
  isTurnBoundary,
  renderMessage,
  summaryMaxTokens,
  summaryNote,
  summaryRequestMessages,
  summaryStart,
  turnBoundaryAtOrBefore,
} from '../summary-range';
import type { ModelEnv, PreparedCall } from './prepare';
import type { LoadedTranscript } from './read';
import { fittedRequest, type OutgoingMessages } from './request';
import { modelApiOf, requestResponse } from './responses-completion';
import {
  holdSummarySpend,
  recordSummarySpend,
  releaseSummarySpend,
  servedCall,
  summaryPromptTokens,
} from './summary-spend';

/** Tokens of the note's own words around a summary, with room to spare. */
const NOTE_TOKENS = 64;

/**
 * The messages to send with earlier turns replaced by their summary, when the call summarises and the window
 * calls for it; otherwise `outgoing` unchanged (then the fitting leaves turns out, as by default). Writes (or
 * extends) the summary when no stored one covers what must be left out.
 */
export async function withSummary(
  env: ModelEnv,
  call: PreparedCall,
  outgoing: OutgoingMessages,
  transcript: LoadedTranscript,
  calibration: number,
  windowTokens: number,
): Promise<OutgoingMessages> {
  if (call.settings.contextOverflow !== 'summarize') return outgoing;
  const { messages } = outgoing;
  // Without the seqs (a transcript repaired after an interruption) a summary cannot be named: the turns are left out.
  const seqs = seqsOf(outgoing, transcript);
  if (!seqs) return outgoing;
  const start = summaryStart(messages);
  const elidedWithin = (window: number) =>
    fittedRequest(call, outgoing, calibration, Math.max(1, window)).report.elided;
  const boundary = (elided: number) => turnBoundaryAtOrBefore(messages, start + elided);
  // Summaries start only when the window calls for it: when the request would leave turns out.
  const unsummarised = fittedRequest(call, outgoing, calibration, windowTokens).report;
  if (unsummarised.elided === 0) return outgoing;
  const maxTokens = summaryMaxTokens(windowTokens);
  // A summary must cover what is left out once the summary itself takes its room in the window.
  const neededEnd = boundary(elidedWithin(windowTokens - maxTokens - NOTE_TOKENS));
  if (neededEnd === undefined) return outgoing;
  // A new one covers more (a quarter of the window's worth of turns more), so the next calls can use it as it is.
  const ahead = boundary(elidedWithin(windowTokens - maxTokens - NOTE_TOKENS - Math.floor(windowTokens / 4)));
  const targetEnd = Math.max(neededEnd, ahead ?? neededEnd);

  const stored = await withDatabaseRetry('read the stored summaries', () =>
    readSummaries(env.deps.pool, env.tables, call.input.conversationId, seqs[start], seqs[currentTurnStart(messages)]),
  );
  // The longest stored summary of these very messages: used as it is when it covers enough, else extended.
  const usable = longestUsable(stored, messages, seqs, start);
  const summary =
    usable && usable.end >= neededEnd
      ? usable
      : await writeSummary(
          env,
          call,
          {
            messages,
            seqs,
            start,
            targetEnd,
            calibration,
            windowTokens,
            // The call the summary is written for, at its estimate with the turns left out: a summary it could not
            // be made after is not written.
            serves: servedCall(
              call,
              env,
              Math.ceil((unsummarised.promptTokens ?? unsummarised.boundTokens ?? 0) * calibration),
            ),
          },
          usable,
        );
  if (!summary) return outgoing;
  const { s, end } = summary;
  return {
    messages: [
      ...messages.slice(0, start),
      summaryNote(s.summary, s.fromSeq, s.throughSeq, windowTokens),
      ...messages.slice(end),
    ],
    ...(outgoing.seqs ? { seqs: [...outgoing.seqs.slice(0, start), s.throughSeq, ...outgoing.seqs.slice(end)] } : {}),
    ...(outgoing.handoffFilter ? { handoffFilter: outgoing.handoffFilter } : {}),
    pinned: start + 1,
    summary: { fromSeq: s.fromSeq, throughSeq: s.throughSeq },
  };
}

interface Range {
  messages: ChatMessage[];
  seqs: number[];
  /** The first message a summary replaces. */
  start: number;
  /** The turn boundary the new summary ends at (exclusive). */
  targetEnd: number;
  calibration: number;
  windowTokens: number;
  /** The call the summary is written for, checked with each summary request against the budget. */
  serves: FollowingCall | undefined;
}

/**
 * Writes the summary of `[start, targetEnd)`, extending `base` when there is one: run by run of whole turns that
 * fit the window, each run stored as it is done (a retry goes on from the last one). Undefined when the model
 * wrote nothing (the turns are then left out).
 */
async function writeSummary(
  env: ModelEnv,
  call: PreparedCall,
  range: Range,
  base: { s: StoredSummary; end: number } | undefined,
): Promise<{ s: StoredSummary; end: number } | undefined> {
  const { messages, seqs, start, targetEnd } = range;
  const window = range.windowTokens;
  const maxTokens = summaryMaxTokens(window);
  // The summary request holds its instructions, the summary so far and the messages, and leaves room for the reply.
  const inputTokens = Math.max(
    256,
    Math.floor((window - 2 * maxTokens - Math.ceil(window * 0.02) - 400) / Math.max(1, range.calibration)),
  );
  const perMessage = Math.max(64, Math.floor(inputTokens / 4));
  const tokensOf = (k: number) => 4 + countTokens(renderMessage(messages[k], seqs[k], perMessage));
  let done = base;
  for (const end of chunkEnds(messages, base?.end ?? start, targetEnd, tokensOf, inputTokens)) {
    const from = done?.end ?? start;
    // A turn larger than the request alone has its messages clipped further.
    const runTokens = Array.from({ length: end - from }, (_, i) => tokensOf(from + i)).reduce((a, b) => a + b, 0);
    const clipTo = runTokens > inputTokens ? Math.max(32, Math.floor(inputTokens / (end - from)) - 16) : perMessage;
    const text = messages
      .slice(from, end)
      .map((m, i) => renderMessage(m, seqs[from + i], clipTo))
      .join('\n');
    const request = summaryRequestMessages(
      done?.s,
      { text, fromSeq: seqs[from], throughSeq: seqs[end - 1] },
      maxTokens,
    );
    const row = {
      conversationId: call.input.conversationId,
      fromSeq: seqs[start],
      throughSeq: seqs[end - 1],
      digest: digestOf(messages.slice(start, end)),
      model: call.model,
      responseKey: call.responseKey,
    };
    const held = summaryLedgerKey(row);
    const promptTokens = summaryPromptTokens(request, range.calibration);
    await holdSummarySpend(env, call, held, { promptTokens, maxTokens }, range.serves);
    const written = await summarise(env, call, request, maxTokens).catch(async (err: unknown) => {
      // Refused, a server error, a broken connection: no usage is reported and nothing is billed.
      await releaseSummarySpend(env, call, held);
      throw err;
    });
    const spent = {
      ...(written.usage ? { usage: written.usage } : {}),
      ...(written.costUsd !== undefined ? { costUsd: written.costUsd } : {}),
    };
    if (written.text === '') {
      // Spent without a summary: kept under a digest of its own (never sent), so the call reports what it cost.
      if (written.usage) {
        const attempt = call.activity.info.attempt;
        const unused = { ...row, ...spent, digest: `${row.digest}/unused/${call.responseKey}/${attempt}`, summary: '' };
        const kept = await withDatabaseRetry('store what the summary request spent', () =>
          storeSummary(env.deps.pool, env.tables, unused),
        );
        await recordSummarySpend(env, call, kept);
      }
      await releaseSummarySpend(env, call, held);
      return done;
    }
    const s = await withDatabaseRetry('store the summary', () =>
      storeSummary(env.deps.pool, env.tables, { ...row, ...spent, summary: written.text }),
    );
    await recordSummarySpend(env, call, s);
    logger.info(
      {
        conversationId: call.input.conversationId,
        responseKey: call.responseKey,
        fromSeq: s.fromSeq,
        throughSeq: s.throughSeq,
        usage: s.usage,
      },
      'Summarised earlier messages to fit the context window',
    );
    done = { s, end };
  }
  return done;
}

/**
 * One summary request: not streamed, no tools, the call's model. Its text is empty when the model wrote nothing
 * (what it spent is still returned).
 */
async function summarise(
  env: ModelEnv,
  call: PreparedCall,
  messages: ChatMessage[],
  maxTokens: number,
): Promise<{ text: string; usage?: TokenUsage; costUsd?: number }> {
  const body: ChatCompletionCreateParamsNonStreaming = {
    model: call.model,
    messages: messages as ChatCompletionCreateParamsNonStreaming['messages'],
    max_tokens: maxTokens,
    ...(call.settings.temperature !== undefined ? { temperature: call.settings.temperature } : {}),
  };
  const options = { stream: false, idleTimeoutMs: call.settings.streamIdleMs ?? 60_000 };
  // Asked on the API the call itself speaks (a model served only by the Responses API is summarised there too).
  const done =
    modelApiOf(call.settings.api, env.deps.model.api) === 'responses'
      ? await requestResponse(env.deps.model.client, body, options)
      : await requestCompletion(env.deps.model.client, body, options);
  const text = (done.message.content ?? '').trim();
  if (text === '') {
    logger.warn(
      {
        conversationId: call.input.conversationId,
        responseKey: call.responseKey,
        finishReason: done.finishReason,
        usage: done.usage,
      },
      'The model wrote an empty summary; earlier turns are left out instead',
    );
  }
  const costUsd = costOf(env.deps.model.prices, call.model, done.usage);
  return { text, ...(done.usage ? { usage: done.usage } : {}), ...(costUsd !== undefined ? { costUsd } : {}) };
}

/**
 * The longest of `stored` (longest first) that ends at a turn boundary of `messages` and was written from the same
 * messages (its digest matches); digests are computed only until one matches.
 */
function longestUsable(
  stored: StoredSummary[],
  messages: ChatMessage[],
  seqs: number[],
  start: number,
): { s: StoredSummary; end: number } | undefined {
  for (const s of stored) {
    const end = seqs.indexOf(s.throughSeq) + 1;
    if (isTurnBoundary(messages, end) && digestOf(messages.slice(start, end)) === s.digest) return { s, end };
  }
  return undefined;
}

/**
 * The transcript seq of each message sent, when known: the call's own, or the transcript's behind agent
 * instructions put first (-1 for them: they are never summarised).
 */
function seqsOf(outgoing: OutgoingMessages, transcript: LoadedTranscript): number[] | undefined {
  if (outgoing.seqs && outgoing.seqs.length === outgoing.messages.length) return outgoing.seqs;
  const behindInstructions =
    !outgoing.handoffFilter &&
    transcript.seqs !== undefined &&
    outgoing.messages.length === transcript.messages.length + 1 &&
    outgoing.messages[0]?.role === 'system';
  return behindInstructions ? [-1, ...transcript.seqs!] : undefined;
}
