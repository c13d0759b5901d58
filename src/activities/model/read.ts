/**
 * The second stage of a model call: the messages the workflow deferred are
 * written, then the transcript is read together with what an earlier attempt
 * left (its answer, if it got one); on a turn's first call, the turn's user
 * messages meet the input guardrails.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Pool } from 'pg';
import { ActivityErrorType, type ModelCallInput } from '../../contract/activities';
import type { ChatMessage } from '../../contract/messages';
import type { GuardrailResult } from '../../contract/guardrail-results';
import { applyPairingRepair, findPairingProblems, type PairingItem } from '../../core/pairing';
import type { AgentTables } from '../../db/schema';
import {
  appendMessages,
  DisplacedRunError,
  readModelCallState,
  readTranscript,
  storeModelResponse,
  type StoredModelResponse,
} from '../../db/transcript-store';
import { withDatabaseRetry } from '../database-retry';
import { writingRun } from '../activity-context';
import { asStoreFailure } from '../store-failures';
import { firstTrip, guardrailNote } from '../guardrails';
import { readReasoning } from '../../db/reasoning-store';
import { modelApiOf } from './responses-completion';
import { withStoredReasoning } from './responses-request';
import type { ModelEnv, PreparedCall } from './prepare';

/** The messages a call sends (repaired when the workflow says so), with their seqs when nothing was repaired. */
export interface LoadedTranscript {
  messages: ChatMessage[];
  seqs?: number[];
  /** On a turn's first call, the text of the turn's user messages, for the input guardrails. */
  turnInput?: string[];
}

/**
 * What the read found: the answer an earlier attempt stored (the transcript
 * is then not needed), or the transcript with the provider's calibration.
 */
export type TranscriptRead =
  { earlier: StoredModelResponse } | { earlier?: undefined; transcript: LoadedTranscript; calibration: number };

/**
 * Writes the deferred messages, then reads the transcript and the call's state
 * at once: the transcript is wasted only on a retry whose earlier attempt
 * stored its answer. A failed read of the state fails the call first.
 */
export async function readForModelCall({ deps, tables }: ModelEnv, call: PreparedCall): Promise<TranscriptRead> {
  const { input, responseKey } = call;
  const deferred = input.append ?? [];
  if (deferred.length > 0) {
    await withDatabaseRetry('store the messages before the model call', () =>
      appendMessages(deps.pool, tables, { conversationId: input.conversationId, messages: deferred }, writingRun()),
    ).catch((err: unknown) => {
      throw err instanceof DisplacedRunError ? asStoreFailure(err) : err;
    });
  }
  const [state, read] = await Promise.allSettled([
    withDatabaseRetry('read a stored model response', () =>
      readModelCallState(deps.pool, tables, responseKey, input.conversationId),
    ),
    withDatabaseRetry('read the transcript', () =>
      loadModelMessages(deps.pool, tables, input, modelApiOf(call.settings.api, deps.model.api) === 'responses'),
    ),
  ]);
  if (state.status === 'rejected') throw state.reason;
  const { earlier, calibration } = state.value;
  if (earlier) return { earlier };
  if (read.status === 'rejected') throw read.reason;
  return { transcript: read.value, calibration };
}

/**
 * On a turn's first call, its user messages meet the input guardrails before
 * the model is asked; what each said is returned (`results`). When one trips,
 * no model is asked: its note is the turn's answer, stored like one so a
 * retry finds it, and returned (`stopped`).
 */
export async function stopAtInputGuardrails(
  { deps, tables }: ModelEnv,
  call: PreparedCall,
  transcript: LoadedTranscript,
): Promise<{ stopped?: StoredModelResponse; results: GuardrailResult[] }> {
  const { guards, speaker } = call;
  if (!transcript.turnInput || guards.input.length === 0) return { results: [] };
  const { trip, results } = await firstTrip(
    'input',
    guards.input,
    { messages: transcript.turnInput },
    call.guardContext,
  );
  if (!trip) return { results };
  const note = {
    key: call.responseKey,
    conversationId: call.input.conversationId,
    message: guardrailNote(trip, speaker?.name),
    finishReason: 'guardrail',
    guardrail: trip,
  };
  const stopped = await withDatabaseRetry('store the guardrail note', () =>
    storeModelResponse(deps.pool, tables, note),
  );
  return { stopped, results };
}

/**
 * Reads the transcript (for the Responses API, with the reasoning items stored with each answer), applies the
 * workflow's repair, and refuses to send anything invalid.
 */
async function loadModelMessages(
  pool: Pool,
  tables: AgentTables,
  input: ModelCallInput,
  withReasoning: boolean,
): Promise<LoadedTranscript> {
  const [stored, reasoning] = await Promise.all([
    readTranscript(pool, tables, input.conversationId, input.throughSeq),
    withReasoning ? readReasoning(pool, tables, input.conversationId, input.throughSeq) : undefined,
  ]);
  if (stored.length !== input.throughSeq + 1) {
    throw ApplicationFailure.retryable(
      `Conversation ${input.conversationId}: PostgreSQL holds ${stored.length} messages through seq ${input.throughSeq}, expected ${input.throughSeq + 1}.`,
      ActivityErrorType.TranscriptIncomplete,
    );
  }
  const omit = new Set(input.omitSeqs);
  const messages = applyPairingRepair(
    stored.map((s) => withStoredReasoning(s.message, reasoning?.get(s.seq))),
    {
      problems: [],
      omit: stored.flatMap((s, i) => (omit.has(s.seq) ? [i] : [])),
      synthesize: input.synthesized.map((s) => ({ afterIndex: s.afterSeq, toolCallId: s.toolCallId })),
    },
    (toolCallId): ChatMessage => ({
      role: 'tool',
      tool_call_id: toolCallId,
      content: input.synthesized.find((s) => s.toolCallId === toolCallId)?.content ?? '',
    }),
    (m) => m.role === 'tool',
  );
  const problems = findPairingProblems(messages.map(pairingItem));
  if (problems.length > 0) {
    throw ApplicationFailure.nonRetryable(
      `Conversation ${input.conversationId}: refusing to send a transcript that breaks the tool-call pairing rules: ${JSON.stringify(problems)}`,
      ActivityErrorType.InvalidTranscript,
    );
  }
  // The seq of each message, for the context budget's markers (when nothing was repaired, they line up).
  const repaired = input.omitSeqs.length > 0 || input.synthesized.length > 0;
  const fromSeq = input.turnFromSeq;
  const turnInput =
    fromSeq === undefined
      ? undefined
      : stored.flatMap((s) => (s.seq >= fromSeq && s.message.role === 'user' ? [s.message.content] : []));
  return { messages, seqs: repaired ? undefined : stored.map((s) => s.seq), ...(turnInput ? { turnInput } : {}) };
}

function pairingItem(m: ChatMessage): PairingItem {
  if (m.role === 'assistant') return { role: m.role, callIds: m.tool_calls?.map((c) => c.id) };
  if (m.role === 'tool') return { role: m.role, answers: m.tool_call_id };
  return { role: m.role };
}
