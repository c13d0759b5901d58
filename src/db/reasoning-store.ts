/**
 * The reasoning items of answers the Responses API gave, kept encrypted in
 * PostgreSQL beside the answer they belong to (`model_responses.reasoning`,
 * migration 19), never in workflow history. The transcript names each answer
 * by its response key (`conversation_messages.ref_key`): the next call reads
 * them back by that reference and sends them again before the item that
 * followed each one.
 */
import type { Pool } from 'pg';
import type { AgentTables } from './schema';
import { prepared } from './prepared';

/**
 * A reasoning item of a Responses answer, as the API returned it (its
 * `encrypted_content` untouched), and the output item that followed it: the
 * answer's text message, or one of its function calls. The API refuses a
 * reasoning item sent without that item, so it is sent only with it.
 */
export interface ReasoningEntry {
  /** The item as returned: `type: 'reasoning'`, its `id`, `summary` and `encrypted_content`. */
  item: { type: 'reasoning'; id: string; summary: unknown[]; encrypted_content?: string | null } & Record<
    string,
    unknown
  >;
  /** The output item that followed it, by its id (and, for a function call, the call id the transcript uses). */
  before: { type: 'message'; id: string } | { type: 'function_call'; id: string; callId: string };
}

/**
 * The reasoning entries of the answers in a conversation's transcript through
 * `throughSeq`, by the seq of the assistant message each belongs to. An answer
 * a guardrail withheld has none: the note that replaced it is not what the
 * model reasoned towards.
 */
export async function readReasoning(
  pool: Pool,
  tables: AgentTables,
  conversationId: string,
  throughSeq: number,
): Promise<Map<number, ReasoningEntry[]>> {
  const { rows } = await pool.query<{ seq: number; reasoning: ReasoningEntry[] }>(
    prepared(
      `SELECT m.seq, r.reasoning FROM ${tables.conversationMessages} m
         JOIN ${tables.modelResponses} r ON r.response_key = m.ref_key
        WHERE m.conversation_id = $1 AND m.seq <= $2 AND m.role = 'assistant'
          AND r.reasoning IS NOT NULL AND r.guardrail IS NULL`,
      [conversationId, throughSeq],
    ),
  );
  return new Map(
    rows.filter((r) => Array.isArray(r.reasoning) && r.reasoning.length > 0).map((r) => [r.seq, r.reasoning]),
  );
}
