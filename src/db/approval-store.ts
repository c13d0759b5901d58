/**
 * The tool calls waiting for a person, in PostgreSQL (`pending_approvals`):
 * what approvers' lists (`AgentClient.pendingApprovals`, `GET /v1/approvals`,
 * the inbox page, the CLI's `pending`) read, so they need no search
 * attribute of the namespace.
 *
 * A row is written in the transaction that stores the assistant message
 * asking for the call (the workflow's write before a wait for a person
 * carries the waiting calls). It leaves when the call's decision is recorded
 * or when a tool message answering the call is stored, whichever activity
 * stores it: triggers of migration 9 delete it in that same transaction.
 * Rows of a conversation that was terminated while a call waited stay: the
 * readers keep only conversations Temporal says are running.
 */
import type { Pool, PoolClient } from 'pg';
import type { AppendMessagesInput, ApprovalRequest } from '../contract/activities';
import type { DecisionKind } from '../contract/decisions';
import type { WaitingCall, WaitingPolicy } from '../contract/waiting-calls';
import type { AgentTables } from './schema';
import { appendMessages, insertMessages, writeScope } from './transcript-store';
import { recordDecision } from './decision-store';
import { describeRefusal, isRefusedValue } from './errors';
import { logger } from '../common/logger';
import { inTransaction } from './transaction';

/**
 * Stores messages as `appendMessages` does; when the write names calls that
 * now wait for a person (`input.waiting`), lists them in the same
 * transaction, so a listed call's message is always readable. When
 * PostgreSQL refuses a value, nothing of the transaction stays, and
 * `appendMessages` stores what it can and names the seqs it refused (the
 * workflow then writes notes in their place, listing the calls with them);
 * when it refused only the list, the messages are stored and the calls are
 * left out of approvers' lists, with a warning.
 */
export async function appendMessagesListingWaits(
  pool: Pool,
  tables: AgentTables,
  input: AppendMessagesInput,
  runId?: string,
): Promise<void> {
  const waiting = input.waiting ?? [];
  const ruled = input.ruled ?? [];
  if (waiting.length === 0 && ruled.length === 0) return appendMessages(pool, tables, input, runId);
  try {
    await inTransaction(pool, async (client) => {
      await insertMessages(client, tables, input.conversationId, input.messages, writeScope(input, runId));
      if (waiting.length > 0) await listWaitingCalls(client, tables, input.conversationId, waiting);
      for (const record of ruled) await recordDecision(client, tables, record, runId);
    });
  } catch (err) {
    if (!isRefusedValue(err)) throw err;
    // Stores what it can, naming the seqs PostgreSQL refused; when it refused none, it refused the list.
    await appendMessages(pool, tables, input, runId);
    for (const record of ruled) await recordDecision(pool, tables, record, runId);
    logger.warn(
      { conversationId: input.conversationId, calls: waiting.map((w) => w.callKey), error: describeRefusal(err) },
      "PostgreSQL refused to list calls waiting for a person: they wait, shown in the conversation's state, but not in approvers' lists",
    );
  }
}

/**
 * Lists the calls of one batch as waiting. Every other row of the
 * conversation goes: a conversation has one batch open at a time, so any
 * other is stale (a reset run, an id reused after retention). A call whose
 * decision is recorded or whose tool message is stored already (a late
 * attempt of this write) is not listed again; a decision a reset superseded
 * (one the abandoned run made on a call at the same key) does not count. Takes the conversation's lock
 * that the removal triggers take, so a decision recorded at the same moment
 * is seen, or removes what this wrote.
 */
async function listWaitingCalls(
  client: PoolClient,
  tables: AgentTables,
  conversationId: string,
  waiting: readonly ApprovalRequest[],
): Promise<void> {
  await client.query("SELECT pg_advisory_xact_lock(hashtext('durable-agent-worker.approvals:' || $1))", [
    conversationId,
  ]);
  await client.query(
    `DELETE FROM ${tables.pendingApprovals} WHERE conversation_id = $1 AND NOT (call_key = ANY ($2::text[]))`,
    [conversationId, waiting.map((w) => w.callKey)],
  );
  await client.query(
    `INSERT INTO ${tables.pendingApprovals}
            (conversation_id, call_key, tool_call_id, tool_name, assistant_seq, call_index, requested_at, requested_by, root_conversation_id, agent_path, decisions, policy)
     SELECT $1, w.call_key, w.tool_call_id, w.tool_name, w.assistant_seq, w.call_index, to_timestamp(w.requested_at / 1000.0), w.requested_by,
            w.root_conversation_id, w.agent_path, w.decisions, w.policy
       FROM jsonb_array_elements($2::jsonb) AS e,
            LATERAL (SELECT e ->> 'callKey' AS call_key, e ->> 'toolCallId' AS tool_call_id, e ->> 'toolName' AS tool_name,
                            (e ->> 'assistantSeq')::int AS assistant_seq, (e ->> 'callIndex')::int AS call_index,
                            (e ->> 'requestedAt')::float8 AS requested_at,
                            ARRAY(SELECT jsonb_array_elements_text(e -> 'requestedBy')) AS requested_by,
                            e ->> 'rootConversationId' AS root_conversation_id,
                            CASE WHEN e ? 'agentPath' THEN ARRAY(SELECT jsonb_array_elements_text(e -> 'agentPath')) END AS agent_path,
                            CASE WHEN e ? 'decisions' THEN ARRAY(SELECT jsonb_array_elements_text(e -> 'decisions')) END AS decisions,
                            (e -> 'policy') - 'approvedBy' AS policy) AS w
      WHERE NOT EXISTS (SELECT 1 FROM ${tables.approvalDecisions} d
                         WHERE d.conversation_id = $1 AND w.call_key = ANY (d.call_keys) AND d.superseded_at IS NULL AND NOT d.call_still_waits)
        AND NOT EXISTS (SELECT 1 FROM ${tables.conversationMessages} m
                         WHERE m.conversation_id = $1 AND m.seq > w.assistant_seq AND m.role = 'tool' AND m.message ->> 'tool_call_id' = w.tool_call_id)
     ON CONFLICT (conversation_id, call_key) DO UPDATE SET
       tool_call_id = EXCLUDED.tool_call_id, tool_name = EXCLUDED.tool_name, assistant_seq = EXCLUDED.assistant_seq,
       call_index = EXCLUDED.call_index, requested_at = EXCLUDED.requested_at, requested_by = EXCLUDED.requested_by,
       root_conversation_id = EXCLUDED.root_conversation_id, agent_path = EXCLUDED.agent_path, decisions = EXCLUDED.decisions,
       policy = EXCLUDED.policy`,
    [conversationId, JSON.stringify(waiting)],
  );
}

/** Narrows {@link readWaitingCalls}; every filter is optional. */
export interface WaitingCallFilter {
  /** Calls of this conversation, or of agents it called as tools (at any depth). */
  conversationId?: string;
  toolName?: string;
  /** Calls of turns this subject sent messages in. */
  requestedBy?: string;
  /** Calls asked for at this time or before. */
  requestedBefore?: Date;
}

/**
 * A listed call, with the arguments read from the message that asked for it:
 * the contract's waiting call as PostgreSQL holds it (a `Date`, the raw JSON
 * arguments as the model sent them, no age). `decisions` is absent for calls
 * listed before it was kept (approve or reject).
 */
export type ListedCall = Omit<WaitingCall<Date>, 'arguments' | 'ageMs'> & { arguments: string };

/**
 * The listed calls, oldest first, each with its arguments from the stored
 * assistant message that asked for it: one query. Includes rows of
 * conversations that no longer run; callers keep the running ones.
 */
export async function readWaitingCalls(
  pool: Pool,
  tables: AgentTables,
  filter: WaitingCallFilter = {},
): Promise<ListedCall[]> {
  const { rows } = await pool.query<{
    conversation_id: string;
    call_key: string;
    tool_call_id: string;
    tool_name: string;
    arguments: string | null;
    requested_at: Date;
    requested_by: string[];
    root_conversation_id: string | null;
    agent_path: string[] | null;
    decisions: DecisionKind[] | null;
    policy: Omit<WaitingPolicy, 'approvedBy'> | null;
    approved_by: string[] | null;
  }>(
    `SELECT p.conversation_id, p.call_key, p.tool_call_id, p.tool_name, p.requested_at, p.requested_by, p.root_conversation_id, p.agent_path, p.decisions,
            m.message -> 'tool_calls' -> p.call_index -> 'function' ->> 'arguments' AS arguments, p.policy,
            CASE WHEN p.policy IS NOT NULL THEN ARRAY(
              SELECT d.decided_by FROM ${tables.approvalDecisions} d
               WHERE d.conversation_id = p.conversation_id AND p.call_key = ANY (d.call_keys) AND d.call_still_waits
                 AND d.superseded_at IS NULL AND d.decided_by IS NOT NULL
               ORDER BY d.decided_at) END AS approved_by
       FROM ${tables.pendingApprovals} p
       JOIN ${tables.conversationMessages} m ON m.conversation_id = p.conversation_id AND m.seq = p.assistant_seq
      WHERE ($1::text IS NULL OR p.conversation_id = $1 OR p.root_conversation_id = $1)
        AND ($2::text IS NULL OR p.tool_name = $2)
        AND ($3::text IS NULL OR $3 = ANY (p.requested_by))
        AND ($4::timestamptz IS NULL OR p.requested_at <= $4)
      ORDER BY p.requested_at, p.conversation_id, p.call_index`,
    [
      filter.conversationId ?? null,
      filter.toolName ?? null,
      filter.requestedBy ?? null,
      filter.requestedBefore ?? null,
    ],
  );
  return rows.map((r) => ({
    conversationId: r.conversation_id,
    callKey: r.call_key,
    toolCallId: r.tool_call_id,
    toolName: r.tool_name,
    arguments: r.arguments ?? '',
    requestedAt: r.requested_at,
    requestedBy: r.requested_by,
    rootConversationId: r.root_conversation_id ?? r.conversation_id,
    agentPath: r.agent_path ?? [],
    ...(r.decisions ? { decisions: r.decisions } : {}),
    ...(r.policy ? { policy: { ...r.policy, approvedBy: r.approved_by ?? [] } } : {}),
  }));
}
