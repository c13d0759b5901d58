/**
 * The Responses API's side of the stored transcripts: the reasoning items kept
 * with answers (`model_responses.reasoning`, src/db/reasoning-store.ts). Each
 * must hold the encrypted content the model gave and name an item its answer
 * still has (its text, or one of its tool calls by the id the transcript
 * gives it), or it could never be sent back with what followed it. Answers a
 * guardrail withheld are left out, as the worker leaves their reasoning out.
 */
import type { Pool } from 'pg';
import type { ChatMessage } from '../../src/contract/messages';
import type { ReasoningEntry } from '../../src/db/reasoning-store';

/** What the stored reasoning of a run's conversations holds. */
export interface StoredReasoning {
  /** Answers stored with reasoning items. */
  answers: number;
  /** Reasoning items stored. */
  items: number;
  /** Conversations (sub-agents and forks among them) with reasoning that could not be sent back as stored. */
  broken: Set<string>;
  /** One line per such reasoning item. */
  problems: string[];
}

/** Reads the reasoning stored with the answers of the conversations whose ids start with `prefix`, and checks it. */
export async function checkStoredReasoning(pool: Pool, prefix: string): Promise<StoredReasoning> {
  const { rows } = await pool.query<{ conversation_id: string; seq: number; message: ChatMessage; reasoning: unknown }>(
    `SELECT m.conversation_id, m.seq, m.message, r.reasoning
       FROM durable_agent.conversation_messages m
       JOIN durable_agent.model_responses r ON r.response_key = m.ref_key
      WHERE m.conversation_id LIKE $1 AND m.role = 'assistant' AND r.reasoning IS NOT NULL AND r.guardrail IS NULL`,
    [`${prefix}%`],
  );
  const found: StoredReasoning = { answers: 0, items: 0, broken: new Set(), problems: [] };
  for (const row of rows) {
    if (!Array.isArray(row.reasoning) || row.reasoning.length === 0) continue;
    found.answers++;
    for (const entry of row.reasoning as ReasoningEntry[]) {
      found.items++;
      const problem = entryProblem(row.message, entry);
      if (problem) {
        found.broken.add(row.conversation_id);
        found.problems.push(`stored reasoning: ${row.conversation_id} seq ${row.seq}: ${problem}`);
      }
    }
  }
  return found;
}

/** Why a stored reasoning entry could not be sent back with its answer; undefined when it can. */
function entryProblem(message: ChatMessage, entry: ReasoningEntry): string | undefined {
  const id = String(entry.item?.id);
  if (entry.item?.type !== 'reasoning') return `an entry that is not a reasoning item (${String(entry.item?.type)})`;
  if (typeof entry.item.encrypted_content !== 'string' || entry.item.encrypted_content === '')
    return `reasoning ${id} kept without its encrypted content`;
  if (message.role !== 'assistant') return `reasoning ${id} kept with a ${message.role} message`;
  const before = entry.before;
  if (before?.type === 'message') {
    const text = typeof message.content === 'string' ? message.content : '';
    return text === '' ? `reasoning ${id} before the answer's text, and the answer has none` : undefined;
  }
  if (before?.type === 'function_call') {
    return (message.tool_calls ?? []).some((c) => c.id === before.callId)
      ? undefined
      : `reasoning ${id} before call ${before.callId}, which the answer does not have`;
  }
  return `reasoning ${id} names no item it preceded`;
}
