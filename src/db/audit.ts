/**
 * The audit export's reads: every decision recorded in `approval_decisions`
 * in a time range, a person's or an approval policy's rule's own, as
 * {@link AuditRecord}s in order of `decided_at` (then decision id and
 * conversation), a page at a time (keyset pagination on the index by time,
 * so memory stays bounded and a late page costs what an early one does).
 *
 * Each decided call is completed with its tool and the model's arguments,
 * read from the assistant message that asked for it: the call key names its
 * seq and position (`<conversation>[/regen-<n>]/msg-<seq>/call-<index>`).
 * That message is in the live transcript, or, when a reset or a regenerated
 * turn took it out since, in `superseded_messages` (`superseded.ts`); where
 * several messages have held that seq, the one holding the call when it was
 * decided is taken.
 */
import type { Pool } from 'pg';
import type { AuditCall, AuditRecord } from '../audit/record';
import type { AuditRange } from '../audit/range';
import type { ApprovalDecision, DecisionKind } from '../contract/decisions';
import type { AgentTables } from './schema';

/** How many records a page holds at most. */
export const AUDIT_PAGE_ROWS = 500;

interface DecisionRow {
  conversation_id: string;
  decision_id: string;
  decision: DecisionKind;
  tool_call_ids: string[];
  call_keys: string[] | null;
  reason: string | null;
  decided_by: string | null;
  decided_at: Date;
  /** `decided_at` to the microsecond, UTC, without zone: the page's cursor (a `Date` keeps milliseconds). */
  cursor_at: string;
  via: 'signal' | 'update' | 'policy' | 'grant';
  authenticated: boolean | null;
  arguments: unknown;
  model_arguments: unknown;
  response: string | null;
  run_id: string | null;
  superseded_at: Date | null;
  rule: string | null;
  decider_groups: string[] | null;
  call_still_waits: boolean;
  signed_decision: ApprovalDecision | null;
  grant_id: string | null;
  grant_amount: string | null;
  given_tool: string | null;
  given_rule: string | null;
  given_expires_at: Date | null;
  given_max_calls: number | null;
  given_amount_argument: string | null;
  given_max_amount: string | null;
  given_revoked_at: Date | null;
  given_revoked_by: string | null;
  given_revoke_reason: string | null;
}

/** An assistant message that has held a seq: live (no `superseded_at`), or taken out of the transcript since. */
interface MessageRow {
  conversation_id: string;
  seq: number;
  tool_calls: { id?: string; function?: { name?: string; arguments?: string } }[] | null;
  created_at: Date;
  superseded_at: Date | null;
  reason: string | null;
}

/**
 * The records of the decisions made in `range` (`from` included, `to` excluded), a page of at most `pageRows` at a
 * time, oldest first. Each page is read when the previous one has been taken.
 */
export async function* readAuditRecords(
  pool: Pool,
  tables: AgentTables,
  range: AuditRange,
  pageRows = AUDIT_PAGE_ROWS,
): AsyncGenerator<AuditRecord[]> {
  let after: Pick<DecisionRow, 'cursor_at' | 'decision_id' | 'conversation_id'> | undefined;
  for (;;) {
    // `decided_at >= cursor` lets the index by time start the scan at the cursor; the row comparison skips the rows
    // of the cursor's own time already read.
    const { rows } = await pool.query<DecisionRow>(
      `SELECT d.conversation_id, d.decision_id, d.decision, d.tool_call_ids, d.call_keys, d.reason, d.decided_by, d.decided_at,
              to_char(d.decided_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS cursor_at,
              d.via, d.authenticated, d.arguments, d.model_arguments, d.response, d.run_id, d.superseded_at, d.rule,
              d.decider_groups, d.call_still_waits, d.signed_decision, d.grant_id, d.grant_amount::text AS grant_amount,
              g.tool_name AS given_tool, g.rule AS given_rule, g.expires_at AS given_expires_at, g.max_calls AS given_max_calls,
              g.amount_argument AS given_amount_argument, g.max_amount::text AS given_max_amount,
              g.revoked_at AS given_revoked_at, g.revoked_by AS given_revoked_by, g.revoke_reason AS given_revoke_reason
         FROM ${tables.approvalDecisions} d
         LEFT JOIN ${tables.approvalGrants} g ON g.conversation_id = d.conversation_id AND g.grant_id = d.decision_id
        WHERE d.decided_at >= $1 AND d.decided_at < $2
          AND ($3::timestamp IS NULL OR (d.decided_at >= $3::timestamp AT TIME ZONE 'UTC'
               AND (d.decided_at, d.decision_id, d.conversation_id) > ($3::timestamp AT TIME ZONE 'UTC', $4::text, $5::text)))
        ORDER BY d.decided_at, d.decision_id, d.conversation_id
        LIMIT $6`,
      [
        range.from,
        range.to,
        after?.cursor_at ?? null,
        after?.decision_id ?? null,
        after?.conversation_id ?? null,
        pageRows,
      ],
    );
    if (rows.length === 0) return;
    yield await completeRecords(pool, tables, rows);
    if (rows.length < pageRows) return;
    after = rows[rows.length - 1];
  }
}

/** What a call key names: the seq of the assistant message that asked for the call, and the call's place in it. */
export function parseAuditCallKey(callKey: string): { assistantSeq: number; index: number } | undefined {
  const match = /(?:\/regen-\d+)?\/msg-(\d+)\/call-(\d+)$/.exec(callKey);
  return match ? { assistantSeq: Number(match[1]), index: Number(match[2]) } : undefined;
}

/** The page's rows as records, each call with its tool and arguments from the messages that asked for them. */
async function completeRecords(pool: Pool, tables: AgentTables, rows: DecisionRow[]): Promise<AuditRecord[]> {
  const wanted = new Map<string, { conversationId: string; seq: number }>();
  for (const row of rows)
    for (const key of row.call_keys ?? []) {
      const parsed = key ? parseAuditCallKey(key) : undefined;
      if (parsed)
        wanted.set(`${row.conversation_id}\u0000${parsed.assistantSeq}`, {
          conversationId: row.conversation_id,
          seq: parsed.assistantSeq,
        });
    }
  const messages = await readAskingMessages(pool, tables, [...wanted.values()]);
  return rows.map((row) => toRecord(row, messages));
}

/** The assistant messages, live and superseded, that have held the given seqs, by conversation and seq. */
async function readAskingMessages(
  pool: Pool,
  tables: AgentTables,
  wanted: { conversationId: string; seq: number }[],
): Promise<Map<string, MessageRow[]>> {
  const bySeq = new Map<string, MessageRow[]>();
  if (wanted.length === 0) return bySeq;
  const { rows } = await pool.query<MessageRow>(
    `WITH k AS (SELECT * FROM unnest($1::text[], $2::int[]) AS k(conversation_id, seq))
     SELECT m.conversation_id, m.seq, m.message -> 'tool_calls' AS tool_calls, m.created_at,
            NULL::timestamptz AS superseded_at, NULL::text AS reason
       FROM ${tables.conversationMessages} m JOIN k ON m.conversation_id = k.conversation_id AND m.seq = k.seq
      WHERE m.role = 'assistant'
     UNION ALL
     SELECT s.conversation_id, s.seq, s.message -> 'tool_calls', s.created_at, s.superseded_at, s.reason
       FROM ${tables.supersededMessages} s JOIN k ON s.conversation_id = k.conversation_id AND s.seq = k.seq
      WHERE s.role = 'assistant'`,
    [wanted.map((w) => w.conversationId), wanted.map((w) => w.seq)],
  );
  for (const row of rows) {
    const key = `${row.conversation_id}\u0000${row.seq}`;
    bySeq.set(key, [...(bySeq.get(key) ?? []), row]);
  }
  return bySeq;
}

function toRecord(row: DecisionRow, messages: Map<string, MessageRow[]>): AuditRecord {
  const decidedAt = row.decided_at;
  const calls = row.tool_call_ids.map((toolCallId, i): AuditCall => {
    const callKey = row.call_keys?.[i] || null;
    const edited = row.decision === 'edit' ? (row.arguments ?? null) : null;
    const found = callKey ? findCall(messages, row, toolCallId, callKey) : undefined;
    if (found && typeof found !== 'string')
      return {
        toolCallId,
        callKey,
        toolName: found.toolName,
        arguments: found.arguments,
        editedArguments: edited,
        note: found.note,
      };
    const missing =
      found ??
      'recorded without a call key (before keys were kept per call), so the message that asked for it is not looked up';
    // An edit's record keeps the model's arguments beside the person's.
    if (row.decision === 'edit' && row.model_arguments !== null)
      return {
        toolCallId,
        callKey,
        toolName: null,
        arguments: row.model_arguments,
        editedArguments: edited,
        note: `${missing}; the model's arguments are from the decision's record`,
      };
    return { toolCallId, callKey, toolName: null, arguments: null, editedArguments: edited, note: missing };
  });
  return {
    kind: row.via === 'policy' ? 'policy' : row.via === 'grant' ? 'grant' : 'decision',
    conversationId: row.conversation_id,
    decisionId: row.decision_id,
    decidedAt: decidedAt.toISOString(),
    decidedBy: row.decided_by,
    authenticated: row.authenticated,
    deciderGroups: row.decider_groups,
    via: row.via,
    verdict: row.decision,
    callStillWaits: row.call_still_waits,
    rule: row.rule,
    reason: row.reason,
    response: row.response,
    calls,
    superseded: row.superseded_at !== null,
    supersededAt: row.superseded_at?.toISOString() ?? null,
    runId: row.run_id,
    signedDecision: row.signed_decision,
    grantId: row.grant_id,
    grantAmount: row.grant_amount === null ? null : Number(row.grant_amount),
    grantGiven:
      row.given_tool === null
        ? null
        : {
            toolName: row.given_tool,
            rule: row.given_rule,
            expiresAt: row.given_expires_at!.toISOString(),
            maxCalls: row.given_max_calls,
            maxAmount:
              row.given_amount_argument === null
                ? null
                : { argument: row.given_amount_argument, total: Number(row.given_max_amount) },
            revokedAt: row.given_revoked_at?.toISOString() ?? null,
            revokedBy: row.given_revoked_by,
            revokeReason: row.given_revoke_reason,
          },
  };
}

/**
 * The call named by `callKey` in the messages that have held its seq: its tool, parsed arguments and a note when it
 * was read from a superseded message; or why it was not found. Of the messages whose call at that place has the
 * decided call's id, the one holding it when the decision was made (a person decides a call in a message written
 * before; a rule decides it just before the message is written, in the same transaction).
 */
function findCall(
  messages: Map<string, MessageRow[]>,
  row: DecisionRow,
  toolCallId: string,
  callKey: string,
): { toolName: string | null; arguments: unknown; note: string | null } | string {
  const parsed = parseAuditCallKey(callKey);
  if (!parsed)
    return `the call key is not of the form <conversation>/msg-<seq>/call-<index>, so its message is not looked up`;
  const { assistantSeq: seq, index } = parsed;
  const candidates = (messages.get(`${row.conversation_id}\u0000${seq}`) ?? []).filter(
    (m) => m.tool_calls?.[index]?.id === toolCallId,
  );
  if (candidates.length === 0)
    return `no stored assistant message at seq ${seq} of ${row.conversation_id} has call ${toolCallId} at place ${index} (neither in the transcript nor in superseded_messages)`;
  const decided = row.decided_at.getTime();
  const heldThen = candidates.filter(
    (m) => m.created_at.getTime() <= decided && (m.superseded_at === null || m.superseded_at.getTime() > decided),
  );
  const nearest = (list: MessageRow[]) =>
    list.reduce((best, m) =>
      Math.abs(m.created_at.getTime() - decided) < Math.abs(best.created_at.getTime() - decided) ? m : best,
    );
  // A rule's decision precedes its message; so may a person's, by the clocks' skew between Temporal and PostgreSQL.
  const latest = (list: MessageRow[]) =>
    list.reduce((best, m) => (m.created_at.getTime() > best.created_at.getTime() ? m : best));
  const message =
    row.via !== 'policy' && row.via !== 'grant' && heldThen.length > 0 ? latest(heldThen) : nearest(candidates);
  const fn = message.tool_calls![index].function ?? {};
  return {
    toolName: fn.name ?? null,
    arguments: parseArguments(fn.arguments),
    note:
      message.superseded_at === null
        ? null
        : `read from superseded_messages: the message that asked for it left the live transcript at ${message.superseded_at.toISOString()} (${message.reason})`,
  };
}

/** The model's arguments parsed, or the raw text when it is not JSON. */
function parseArguments(text: string | undefined): unknown {
  if (text === undefined) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
