/**
 * The end of a chaos run: waits for every conversation to settle, then checks
 * what must hold whatever was injected. Each "must be 0" count comes with a
 * line per problem in `problems`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { Pool } from 'pg';
import type { AgentClient } from '../../src/client/client';
import type { ChatMessage } from '../../src/contract/messages';
import { findPairingProblems, type PairingItem } from '../../src/core/pairing';
import type { ConversationState } from '../../src/contract';
import { TOOL_ARGUMENTS_MAX_BYTES } from '../../src/contract/activities';
import { USER_MESSAGE_MAX_BYTES } from '../../src/contract';
import { retrying } from './retrying';
import { CHAOS_ORDERS, PROBE_MARK, type HugeAnswerSent } from './model-script';
import type { ConversationRecord, DecisionSent, RunLog } from './run-log';
import { callInstanceKey } from '../../src/core/effect-keys';
import { callKeyOfEffect } from '../support/effect-keys';
import { effectKey } from '../../src/activities/effect-key';
import { checkStoredReasoning } from './reasoning-checks';

/** Counts that must be 0 after any run. */
export interface MustBeZero {
  /**
   * Requests the model server answered with a 400/404 because they were invalid, on either API, and Responses requests
   * it accepted that break a rule of their form when read again (`model-request.ts`).
   */
  invalidModelRequests: number;
  /** Side effects applied twice, missing for a call reported done, or inconsistent with the ledger. */
  sideEffectsAppliedTwice: number;
  /** Side effects of calls the transcript reports as not run (rejected, timed out, cancelled, failed). */
  effectsOfCallsNotRun: number;
  /** Acknowledged decisions neither applied nor superseded; applied decisions not honoured. */
  decisionsLost: number;
  /** Conversations not settled at the deadline, or whose script the driver could not finish. */
  conversationsStuck: number;
  /**
   * Conversations whose stored transcript breaks the pairing rules, has gaps, or disagrees with the workflow; and those
   * with a Responses reasoning item kept in a form it could not be sent back in (`reasoning-checks.ts`).
   */
  brokenTranscripts: number;
  /** Repairs the workflow made before model calls (it should never need one). */
  transcriptRepairs: number;
  /**
   * Side effects keyed by something other than the workflow's call-instance key (e.g. a provider's tool-call id, which
   * providers reuse).
   */
  effectKeysFromProviderIds: number;
  /**
   * Messages, answers or results cut or dropped by a size limit without a clear error; over-limit messages accepted.
   */
  lostToSizeLimits: number;
  /** Settled conversations that did not answer one more question at the end. */
  conversationsNotAnswering: number;
  /** Recorded decisions not authenticated (no valid signature) or without a decider; unsigned decisions applied. */
  decisionsWithoutIdentity: number;
  /**
   * Tool calls sent back on the Responses API without the reasoning item the model wrote just before them (counted by
   * the run from the requests, `model-request.ts`).
   */
  reasoningNotSentBack: number;
}

/** Decisions sent by the driver, and what became of them. */
export interface DecisionStats {
  /** Signals sent, second sends of a decision id included. */
  signalsSent: number;
  /** Distinct decision ids the server acknowledged. */
  acknowledged: number;
  /** Of those, recorded in `approval_decisions`. */
  applied: number;
  /**
   * Not applied because every call it was meant for had settled otherwise first (timeout, cancel, interrupt, another
   * decision).
   */
  superseded: number;
  lost: number;
  /** Distinct decision ids whose sending failed on every attempt (not counted as lost). */
  notAcknowledged: number;
  /** Decisions by the way they were sent. */
  byPath: Record<string, number>;
  /** Sent around the API, unsigned or malformed, and acknowledged by the server (each must be refused). */
  unsignedSent: number;
  /** Refused by the API because their calls no longer waited. */
  apiRefusals: number;
  /**
   * Of the applied ones, those of calls waiting inside agents called as tools (decided in the child's conversation).
   */
  appliedInSubAgents: number;
  /**
   * Acknowledged after the point a reset of their conversation went back to, and so applied again by the new run to
   * the calls it has at their keys (the model may have asked for others there): not held to their first calls.
   */
  reappliedByReset: number;
  /** What became of those (first few), for reading. */
  reappliedByResetNotes: string[];
}

/** What the final checks found. */
export interface CheckResults {
  mustBeZero: MustBeZero;
  /** One line per problem behind a non-zero count. */
  problems: string[];
  turns: number;
  turnOutcomes: Record<string, number>;
  toolOutcomes: Record<string, number>;
  decisions: DecisionStats;
  refundsApplied: number;
  /** Refunds of calls reported `interrupted`: their effect is unknown by design. */
  effectsOfInterruptedCalls: number;
  /** Effects applied by runs a reset abandoned (their results, if stored, are superseded messages): real, kept. */
  effectsOfAbandonedRuns: number;
  /** Times conversations continued as new (from their final states). */
  continuedAsNew: number;
  /** Conversations the driver never started (only after a hard stop); not checked. */
  notStarted: number;
  /** Conversations of agents called as tools (child workflows), checked like the others. */
  subAgentConversations: number;
  /** Answers of the Responses API stored with reasoning items, and those items (each checked with its answer). */
  storedReasoning: { answers: number; items: number };
}

/** What the checks need. */
export interface CheckContext {
  client: AgentClient;
  pool: Pool;
  runLog: RunLog;
  conversationPrefix: string;
  approvalTimeoutMs: number;
  /** The conversations (by root id) whose `approvalTimeoutMs` is not the run's. */
  approvalTimeoutsMs?: ReadonlyMap<string, number>;
  invalidModelRequests: number;
  /** The huge answers the model sent. */
  hugeAnswers: readonly HugeAnswerSent[];
  /** Where to write the histories of stuck conversations; not written when unset. */
  historyDir?: string;
  /** Conversations must have settled by this time (ms since the epoch). */
  settleDeadline: number;
  signal: AbortSignal;
}

type Outcome = 'ok' | 'tool_failed' | 'rejected' | 'approval_timeout' | 'cancelled' | 'interrupted' | 'repaired';
const NOT_RUN: readonly Outcome[] = ['tool_failed', 'rejected', 'approval_timeout', 'cancelled'];

/** How a tool message says its call ended. */
export function outcomeOf(content: string): Outcome {
  try {
    const parsed = JSON.parse(content) as { kind?: unknown; error?: unknown };
    const kinds: Outcome[] = ['tool_failed', 'rejected', 'approval_timeout', 'cancelled', 'interrupted', 'repaired'];
    if (parsed && typeof parsed === 'object' && 'error' in parsed && kinds.includes(parsed.kind as Outcome))
      return parsed.kind as Outcome;
  } catch {
    // a tool's own text result
  }
  return 'ok';
}

interface CallInfo {
  name: string;
  arguments: string;
  outcome?: Outcome;
  content?: string;
  /** The key its live tool message's result was stored under (a fork's copied result: its source's). */
  refKey?: string;
  /** The key its arguments give its effect (unset for arguments that are not JSON). */
  effectKey?: string;
}

/** The effect key of a call with these arguments, as the tool activity makes it; undefined for arguments not JSON. */
function effectKeyOfCall(callKey: string, name: string, args: string): string | undefined {
  try {
    return effectKey(callKey, name, args.trim() === '' ? {} : JSON.parse(args));
  } catch {
    return undefined;
  }
}

/** A stored message, with the key its result was read from (tool messages that ran). */
type StoredRow = { seq: number; message: ChatMessage; refKey?: string };

/** Runs every check. */
export async function runFinalChecks(ctx: CheckContext): Promise<CheckResults> {
  const problems: string[] = [];
  // Conversations the driver never started (the hard stop came first) are not checked.
  const conversations = [...ctx.runLog.conversations.values()].filter(
    (c) => c.messageIds.length > 0 || c.unacknowledgedMessageIds.length > 0 || c.gaveUp,
  );
  const notStarted = ctx.runLog.conversations.size - conversations.length;

  // 1. Every conversation settles: idle or failed, nothing pending, running or queued, every message answered by one
  // turn.
  const states = new Map<string, ConversationState | undefined>();
  const unsettledIds = new Set<string>();
  let stuck = 0;
  await Promise.all(
    conversations.map(async (record) => {
      let reasons: string[];
      for (;;) {
        const state = await retrying(ctx, () => ctx.client.state(record.plan.id), 10_000).catch(() => undefined);
        reasons = state ? unsettled(record, state) : ['its state could not be read'];
        states.set(record.plan.id, state);
        if (reasons.length === 0 || Date.now() > ctx.settleDeadline || ctx.signal.aborted) break;
        await sleep(500);
      }
      if (record.gaveUp) reasons.push(`the driver gave up: ${record.gaveUp}`);
      if (reasons.length > 0) {
        stuck++;
        unsettledIds.add(record.plan.id);
        const failure = await historyAndLastTaskFailure(ctx, record.plan.id);
        problems.push(
          `stuck: ${record.plan.id}: ${reasons.join('; ')}${failure ? `; last workflow task failure: ${failure}` : ''}`,
        );
      }
    }),
  );

  // 2. Transcripts as stored.
  const { rows: messageRows } = await ctx.pool.query<{
    conversation_id: string;
    seq: number;
    message: ChatMessage;
    ref_key: string | null;
  }>(
    `SELECT conversation_id, seq, message, ref_key FROM durable_agent.conversation_messages WHERE conversation_id LIKE $1 ORDER BY conversation_id, seq`,
    [`${ctx.conversationPrefix}%`],
  );
  const transcripts = new Map<string, StoredRow[]>();
  for (const row of messageRows) {
    const list = transcripts.get(row.conversation_id) ?? [];
    list.push({ seq: row.seq, message: row.message, ...(row.ref_key ? { refKey: row.ref_key } : {}) });
    transcripts.set(row.conversation_id, list);
  }
  const calls = new Map<string, CallInfo>(); // by effect key (src/core/effect-keys.ts)
  const toolOutcomes: Record<string, number> = {};
  let broken = 0;
  let repairs = 0;
  /**
   * Seqs in order and every call answered; a conversation stuck in a turn (counted as stuck already) may still have its
   * last calls open.
   */
  const pairingProblems = (stored: { seq: number; message: ChatMessage }[], mayBeOpen: boolean): string[] => {
    const found: string[] = [];
    stored.forEach((m, i) => {
      if (m.seq !== i) found.push(`seq ${m.seq} at position ${i}`);
    });
    const items: PairingItem[] = stored.map(({ message: m }) =>
      m.role === 'assistant'
        ? { role: m.role, callIds: m.tool_calls?.map((c) => c.id) }
        : m.role === 'tool'
          ? { role: m.role, answers: m.tool_call_id }
          : { role: m.role },
    );
    for (const p of findPairingProblems(items)) {
      const openAtEnd =
        p.kind === 'missing_result' && mayBeOpen && !items.slice(p.index + 1).some((m) => m.role !== 'tool');
      if (!openAtEnd) found.push(`${p.kind} ${p.toolCallId} at ${p.index}`);
    }
    return found;
  };
  /** The calls of a transcript by effect key, with how each ended. */
  const collectCalls = (id: string, stored: StoredRow[]): void => {
    for (const { seq, message: m } of stored) {
      if (m.role !== 'assistant') continue;
      m.tool_calls?.forEach((c, i) => {
        const callKey = callInstanceKey(id, seq, i);
        calls.set(callKey, {
          name: c.function.name,
          arguments: c.function.arguments,
          effectKey: effectKeyOfCall(callKey, c.function.name, c.function.arguments),
        });
      });
    }
    const keys = callKeysOfToolMessages(id, stored);
    for (const { seq, message: m, refKey } of stored) {
      if (m.role !== 'tool') continue;
      const key = keys.get(seq);
      const call = key === undefined ? undefined : calls.get(key);
      const outcome = outcomeOf(m.content);
      toolOutcomes[outcome] = (toolOutcomes[outcome] ?? 0) + 1;
      if (call) Object.assign(call, { outcome, content: m.content, ...(refKey ? { refKey } : {}) });
    }
  };
  for (const record of conversations) {
    const id = record.plan.id;
    const stored = transcripts.get(id) ?? [];
    const state = states.get(id);
    const found = pairingProblems(stored, unsettledIds.has(id));
    if (state && !unsettledIds.has(id) && state.messageCount !== stored.length) {
      found.push(`the workflow counts ${state.messageCount} messages, PostgreSQL holds ${stored.length}`);
    }
    const userIds = stored.flatMap(({ message: m }) =>
      m.role === 'user' ? [/\((chaos-[^)]+-m\d+)\)/.exec(m.content)?.[1] ?? '?'] : [],
    );
    // A fork's copied messages too: each once.
    for (const mid of [...record.messageIds, ...(record.copiedMessageIds ?? [])]) {
      const n = userIds.filter((u) => u === mid).length;
      if (n !== 1) found.push(`user message ${mid} stored ${n} times`);
    }
    for (const mid of record.unacknowledgedMessageIds) {
      const n = userIds.filter((u) => u === mid).length;
      if (n > 1) found.push(`user message ${mid} stored ${n} times`);
    }
    for (const u of userIds) {
      if (
        !record.messageIds.includes(u) &&
        !record.unacknowledgedMessageIds.includes(u) &&
        !(record.copiedMessageIds ?? []).includes(u)
      )
        found.push(`a user message the driver never sent (${u})`);
    }
    if (found.length > 0) {
      broken++;
      problems.push(`broken transcript: ${id}: ${found.join('; ')}`);
    }
    if (state && state.transcriptRepairs > 0) {
      repairs += state.transcriptRepairs;
      problems.push(`transcript repaired: ${id}: ${state.transcriptRepairs} time(s)`);
    }
    collectCalls(id, stored);
  }
  // The conversations of agents called as tools (`<caller>~<agent>~<seq>-<index>`, at any depth): the same rules, their
  // effects too.
  const planIds = new Set(conversations.map((c) => c.plan.id));
  let subAgentConversations = 0;
  for (const [id, stored] of transcripts) {
    const root = rootConversationOf(id);
    if (planIds.has(id) || !planIds.has(root)) continue;
    subAgentConversations++;
    const found = pairingProblems(stored, unsettledIds.has(root));
    if (found.length > 0) {
      broken++;
      problems.push(`broken transcript: ${id}: ${found.join('; ')}`);
    }
    collectCalls(id, stored);
  }
  // The Responses API's reasoning kept with answers: each can be sent back with the item that followed it.
  const reasoning = await checkStoredReasoning(ctx.pool, ctx.conversationPrefix);
  broken += reasoning.broken.size;
  problems.push(...reasoning.problems.slice(0, 20));

  // 3. Turns, from the workflows' own records.
  const turnOutcomes: Record<string, number> = {};
  let turns = 0;
  let continuedAsNew = 0;
  for (const state of states.values()) {
    continuedAsNew += Math.max(0, (state?.runs ?? 1) - 1);
    for (const t of state?.recentTurns ?? []) {
      turns++;
      turnOutcomes[t.outcome] = (turnOutcomes[t.outcome] ?? 0) + 1;
    }
  }

  // 4. Side effects: each applied once, none for a call reported as not run.
  const sideEffects = await checkSideEffects(ctx, calls, problems);

  // 5. Decisions.
  const lostIn = new Set<string>();
  const { withoutIdentity, ...decisions } = await checkDecisions(ctx, calls, problems, lostIn);
  // Keep the histories of conversations that lost a decision, for replaying and reading (with historyDir).
  for (const id of lostIn) await historyAndLastTaskFailure(ctx, id);

  // 6. Sizes: what was at or over a limit was kept whole, or refused saying so.
  const lostToSizeLimits = checkSizes(ctx, transcripts, calls, problems);

  // 7. Every settled conversation still answers.
  const notAnswering = await probeConversations(
    ctx,
    conversations.filter((c) => !unsettledIds.has(c.plan.id)),
    problems,
  );

  return {
    mustBeZero: {
      invalidModelRequests: ctx.invalidModelRequests,
      sideEffectsAppliedTwice: sideEffects.twice,
      effectsOfCallsNotRun: sideEffects.notRun,
      decisionsLost: decisions.lost,
      conversationsStuck: stuck,
      brokenTranscripts: broken,
      transcriptRepairs: repairs,
      effectKeysFromProviderIds: sideEffects.providerKeyed,
      lostToSizeLimits,
      conversationsNotAnswering: notAnswering,
      decisionsWithoutIdentity: withoutIdentity,
      reasoningNotSentBack: 0,
    },
    problems,
    turns,
    turnOutcomes,
    toolOutcomes,
    decisions,
    refundsApplied: sideEffects.refunds,
    effectsOfInterruptedCalls: sideEffects.interrupted,
    effectsOfAbandonedRuns: sideEffects.abandoned,
    continuedAsNew,
    notStarted,
    subAgentConversations,
    storedReasoning: { answers: reasoning.answers, items: reasoning.items },
  };
}

/** The top-level conversation of a conversation id: itself, or the caller at the root of an agent called as a tool. */
export function rootConversationOf(id: string): string {
  return id.split('~')[0];
}

/**
 * The last failed workflow task of a conversation's current run (e.g. a
 * nondeterminism error), from its history; with `historyDir`, the history is
 * also written there as JSON, for replaying.
 */
async function historyAndLastTaskFailure(ctx: CheckContext, conversationId: string): Promise<string | undefined> {
  try {
    const history = await retrying(
      ctx,
      () => ctx.client.temporal.workflow.getHandle(conversationId).fetchHistory(),
      20_000,
    );
    if (ctx.historyDir)
      fs.writeFileSync(path.join(ctx.historyDir, `${conversationId}.history.json`), `${historyToJSON(history)}\n`);
    const failed = (history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes);
    const last = failed[failed.length - 1];
    if (!last) return undefined;
    const attrs = last.workflowTaskFailedEventAttributes!;
    return `event ${last.eventId} (${failed.length} failed task(s)), cause ${attrs.cause}: ${(attrs.failure?.message ?? '').split('\n')[0].slice(0, 400)}`;
  } catch (err) {
    return `history not readable (${(err as Error).message})`;
  }
}

/** Why a conversation is not settled yet; empty when it is. */
function unsettled(record: ConversationRecord, state: ConversationState): string[] {
  const reasons: string[] = [];
  if (state.status !== 'idle' && state.status !== 'failed') reasons.push(`status ${state.status}`);
  if (state.pendingApprovals.length > 0) reasons.push(`${state.pendingApprovals.length} call(s) awaiting approval`);
  if (state.runningToolCalls.length > 0) reasons.push(`${state.runningToolCalls.length} call(s) running`);
  if (state.queuedMessages > 0) reasons.push(`${state.queuedMessages} message(s) queued`);
  const inTurns = (mid: string): number => state.recentTurns.filter((t) => t.messageIds.includes(mid)).length;
  for (const mid of record.messageIds) {
    const n = inTurns(mid);
    if (n !== 1) reasons.push(`message ${mid} is in ${n} turn records`);
  }
  for (const mid of record.unacknowledgedMessageIds) {
    const n = inTurns(mid);
    if (n > 1) reasons.push(`message ${mid} is in ${n} turn records`);
  }
  return reasons;
}

/**
 * How long after a reset an effect of the run it abandoned may still be applied: a tool activity that run had
 * started stops at its next heartbeat (3 s in the chaos run) or when it ends.
 */
const ABANDONED_RUN_GRACE_MS = 10_000;

/** The conversation an effect key belongs to (`<conversation>/msg-SEQ/call-INDEX/args-HASH`). */
function conversationOfEffect(key: string): string {
  return key.replace(/\/msg-\d+\/call-\d+(\/args-[0-9a-f]{16})?$/, '');
}

/** What the side-effect checks found. */
interface SideEffectFindings {
  twice: number;
  notRun: number;
  refunds: number;
  interrupted: number;
  providerKeyed: number;
  /** Effects applied by runs a reset abandoned: real, and kept (not errors). */
  abandoned: number;
}

async function checkSideEffects(
  ctx: CheckContext,
  calls: Map<string, CallInfo>,
  problems: string[],
): Promise<SideEffectFindings> {
  const like = `${ctx.conversationPrefix}%`;
  const refunds = await ctx.pool.query<{ key: string; n: number; ids: string[]; at: number }>(
    `SELECT idempotency_key AS key, count(*)::int AS n, array_agg(id::text ORDER BY id) AS ids,
            (extract(epoch FROM min(created_at)) * 1000)::float8 AS at
       FROM refunds WHERE idempotency_key LIKE $1 GROUP BY 1`,
    [like],
  );
  const effects = await ctx.pool.query<{ key: string; n: number; at: number }>(
    `SELECT idempotency_key AS key, count(*)::int AS n, (extract(epoch FROM min(at)) * 1000)::float8 AS at
       FROM chaos_effects WHERE idempotency_key LIKE $1 GROUP BY 1`,
    [like],
  );
  const ledger = await ctx.pool.query<{ key: string; tool_name: string; result: unknown }>(
    `SELECT idempotency_key AS key, tool_name, result FROM durable_agent.tool_ledger WHERE idempotency_key LIKE $1`,
    [like],
  );
  const orders = await ctx.pool.query<{ id: string; refunded: number; sum: number }>(
    `SELECT o.id, o.refunded_cents AS refunded, coalesce(sum(r.amount_cents), 0)::int AS sum
       FROM orders o LEFT JOIN refunds r ON r.order_id = o.id WHERE o.id = ANY($1) GROUP BY o.id, o.refunded_cents`,
    [CHAOS_ORDERS],
  );
  // The results abandoned runs had stored in their transcripts before a reset moved them out.
  const superseded = await ctx.pool.query<{ ref_key: string }>(
    `SELECT ref_key FROM durable_agent.superseded_messages WHERE conversation_id LIKE $1 AND role = 'tool' AND ref_key IS NOT NULL`,
    [like],
  );
  const supersededKeys = new Set(superseded.rows.map((r) => r.ref_key));
  let twice = 0;
  let notRun = 0;
  let interrupted = 0;
  let abandoned = 0;
  // Effects are keyed by the call and its arguments (src/activities/effect-key.ts). A live tool message names the key
  // its result was stored under (a fork's copied result names its source's); a live call without a result has the key
  // its arguments give.
  const refundRows = new Map(refunds.rows.map((r) => [r.key, r]));
  const effectRows = new Map(effects.rows.map((r) => [r.key, r]));
  const ledgerRows = new Map(ledger.rows.map((r) => [r.key, r]));
  const resetsOf = (key: string) =>
    ctx.runLog.resets.filter((r) => r.conversationId === rootConversationOf(conversationOfEffect(key)));
  // Applied before a reset of its conversation was made (or while the abandoned run's last tool still ran).
  const ofAbandonedRun = (key: string, at: number): boolean =>
    supersededKeys.has(key) || resetsOf(key).some((r) => at <= r.doneAt + ABANDONED_RUN_GRACE_MS);

  for (const [call, keys] of groupBy(
    [...refunds.rows, ...effects.rows].map((r) => r.key),
    callKeyOfEffect,
  )) {
    // A reset run may ask, at the same place, for other arguments: a call of its own, run for real.
    if (new Set(keys).size > 1 && resetsOf(call).length === 0) {
      twice++;
      problems.push(`side effect twice: call ${call} applied effects under ${[...new Set(keys)].join(' and ')}`);
    }
  }
  for (const r of refunds.rows) {
    if (r.n > 1) {
      twice++;
      problems.push(`side effect twice: ${r.n} refunds with idempotency key ${r.key}`);
    }
  }
  for (const [key, row] of effectRows) {
    if (row.n > 1) {
      twice++;
      problems.push(`side effect twice: ${row.n} chaos_effects rows with idempotency key ${key}`);
    }
  }
  const referenced = new Set<string>();
  for (const [callKey, call] of calls) {
    if (call.outcome !== 'ok') continue;
    const key = call.refKey ?? call.effectKey ?? callKey;
    referenced.add(key);
    if (call.name === 'issue_refund') {
      const row = refundRows.get(key);
      const reported = (JSON.parse(call.content ?? '{}') as { refund_id?: string }).refund_id;
      if (!row || row.n !== 1 || String(reported) !== row.ids[0]) {
        twice++;
        problems.push(
          `refund mismatch: ${callKey} (${key}): the transcript reports refund ${reported}, the refunds table has ${row?.ids.join(', ') ?? 'none'}`,
        );
      }
    }
    if (call.name === 'check_stock' && effectRows.get(key)?.n !== 1) {
      twice++;
      problems.push(
        `effect mismatch: ${callKey} (${key}): check_stock succeeded, chaos_effects has ${effectRows.get(key)?.n ?? 0} rows`,
      );
    }
  }
  // The ledger and the effects commit in one transaction: the same keys on both sides.
  for (const [key, row] of ledgerRows) {
    const has =
      row.tool_name === 'issue_refund'
        ? refundRows.has(key)
        : row.tool_name === 'check_stock'
          ? effectRows.has(key)
          : true;
    if (!has) {
      twice++;
      problems.push(`ledger mismatch: ${key}: a ${row.tool_name} ledger row without its effect`);
    }
  }
  for (const key of [...refundRows.keys(), ...effectRows.keys()]) {
    if (!ledgerRows.has(key)) {
      twice++;
      problems.push(`ledger mismatch: ${key}: an effect without its ledger row`);
    }
  }
  for (const o of orders.rows) {
    if (Number(o.refunded) !== Number(o.sum)) {
      twice++;
      problems.push(`order ${o.id}: refunded_cents ${o.refunded} but its refunds sum to ${o.sum}`);
    }
  }
  // Every effect is keyed by its call instance and arguments (conversation/msg-SEQ/call-INDEX/args-HASH), never by a
  // provider's id.
  let providerKeyed = 0;
  for (const key of new Set([...refunds.rows, ...effects.rows, ...ledger.rows].map((r) => r.key))) {
    if (!/\/msg-\d+\/call-\d+\/args-[0-9a-f]{16}$/.test(key)) {
      providerKeyed++;
      problems.push(`effect keyed by a provider id: ${key}`);
    }
  }
  // Effects no live result names: of a call reported `interrupted` (unknown by design), of a run a reset abandoned
  // (real, and kept), or of a call the transcript reports as not run (an error).
  for (const row of [...refunds.rows, ...effects.rows]) {
    if (referenced.has(row.key)) continue;
    const call = calls.get(callKeyOfEffect(row.key));
    const ofThisCall = call !== undefined && (call.refKey ?? call.effectKey) === row.key;
    if (ofThisCall && call.outcome === 'interrupted') interrupted++;
    else if (ofThisCall && call.outcome !== undefined && !NOT_RUN.includes(call.outcome)) continue;
    else if (ofAbandonedRun(row.key, row.at)) abandoned++;
    else {
      notRun++;
      problems.push(
        `effect of a call not run: ${row.key}: applied, but the transcript says ${ofThisCall ? (call.outcome ?? 'nothing (no tool message)') : 'nothing (no live call with these arguments)'}`,
      );
    }
  }
  return { twice, notRun, refunds: refunds.rows.length, interrupted, providerKeyed, abandoned };
}

/**
 * Messages, answers, results and arguments at or over a limit: an over-limit
 * user message refused by the client naming the limit (and never stored); a
 * near-limit one stored whole; every huge answer and large result stored
 * whole; a call whose arguments are over the limit answered `tool_failed`
 * saying so, never run.
 */
function checkSizes(
  ctx: CheckContext,
  transcripts: ReadonlyMap<string, { seq: number; message: ChatMessage }[]>,
  calls: ReadonlyMap<string, CallInfo>,
  problems: string[],
): number {
  let lost = 0;
  const problem = (line: string) => {
    lost++;
    problems.push(`size limit: ${line}`);
  };
  const userMessage = (conversationId: string, messageId: string) =>
    (transcripts.get(conversationId) ?? []).find(
      ({ message: m }) => m.role === 'user' && m.content.includes(`(${messageId})`),
    )?.message;
  for (const sent of ctx.runLog.sizedMessages) {
    const stored = userMessage(sent.conversationId, sent.messageId);
    if (sent.overLimit) {
      if (!sent.refusal)
        problem(`${sent.messageId}: a message of ${sent.bytes} bytes (over ${USER_MESSAGE_MAX_BYTES}) was accepted`);
      else if (!sent.refusal.includes(String(USER_MESSAGE_MAX_BYTES)) || !sent.refusal.includes(String(sent.bytes))) {
        problem(`${sent.messageId}: refused without saying its size and the limit: ${sent.refusal.slice(0, 200)}`);
      }
      if (stored) problem(`${sent.messageId}: an over-limit message is in the transcript`);
    } else {
      const acknowledged = ctx.runLog.conversations.get(sent.conversationId)?.messageIds.includes(sent.messageId);
      if (acknowledged && !stored)
        problem(`${sent.messageId}: a message of ${sent.bytes} bytes (under the limit) is not in the transcript`);
      if (stored && stored.role === 'user' && Buffer.byteLength(stored.content) !== sent.bytes) {
        problem(`${sent.messageId}: sent ${sent.bytes} bytes, stored ${Buffer.byteLength(stored.content)}`);
      }
    }
  }
  const huge = new Map(ctx.hugeAnswers.map((a) => [a.marker, a]));
  for (const [id, stored] of transcripts) {
    for (const { seq, message: m } of stored) {
      if (m.role !== 'assistant' || typeof m.content !== 'string' || !m.content.startsWith('HUGE-ANSWER-')) continue;
      const sent = huge.get(m.content.slice(0, m.content.indexOf(' ')));
      if (sent && m.content.length !== sent.length)
        problem(`${id} seq ${seq}: an answer of ${sent.length} characters stored with ${m.content.length}`);
    }
  }
  for (const [key, call] of calls) {
    if (call.name === 'export_orders' && call.outcome === 'ok') {
      const expected = (JSON.parse(call.arguments) as { kilobytes: number }).kilobytes * 1024;
      if (call.content?.length !== expected)
        problem(`${key}: export_orders returned ${expected} characters, the transcript holds ${call.content?.length}`);
    }
    const bytes = Buffer.byteLength(call.arguments);
    if (bytes > TOOL_ARGUMENTS_MAX_BYTES) {
      if (call.outcome === 'ok')
        problem(`${key}: a call with ${bytes} bytes of arguments (over ${TOOL_ARGUMENTS_MAX_BYTES}) ran`);
      if (call.outcome === 'tool_failed' && !call.content?.includes(`at most ${TOOL_ARGUMENTS_MAX_BYTES} bytes`)) {
        problem(
          `${key}: a call with ${bytes} bytes of arguments failed without saying the limit: ${call.content?.slice(0, 200)}`,
        );
      }
    }
  }
  return lost;
}

/** Asks every settled conversation one more question; each must answer. Returns how many did not. */
async function probeConversations(
  ctx: CheckContext,
  conversations: ConversationRecord[],
  problems: string[],
): Promise<number> {
  let failed = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < conversations.length && !ctx.signal.aborted) {
        const record = conversations[next++];
        const id = record.plan.id;
        const messageId = `${id}-probe`;
        try {
          const sent = await retrying(
            ctx,
            () =>
              ctx.client.sendMessage(id, `${record.plan.tag} ${PROBE_MARK} are you still there? (${messageId})`, {
                messageId,
              }),
            30_000,
          );
          const turn = await ctx.client.waitForTurn(id, sent, 60_000);
          if (turn.outcome !== 'answered')
            throw new Error(`the turn ended ${turn.outcome}${turn.error ? `: ${turn.error}` : ''}`);
        } catch (err) {
          failed++;
          problems.push(`not answering: ${id}: ${(err as Error).message.slice(0, 300)}`);
        }
      }
    }),
  );
  return failed;
}

/**
 * A decision is lost when the server acknowledged it, it is not in
 * `approval_decisions`, and some call it was meant for did not settle
 * otherwise before it: settled by another recorded decision, by its approval
 * timeout while the decision was acknowledged at or after that call's
 * deadline, or by a cancel or interrupting message the driver sent
 * after the call was requested and before the decision. An applied decision is also counted as lost when its calls did
 * not end as it said (a rejected call that ran, an approved call rejected or
 * timed out).
 */
async function checkDecisions(
  ctx: CheckContext,
  calls: Map<string, CallInfo>,
  problems: string[],
  lostIn: Set<string>,
): Promise<DecisionStats & { withoutIdentity: number }> {
  const { rows } = await ctx.pool.query<{
    conversation_id: string;
    decision_id: string;
    decision: string;
    tool_call_ids: string[];
    call_keys: string[] | null;
    decided_by: string | null;
    authenticated: boolean | null;
  }>(
    `SELECT conversation_id, decision_id, decision, tool_call_ids, call_keys, decided_by, authenticated FROM durable_agent.approval_decisions WHERE conversation_id LIKE $1`,
    [`${ctx.conversationPrefix}%`],
  );
  // Every recorded decision names who decided, authenticated by the API's signature; nothing sent around the API is
  // recorded.
  let withoutIdentity = 0;
  const unsignedIds = new Set(
    ctx.runLog.decisions.filter((d) => d.unsigned).map((d) => `${d.conversationId}/${d.decisionId}`),
  );
  for (const r of rows) {
    const key = `${r.conversation_id}/${r.decision_id}`;
    if (r.authenticated !== true || !r.decided_by || unsignedIds.has(key)) {
      withoutIdentity++;
      problems.push(
        `decision without an identity: ${key} (decided_by ${JSON.stringify(r.decided_by)}, authenticated ${r.authenticated}${unsignedIds.has(key) ? ', sent unsigned' : ''})`,
      );
    }
  }
  for (const error of ctx.runLog.apiErrors) problems.push(`decision not taken: ${error}`);
  const applied = new Map(rows.map((r) => [`${r.conversation_id}/${r.decision_id}`, r]));
  const decidedBy = new Map<string, string[]>(); // effect key → decision ids recorded for it
  for (const r of rows) {
    for (const key of r.call_keys ?? []) decidedBy.set(key, [...(decidedBy.get(key) ?? []), r.decision_id]);
  }
  const first = new Map<string, DecisionSent>(); // the first acknowledged send of each decision id
  const unacknowledged = new Set<string>();
  for (const d of ctx.runLog.decisions) {
    if (d.unsigned) continue; // refused by design (checked above)
    const key = `${d.conversationId}/${d.decisionId}`;
    if (d.ackAt === undefined) unacknowledged.add(key);
    else if (!first.has(key)) first.set(key, d);
  }
  for (const key of first.keys()) unacknowledged.delete(key);

  const stats: DecisionStats = {
    signalsSent: ctx.runLog.decisions.length,
    acknowledged: first.size,
    applied: 0,
    superseded: 0,
    lost: ctx.runLog.apiErrors.length,
    notAcknowledged: unacknowledged.size,
    byPath: { ...ctx.runLog.decisionPaths },
    unsignedSent: ctx.runLog.decisions.filter((d) => d.unsigned && d.ackAt !== undefined).length,
    apiRefusals: ctx.runLog.apiRefusals,
    appliedInSubAgents: 0,
    reappliedByReset: 0,
    reappliedByResetNotes: [],
  };
  // Sent before a reset was made, and in the history after the point it went back to: Temporal applies it again.
  const reappliedByReset = (d: DecisionSent): boolean =>
    ctx.runLog.resets.some(
      (r) => r.conversationId === rootConversationOf(d.conversationId) && d.ackAt! >= r.pointAt && d.sentAt <= r.doneAt,
    );
  for (const [key, d] of first) {
    const row = applied.get(key);
    if (row) {
      stats.applied++;
      if (rootConversationOf(row.conversation_id) !== row.conversation_id) stats.appliedInSubAgents++;
      for (const [i, callId] of row.tool_call_ids.entries()) {
        const outcome = calls.get(row.call_keys?.[i] ?? '')?.outcome;
        const honoured =
          row.decision === 'reject'
            ? outcome === 'rejected'
            : outcome !== undefined && outcome !== 'rejected' && outcome !== 'approval_timeout';
        if (!honoured && reappliedByReset(d)) {
          stats.reappliedByReset++;
          stats.reappliedByResetNotes.push(
            `${key} (${row.decision}): applied, then a reset went back before it; call ${callId} ended ${outcome ?? 'without a tool message'}`,
          );
        } else if (!honoured) {
          stats.lost++;
          problems.push(
            `decision not honoured: ${key} (${row.decision}) but call ${callId} ended ${outcome ?? 'without a tool message'}`,
          );
        }
      }
      continue;
    }
    // A cancel or interrupt acknowledged after the call was requested and before the decision was sent.
    const interventionBefore = (requestedAt: number): boolean =>
      ctx.runLog.interventions.some(
        (i) =>
          i.conversationId === rootConversationOf(d.conversationId) &&
          i.ackAt !== undefined &&
          i.ackAt >= requestedAt &&
          i.ackAt <= d.sentAt,
      );
    const why: string[] = [];
    for (const target of d.targets) {
      const callKey = target.callKey;
      const outcome = calls.get(callKey)?.outcome;
      const deadline =
        target.requestedAt +
        (ctx.approvalTimeoutsMs?.get(rootConversationOf(d.conversationId)) ?? ctx.approvalTimeoutMs);
      const byOther = (decidedBy.get(callKey) ?? []).some((id) => id !== d.decisionId);
      if (byOther) continue;
      // Acknowledged before the deadline means the signal is in history before the deadline's timer
      // fired, so the conversation must have applied it; acknowledged later, either outcome is right.
      if (outcome === 'approval_timeout' && d.ackAt! >= deadline) continue;
      if ((outcome === 'cancelled' || outcome === 'interrupted') && interventionBefore(target.requestedAt)) continue;
      const interventions = ctx.runLog.interventions
        .filter(
          (i) =>
            i.conversationId === rootConversationOf(d.conversationId) &&
            i.ackAt !== undefined &&
            i.ackAt >= target.requestedAt,
        )
        .map((i) => `${i.kind} ${i.ackAt! - d.ackAt!} ms after it`);
      why.push(
        `call ${target.toolCallId} ended ${outcome ?? 'without a tool message'}; the decision was acknowledged ` +
          `${deadline - d.ackAt!} ms before the call's approval deadline` +
          (interventions.length > 0 ? ` (driver then sent: ${interventions.join(', ')})` : ''),
      );
    }
    if (why.length === 0) stats.superseded++;
    else if (reappliedByReset(d)) {
      stats.reappliedByReset++;
      stats.reappliedByResetNotes.push(`${key} (${d.decision}): not applied by the new run: ${why.join('; ')}`);
    } else {
      stats.lost++;
      lostIn.add(d.conversationId);
      problems.push(
        `decision lost: ${key} (${d.decision}${d.toolCallId ? ` ${d.toolCallId}` : ', all'}): ${why.join('; ')}`,
      );
    }
  }
  return { ...stats, withoutIdentity };
}

/** Values grouped by a key of each. */
function groupBy<T>(values: readonly T[], keyOf: (value: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const value of values) groups.set(keyOf(value), [...(groups.get(keyOf(value)) ?? []), value]);
  return groups;
}

/**
 * For a stored transcript, the key of the call each tool message answers, by the tool message's seq. A tool message
 * answers a call of the nearest assistant message before it.
 */
function callKeysOfToolMessages(
  conversationId: string,
  messages: readonly { seq: number; message: ChatMessage }[],
): Map<number, string> {
  const keys = new Map<number, string>();
  let open: { seq: number; ids: string[] } | undefined;
  for (const { seq, message } of messages) {
    if (message.role === 'assistant') open = { seq, ids: (message.tool_calls ?? []).map((c) => c.id) };
    else if (message.role === 'tool' && open) {
      const index = open.ids.indexOf(message.tool_call_id);
      if (index >= 0) keys.set(seq, callInstanceKey(conversationId, open.seq, index));
    } else open = undefined;
  }
  return keys;
}
