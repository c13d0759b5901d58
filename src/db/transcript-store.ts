/**
 * Message bodies in PostgreSQL: the workflow appends, the model activity and
 * readers read. Each function takes the project's tables (`agentTables`), in
 * the schema the worker was configured with.
 */
import type { Pool, PoolClient } from 'pg';
import type { AgentTables } from './schema';
import type { ChatMessage } from '../contract/messages';
import type { GuardrailTrip, TokenUsage } from '../contract';
import type { AppendEntry, AppendMessagesInput, AssistantMessage } from '../contract/activities';
import { toStorableText, toStorableValue } from '../contract/text';
import { describeRefusal, isRefusedValue, ValuesRefusedError } from './errors';
import { prepared } from './prepared';
import { DisplacedRunError, fenceStoppedAnswer, type WriteScope } from './superseded';

export { DisplacedRunError, readSuperseded, type SupersededMessage, type WriteScope } from './superseded';

/** A stored message with its position. */
export interface StoredMessage {
  seq: number;
  message: ChatMessage;
  createdAt: Date;
}

/**
 * Stores messages at their seqs in one statement (so all or none). Upsert:
 * an activity retried after it already wrote writes the same rows again. A
 * message given by reference takes its body from the model response or tool
 * result an activity stored under that key. Text PostgreSQL cannot store is
 * replaced with U+FFFD first (`src/contract/text.ts`). `runId` is the writing
 * workflow run's, and with `input.supersedeFrom` says what leaves the live
 * transcript first ({@link insertMessages}).
 *
 * When PostgreSQL refuses a value (a reference to nothing, a constraint),
 * each message is written alone and a {@link ValuesRefusedError} names the
 * seqs it refused; the others are stored.
 */
export async function appendMessages(
  pool: Pool,
  tables: AgentTables,
  input: AppendMessagesInput,
  runId?: string,
): Promise<void> {
  const scope = writeScope(input, runId);
  if (input.messages.length === 0 && scope.supersedeFrom === undefined) return;
  try {
    await insertMessages(pool, tables, input.conversationId, input.messages, scope);
  } catch (err) {
    if (!isRefusedValue(err)) throw err;
    const refused: { seq: number; error: string }[] = [];
    if (scope.supersedeFrom !== undefined) await insertMessages(pool, tables, input.conversationId, [], scope);
    for (const entry of input.messages) {
      try {
        await insertMessages(pool, tables, input.conversationId, [entry], { runId: scope.runId });
      } catch (one) {
        if (!isRefusedValue(one)) throw one;
        refused.push({ seq: entry.seq, error: describeRefused(entry, one) });
      }
    }
    if (refused.length === 0) throw err; // refused together, stored one by one: nothing is missing
    throw new ValuesRefusedError(
      `PostgreSQL refused to store message${refused.length === 1 ? '' : 's'} ${refused.map((r) => r.seq).join(', ')} of conversation ${input.conversationId}: ${refused[0].error}`,
      refused.map((r) => r.seq),
    );
  }
}

/** The {@link WriteScope} of a write by the workflow run `runId`. */
export function writeScope(
  input: Pick<AppendMessagesInput, 'supersedeFrom' | 'supersedeReason'>,
  runId?: string,
): WriteScope {
  return {
    ...(runId !== undefined ? { runId } : {}),
    ...(input.supersedeFrom !== undefined ? { supersedeFrom: input.supersedeFrom } : {}),
    ...(input.supersedeReason !== undefined ? { supersedeReason: input.supersedeReason } : {}),
  };
}

/** Why one message was refused, in words: a reference to nothing says so, anything else in PostgreSQL's words. */
function describeRefused(entry: AppendEntry, err: unknown): string {
  // A missing reference leaves the message NULL, which the NOT NULL column refuses.
  if ('ref' in entry && (err as { code?: string }).code === '23502')
    return `nothing is stored under its reference (${entry.ref.kind} ${entry.ref.key})`;
  return describeRefusal(err);
}

/**
 * The upsert of {@link appendMessages}, for the given entries, in one
 * statement (also inside a transaction of the caller's), text made storable
 * first; a refused value fails it whole.
 *
 * The same statement keeps the live transcript the writing run's own:
 * - the first write of a run (`scope.runId` new for this conversation: the
 *   run after a continue-as-new, or after a reset) marks the runs before it
 *   displaced and supersedes every live message at or after its first seq
 *   (after a reset: what the abandoned run wrote past the reset point; after a
 *   continue-as-new: nothing);
 * - `scope.supersedeFrom` supersedes every live message from that seq on;
 * - superseded messages move to `superseded_messages`, with the reason and
 *   the run, unless the write stores the same message at the same seq;
 * - a run's first write also supersedes the decisions recorded on calls from
 *   its first seq on (after a reset: the abandoned run's, made after the reset
 *   point), so they neither hide the calls the new run asks for at the same
 *   seqs from approvers' lists nor mark them decided;
 * - a write of a displaced run stores nothing and throws {@link DisplacedRunError};
 * - a model call's write of its own answer (`scope.ownAnswer`) stores nothing
 *   when its run stopped the call first: a write superseding for reason
 *   `stopped` sets that fence (`fenceStoppedAnswer`) before it supersedes.
 *
 * Returns false when the write was fenced that way, true otherwise.
 */
export async function insertMessages(
  db: Pool | PoolClient,
  tables: AgentTables,
  conversationId: string,
  messages: readonly AppendEntry[],
  scope: WriteScope = {},
): Promise<boolean> {
  const params: unknown[] = [conversationId];
  const param = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  const rows = messages.map((entry) => {
    const seq = param(entry.seq);
    if (!('ref' in entry)) {
      const body = param(JSON.stringify(toStorableValue(entry.message).value));
      return `SELECT ${seq}::int, ${body}::jsonb ->> 'role', ${body}::jsonb, NULL::text`;
    }
    const key = param(entry.ref.key);
    if (entry.ref.kind === 'model_response')
      return `SELECT ${seq}::int, 'assistant', (SELECT message FROM ${tables.modelResponses} WHERE response_key = ${key}), ${key}::text`;
    const toolCallId = param(toStorableText(entry.ref.toolCallId));
    return entry.ref.kind === 'agent_answer'
      ? `SELECT ${seq}::int, 'tool', (SELECT jsonb_build_object('role', 'tool', 'tool_call_id', ${toolCallId}::text, 'content', coalesce(message ->> 'content', ''))
           FROM ${tables.modelResponses} WHERE response_key = ${key}), ${key}::text`
      : `SELECT ${seq}::int, 'tool', (SELECT jsonb_build_object('role', 'tool', 'tool_call_id', ${toolCallId}::text, 'content', content)
           FROM ${tables.toolResults} WHERE idempotency_key = ${key}), ${key}::text`;
  });
  const written =
    rows.length > 0 ? rows.join(' UNION ALL ') : 'SELECT NULL::int, NULL::text, NULL::jsonb, NULL::text WHERE false';
  if (scope.runId === undefined && scope.supersedeFrom === undefined) {
    if (rows.length === 0) return true;
    await db.query(
      prepared(
        `INSERT INTO ${tables.conversationMessages} (conversation_id, seq, role, message, ref_key)
         SELECT $1, seq, role, message, ref_key FROM (${written}) AS written (seq, role, message, ref_key)
         ON CONFLICT (conversation_id, seq) DO UPDATE SET role = EXCLUDED.role, message = EXCLUDED.message, ref_key = EXCLUDED.ref_key`,
        params,
      ),
    );
    return true;
  }
  // A turn stopped during its model call: that call's own write of its answer is fenced off first, in a statement of
  // its own, so the supersede below (a new snapshot) sees an answer written while the fence waited for it.
  if (scope.supersedeReason === 'stopped' && scope.supersedeFrom !== undefined && scope.runId !== undefined)
    await fenceStoppedAnswer(db, tables, conversationId, scope.runId, scope.supersedeFrom);
  const run = param(scope.runId ?? null);
  const firstSeq = param(messages.length > 0 ? Math.min(...messages.map((m) => m.seq)) : null);
  const supersedeFrom = param(scope.supersedeFrom ?? null);
  const supersedeReason = param(scope.supersedeReason ?? 'regenerate');
  const ownAnswerAt = param(scope.ownAnswer && messages.length === 1 ? messages[0].seq : null);
  // Every part reads the rows as they were before the statement: a live row is either archived and deleted, or
  // archived and overwritten by the upsert, never changed twice.
  const { rows: result } = await db.query<{ displaced: boolean; fenced: boolean }>(
    prepared(
      `WITH written (seq, role, message, ref_key) AS (${written}),
     known AS (SELECT displaced_at FROM ${tables.transcriptRuns} WHERE conversation_id = $1 AND run_id = ${run}),
     displaced AS (SELECT 1 FROM known WHERE displaced_at IS NOT NULL),
     fence AS (
       SELECT stopped_answer_seq FROM ${tables.transcriptRuns}
        WHERE ${ownAnswerAt}::int IS NOT NULL AND conversation_id = $1 AND run_id = ${run} FOR UPDATE),
     fenced AS (SELECT 1 FROM fence WHERE stopped_answer_seq = ${ownAnswerAt}::int),
     first_write AS (
       INSERT INTO ${tables.transcriptRuns} (conversation_id, run_id) SELECT $1, ${run}::text
        WHERE ${run}::text IS NOT NULL AND NOT EXISTS (SELECT 1 FROM known)
       ON CONFLICT (conversation_id, run_id) DO NOTHING RETURNING run_id),
     displacing AS (
       UPDATE ${tables.transcriptRuns} SET displaced_at = now()
        WHERE conversation_id = $1 AND run_id <> ${run}::text AND displaced_at IS NULL AND EXISTS (SELECT 1 FROM first_write)),
     cut (from_seq, reason) AS (
       SELECT CASE WHEN EXISTS (SELECT 1 FROM first_write) THEN ${firstSeq}::int END, 'reset'
        UNION ALL SELECT ${supersedeFrom}::int, ${supersedeReason}::text),
     cut_at AS (SELECT from_seq, reason FROM cut WHERE from_seq IS NOT NULL AND NOT EXISTS (SELECT 1 FROM displaced)
                ORDER BY from_seq LIMIT 1),
     archived AS (
       INSERT INTO ${tables.supersededMessages} (conversation_id, seq, role, message, created_at, reason, superseded_by_run, ref_key)
       SELECT m.conversation_id, m.seq, m.role, m.message, m.created_at, c.reason, ${run}::text, m.ref_key
         FROM ${tables.conversationMessages} m, cut_at c
        WHERE m.conversation_id = $1 AND m.seq >= c.from_seq
          AND NOT EXISTS (SELECT 1 FROM written w WHERE w.seq = m.seq AND w.message = m.message)),
     removed AS (
       DELETE FROM ${tables.conversationMessages} m USING cut_at c
        WHERE m.conversation_id = $1 AND m.seq >= c.from_seq AND NOT EXISTS (SELECT 1 FROM written w WHERE w.seq = m.seq)),
     undecided AS (
       UPDATE ${tables.approvalDecisions} d SET superseded_at = now() FROM cut_at c
        WHERE c.reason = 'reset' AND d.conversation_id = $1 AND d.superseded_at IS NULL
          AND EXISTS (SELECT 1 FROM unnest(d.call_keys) AS k (key)
                       WHERE substring(k.key FROM '/msg-([0-9]+)/call-[0-9]+$')::int >= c.from_seq)),
     stored AS (
       INSERT INTO ${tables.conversationMessages} (conversation_id, seq, role, message, ref_key)
       SELECT $1, seq, role, message, ref_key FROM written WHERE NOT EXISTS (SELECT 1 FROM displaced)
          AND NOT EXISTS (SELECT 1 FROM fenced)
       ON CONFLICT (conversation_id, seq) DO UPDATE SET role = EXCLUDED.role, message = EXCLUDED.message, ref_key = EXCLUDED.ref_key)
     SELECT EXISTS (SELECT 1 FROM displaced) AS displaced, EXISTS (SELECT 1 FROM fenced) AS fenced`,
      params,
    ),
  );
  if (result[0]?.displaced) throw new DisplacedRunError(conversationId, scope.runId ?? '');
  return !result[0]?.fenced;
}

/** Reads a conversation's messages in order, through `throughSeq` (all when unset). */
export async function readTranscript(
  pool: Pool,
  tables: AgentTables,
  conversationId: string,
  throughSeq?: number,
): Promise<StoredMessage[]> {
  const { rows } = await pool.query<TranscriptRow>(
    prepared(
      `SELECT seq, message, created_at FROM ${tables.conversationMessages}
        WHERE conversation_id = $1 AND ($2::int IS NULL OR seq <= $2)
        ORDER BY seq`,
      [conversationId, throughSeq ?? null],
    ),
  );
  return rows.map(fromTranscriptRow);
}

/** Reads at most `limit` of a conversation's messages in order, those after seq `after`. */
export async function readTranscriptPage(
  pool: Pool,
  tables: AgentTables,
  conversationId: string,
  after: number,
  limit: number,
): Promise<StoredMessage[]> {
  const { rows } = await pool.query<TranscriptRow>(
    `SELECT seq, message, created_at FROM ${tables.conversationMessages}
      WHERE conversation_id = $1 AND seq > $2
      ORDER BY seq LIMIT $3`,
    [conversationId, after, limit],
  );
  return rows.map(fromTranscriptRow);
}

/** The messages stored at the given seqs of the given conversations, in one round trip (missing ones are left out). */
export async function readMessagesAt(
  pool: Pool,
  tables: AgentTables,
  at: readonly { conversationId: string; seq: number }[],
): Promise<(StoredMessage & { conversationId: string })[]> {
  if (at.length === 0) return [];
  const { rows } = await pool.query<TranscriptRow & { conversation_id: string }>(
    `SELECT m.conversation_id, m.seq, m.message, m.created_at
       FROM ${tables.conversationMessages} m
       JOIN unnest($1::text[], $2::int[]) AS wanted(conversation_id, seq) USING (conversation_id, seq)`,
    [at.map((a) => a.conversationId), at.map((a) => a.seq)],
  );
  return rows.map((r) => ({ conversationId: r.conversation_id, ...fromTranscriptRow(r) }));
}

interface TranscriptRow {
  seq: number;
  message: ChatMessage;
  created_at: Date;
}

function fromTranscriptRow(r: TranscriptRow): StoredMessage {
  return { seq: r.seq, message: r.message, createdAt: r.created_at };
}

/**
 * Stores a tool result under its idempotency key. The first stored result
 * wins and is returned, so every attempt of a call reports the same result
 * (a late attempt cannot replace what the workflow already recorded). Text
 * PostgreSQL cannot store is replaced with U+FFFD (the result returned is the stored one).
 */
export async function storeToolResult(
  pool: Pool,
  tables: AgentTables,
  result: { idempotencyKey: string; conversationId: string; toolCallId: string; toolName: string; content: string },
): Promise<string> {
  const row = toStorableValue(result).value;
  const { rows } = await pool.query<{ content: string }>(
    prepared(
      `WITH inserted AS (
         INSERT INTO ${tables.toolResults} (idempotency_key, conversation_id, tool_call_id, tool_name, content) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (idempotency_key) DO NOTHING RETURNING content)
       SELECT content FROM inserted UNION ALL SELECT content FROM ${tables.toolResults} WHERE idempotency_key = $1 LIMIT 1`,
      [row.idempotencyKey, row.conversationId, row.toolCallId, row.toolName, row.content],
    ),
  );
  return rows[0].content;
}

/** A model response as stored by the model activity. */
export interface StoredModelResponse {
  message: AssistantMessage;
  finishReason: string | null;
  usage?: TokenUsage;
  /** The guardrail that stopped the turn at this response (`message` is then its note). */
  guardrail?: GuardrailTrip;
}

/** A model response stored by the model activity, if one is stored under `key`. */
export async function findModelResponse(
  pool: Pool,
  tables: AgentTables,
  key: string,
): Promise<StoredModelResponse | undefined> {
  const { rows } = await pool.query<ModelResponseRow>(
    `SELECT message, finish_reason, usage, guardrail FROM ${tables.modelResponses} WHERE response_key = $1`,
    [key],
  );
  return rows[0] ? fromModelResponseRow(rows[0]) : undefined;
}

/**
 * What a model call reads of `model_responses` before it asks the model, in
 * one round trip: the response an earlier attempt stored under `key`, if any,
 * and the conversation's prompt calibration: how many prompt tokens the
 * provider counted per token the worker estimated, in its most recent
 * response that has both (1 when none has); the worker's estimate is scaled by
 * it next time.
 */
export async function readModelCallState(
  pool: Pool,
  tables: AgentTables,
  key: string,
  conversationId: string,
): Promise<{ earlier?: StoredModelResponse; calibration: number }> {
  const { rows } = await pool.query<Partial<ModelResponseRow> & { found: boolean; ratio: number | null }>(
    prepared(
      `SELECT r.response_key IS NOT NULL AS found, r.message, r.finish_reason, r.usage, r.guardrail, c.ratio
         FROM (SELECT 1) AS one
         LEFT JOIN ${tables.modelResponses} r ON r.response_key = $1
         LEFT JOIN LATERAL (
           SELECT (usage ->> 'promptTokens')::float / prompt_estimate AS ratio FROM ${tables.modelResponses}
            WHERE conversation_id = $2 AND usage IS NOT NULL AND prompt_estimate > 0
            ORDER BY created_at DESC LIMIT 1) c ON true`,
      [key, conversationId],
    ),
  );
  const row = rows[0];
  const ratio = row?.ratio;
  const calibration = typeof ratio === 'number' && Number.isFinite(ratio) && ratio > 0 ? ratio : 1;
  return row?.found ? { earlier: fromModelResponseRow(row as ModelResponseRow), calibration } : { calibration };
}

/** A `model_responses` row as read back. */
interface ModelResponseRow {
  message: AssistantMessage;
  finish_reason: string | null;
  usage: TokenUsage | null;
  guardrail: (GuardrailTrip & { withheld?: string }) | null;
}

function fromModelResponseRow(row: ModelResponseRow): StoredModelResponse {
  const trip = row.guardrail
    ? { guardrail: { on: row.guardrail.on, guardrail: row.guardrail.guardrail, reason: row.guardrail.reason } }
    : {};
  return { message: row.message, finishReason: row.finish_reason, ...(row.usage ? { usage: row.usage } : {}), ...trip };
}

/**
 * Stores a model response under `key`, with its usage, the worker's estimate
 * of the prompt's tokens and what the context budget did; the first stored
 * response wins and is returned. Text PostgreSQL cannot store (in the
 * answer, its reasoning, its tool calls) is replaced with U+FFFD: the
 * response returned is the one stored, which the conversation goes on with.
 */
export async function storeModelResponse(
  pool: Pool,
  tables: AgentTables,
  response: StoredModelResponse & {
    key: string;
    conversationId: string;
    promptEstimate?: number;
    contextBudget?: unknown;
    /** The Responses API's reasoning items of the answer (`reasoning-store.ts`); never read back with it. */
    reasoning?: unknown[];
  },
): Promise<StoredModelResponse> {
  const row = toStorableValue(response).value;
  const { rows } = await pool.query<ModelResponseRow>(
    prepared(
      `WITH inserted AS (
       INSERT INTO ${tables.modelResponses} (response_key, conversation_id, message, finish_reason, usage, prompt_estimate, context_budget, guardrail, reasoning)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (response_key) DO NOTHING RETURNING message, finish_reason, usage, guardrail)
     SELECT message, finish_reason, usage, guardrail FROM inserted
     UNION ALL SELECT message, finish_reason, usage, guardrail FROM ${tables.modelResponses} WHERE response_key = $1 LIMIT 1`,
      [
        row.key,
        row.conversationId,
        JSON.stringify(row.message),
        row.finishReason,
        row.usage ? JSON.stringify(row.usage) : null,
        row.promptEstimate ?? null,
        row.contextBudget === undefined ? null : JSON.stringify(row.contextBudget),
        row.guardrail ? JSON.stringify(row.guardrail) : null,
        row.reasoning?.length ? JSON.stringify(row.reasoning) : null,
      ],
    ),
  );
  return fromModelResponseRow(rows[0]);
}

/**
 * An output guardrail withheld the answer stored under `key`: the stored
 * message becomes `note` (what the transcript, clients and the model read
 * from now on), and the answer is kept beside the trip (`guardrail.withheld`)
 * for operators. Idempotent: a response already withheld is returned as stored.
 */
export async function withholdModelResponse(
  pool: Pool,
  tables: AgentTables,
  key: string,
  note: AssistantMessage,
  trip: GuardrailTrip,
): Promise<StoredModelResponse> {
  const { rows } = await pool.query<ModelResponseRow>(
    `UPDATE ${tables.modelResponses}
        SET guardrail = jsonb_build_object('on', $2::text, 'guardrail', $3::text, 'reason', $4::text, 'withheld', message ->> 'content'),
            message = $5
      WHERE response_key = $1 AND guardrail IS NULL
      RETURNING message, finish_reason, usage, guardrail`,
    [key, trip.on, trip.guardrail, toStorableText(trip.reason), JSON.stringify(toStorableValue(note).value)],
  );
  if (rows[0]) return fromModelResponseRow(rows[0]);
  const stored = await findModelResponse(pool, tables, key);
  if (!stored) throw new Error(`No model response is stored under ${key}: nothing to withhold.`);
  return stored;
}

/**
 * The stored model responses under `keys` (their messages as the transcript will hold them), in one round trip; missing
 * ones are left out.
 */
export async function readModelResponses(
  pool: Pool,
  tables: AgentTables,
  keys: readonly string[],
): Promise<Map<string, AssistantMessage>> {
  if (keys.length === 0) return new Map();
  const { rows } = await pool.query<{ response_key: string; message: AssistantMessage }>(
    `SELECT response_key, message FROM ${tables.modelResponses} WHERE response_key = ANY($1::text[])`,
    [keys],
  );
  return new Map(rows.map((r) => [r.response_key, r.message]));
}
