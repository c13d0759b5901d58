import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { callInstanceKey } from '../../src/core/effect-keys';
import { roundUsd } from '../../src/core/pricing';
import type { ChatMessage } from '../../src/contract/messages';
import type { DecisionKind } from '../../src/contract';
import { findPairingProblems, type PairingItem } from '../../src/core/pairing';
import { assistantWithCalls, CoreDriver, deadlinePasses, decide, verdict, STORE_REFUSAL } from '../support/core-driver';

// The conversation core (src/core/conversation.ts), the same class the workflow runs, driven by
// random event sequences through a synchronous stand-in for the workflow edge: user messages
// (new, repeated, malformed; interrupt or queue), cancels, model answers with 0-4 calls (some
// needing approval, some that cannot run, some not idempotent; provider ids unique or restarted
// in every response), model failures, decisions (one call, all, unknown ids, stale keys, late,
// repeated ids, by signal or update), tool results (ok, failed, cut off), approval deadlines,
// continue-as-new between turns, PostgreSQL refusing a write (a note takes its place), writes that
// take time (a flush held open while events arrive), decisions whose verification is still in flight
// when their calls' deadline passes, and the end of the conversation. The state (what a query answers)
// is checked after every event. Model answers report tokens
// (priced or not): the search attributes carry the conversation's figures, and each sequence is
// played again on a run that predates them to show they add no upsert.

type Event =
  | { type: 'message'; id: 'new' | 'repeat' | 'none' | 'malformed' }
  | { type: 'cancel' }
  | {
      type: 'model';
      calls: {
        approval: boolean;
        broken: boolean;
        idempotent: boolean;
        handoff: string | undefined;
        blocked: boolean;
      }[];
      spent?: { promptTokens: number; completionTokens: number; priced: boolean };
      /**
       * For an answer without calls: what the activity found (a typed output that did not match, a guardrail that
       * stopped the turn).
       */
      final: 'plain' | 'mismatch' | 'inputTrip' | 'outputTrip';
    }
  | { type: 'modelFails' }
  | {
      type: 'decide';
      target: number | 'all' | 'unknown' | 'stale';
      kind: 'approve' | 'reject' | 'edit' | 'respond';
      via: 'signal' | 'update';
      repeatId: boolean;
      late: boolean;
      verified: boolean;
    }
  | { type: 'verdict' }
  | { type: 'tool'; index: number; result: 'ok' | 'fail' | 'cut_off' }
  | { type: 'lateReport'; index: number }
  | { type: 'deadline' }
  | { type: 'continueAsNew' }
  | { type: 'refuseNextWrite' }
  | { type: 'holdFlush' }
  | { type: 'completeFlush' }
  | { type: 'end' };

const eventArbitrary: fc.Arbitrary<Event> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      type: fc.constant('message' as const),
      id: fc.constantFrom('new' as const, 'new' as const, 'repeat' as const, 'none' as const, 'malformed' as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ type: 'cancel' as const }) },
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant('model' as const),
      calls: fc.array(
        fc.record({
          approval: fc.boolean(),
          broken: fc.constantFrom(false, false, false, true),
          idempotent: fc.boolean(),
          handoff: fc.constantFrom(undefined, undefined, undefined, undefined, undefined, undefined, 'a', 'b'),
          blocked: fc.constantFrom(false, false, false, false, false, true),
        }),
        { maxLength: 4 },
      ),
      final: fc.constantFrom(
        'plain' as const,
        'plain' as const,
        'plain' as const,
        'mismatch' as const,
        'inputTrip' as const,
        'outputTrip' as const,
      ),
      spent: fc.option(
        fc.record({
          promptTokens: fc.nat(5000),
          completionTokens: fc.nat(2000),
          priced: fc.constantFrom(true, true, false),
        }),
        {
          nil: undefined,
        },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ type: 'modelFails' as const }) },
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant('decide' as const),
      target: fc.oneof(
        fc.nat(3),
        fc.constant('all' as const),
        fc.constant('unknown' as const),
        fc.constant('stale' as const),
      ),
      kind: fc.constantFrom('approve' as const, 'reject' as const, 'edit' as const, 'respond' as const),
      via: fc.constantFrom('signal' as const, 'update' as const),
      repeatId: fc.constantFrom(false, false, true),
      late: fc.constantFrom(false, false, false, true),
      verified: fc.constantFrom(true, false),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ type: 'verdict' as const }) },
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant('tool' as const),
      index: fc.nat(3),
      result: fc.constantFrom('ok' as const, 'ok' as const, 'fail' as const, 'cut_off' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('lateReport' as const), index: fc.nat(20) }) },
  { weight: 2, arbitrary: fc.constant({ type: 'deadline' as const }) },
  { weight: 1, arbitrary: fc.constant({ type: 'continueAsNew' as const }) },
  { weight: 1, arbitrary: fc.constant({ type: 'refuseNextWrite' as const }) },
  { weight: 1, arbitrary: fc.constant({ type: 'holdFlush' as const }) },
  { weight: 3, arbitrary: fc.constant({ type: 'completeFlush' as const }) },
  { weight: 1, arbitrary: fc.constant({ type: 'end' as const }) },
);

interface Run {
  driver: CoreDriver;
  /** Provider ids restart in every response (`call_0`, `call_1`, ...) when true. */
  reusedIds: boolean;
  messages: { id: string; text: string }[];
  sent: number;
  responses: number;
  decisionIds: string[];
  /** Every call instance seen: its provider id, and what its tool reported or must settle as. */
  calls: Map<string, { id: string; expected?: string; expectedKind?: string; handoff?: boolean }>;
  /** Decisions sent whose verification is in flight, oldest first, with what was true when they were sent. */
  verifying: SentDecision[];
  /** The approval deadline of the open batch passed while a decision was being verified. */
  deadlineHeld: boolean;
  /** Verdicts that came after their calls' deadline passed. */
  verdictsAfterDeadline: number;
  /** Answers that did not match the typed output and were asked for again. */
  askedAgain: number;
}

/** A decision as sent, and the calls waiting then. */
interface SentDecision {
  decisionId: string;
  kind: 'approve' | 'reject' | 'edit' | 'respond';
  late: boolean;
  waiting: Set<string>;
}

const NOTE = `[This message could not be stored, so its text is lost: ${STORE_REFUSAL}]`;

/** What a decision did, checked against what was true when it was sent. */
function checkDecided(
  run: Run,
  sent: SentDecision,
  outcome: { refusal: string } | { applied: boolean; ids: string[] },
): void {
  if ('refusal' in outcome) return;
  if (!run.decisionIds.includes(sent.decisionId)) {
    run.decisionIds.push(sent.decisionId);
    expect(outcome.applied).toBe(true);
    expect(sent.late).toBe(false); // a decision sent after the deadline never applies
    for (const id of outcome.ids) {
      const decided = [...run.driver.calls, ...run.driver.closedCalls].find(
        (c) => c.id === id && sent.waiting.has(c.key),
      );
      expect(decided).toBeDefined(); // only calls waiting for a person when it was sent are decided
      if (sent.kind === 'reject') run.calls.get(decided!.key)!.expectedKind = 'rejected';
      if (sent.kind === 'respond') run.calls.get(decided!.key)!.expectedKind = 'responded'; // answered by a person: never started
    }
  } else {
    expect(outcome.applied).toBe(false); // a decision id is applied once
  }
}

function apply(run: Run, event: Event): void {
  const d = run.driver;
  d.clock += 1000;
  switch (event.type) {
    case 'message': {
      const text = `message ${++run.sent}`;
      if (event.id === 'malformed') return d.userMessage({ text: '' });
      const repeated = event.id === 'repeat' ? run.messages.filter((m) => m.id.startsWith('m-')).at(-1)?.id : undefined;
      const messageId = repeated ?? (event.id === 'none' ? undefined : `m-${run.sent}`);
      const accepted = repeated === undefined;
      d.userMessage(messageId ? { text, messageId } : { text });
      if (accepted) run.messages.push({ id: messageId ?? 'generated', text });
      return;
    }
    case 'cancel':
      return d.cancelTurn('changed my mind');
    case 'model': {
      if (d.stage !== 'model') return;
      const seq = d.request!.throughSeq + 1;
      run.deadlineHeld = false;
      const response = run.responses++;
      const spec = event.calls.map((c, i) => ({
        id: run.reusedIds ? `call_${i}` : `call_${response}_${i}`,
        needsApproval: c.approval,
        ...(c.approval ? { decisions: ['approve', 'reject', 'edit', 'respond'] as DecisionKind[] } : {}),
        idempotent: c.idempotent,
        problem: c.broken ? { reason: 'invalid_arguments' as const, message: 'arguments are not JSON' } : undefined,
        ...(c.handoff ? { name: `transfer_to_${c.handoff}`, handoff: c.handoff } : {}),
        ...(c.blocked && !c.handoff ? { blocked: { guardrail: 'limits', reason: 'over the limit' } } : {}),
      }));
      spec.forEach((c, i) =>
        run.calls.set(callInstanceKey(d.conversationId, seq, i), {
          id: c.id,
          // Calls asked for past maxSteps (tools off) are not run, blocked or not.
          ...(c.problem || d.request!.toolChoice === 'none'
            ? { expectedKind: 'tool_failed' }
            : c.blocked
              ? { expectedKind: 'guardrail_blocked' }
              : {}),
          ...(c.handoff ? { handoff: true } : {}),
        }),
      );
      const { message, plans } = assistantWithCalls(spec);
      const spent = event.spent && {
        usage: { promptTokens: event.spent.promptTokens, completionTokens: event.spent.completionTokens },
        costUsd: event.spent.priced
          ? roundUsd((event.spent.promptTokens * 2 + event.spent.completionTokens * 8) / 1e6)
          : undefined,
      };
      const found =
        spec.length > 0 || event.final === 'plain'
          ? undefined
          : event.final === 'mismatch'
            ? {
                output: {
                  ok: false as const,
                  problem: 'The answer is not JSON.',
                  retries: response % 2,
                  schemaName: 'out',
                },
              }
            : {
                guardrail: {
                  on: event.final === 'inputTrip' ? ('input' as const) : ('output' as const),
                  guardrail: 'screen',
                  reason: 'not allowed',
                },
              };
      d.modelAnswers(message, plans, spent, found);
      if (found?.output && d.stage === 'model') run.askedAgain++; // the mismatch was said to the model, which is asked again
      return;
    }
    case 'modelFails':
      if (d.stage === 'model') d.modelFails('the provider answered 500 five times');
      return;
    case 'decide': {
      const open = d.calls;
      const call = typeof event.target === 'number' ? open[event.target % Math.max(open.length, 1)] : undefined;
      const stale = [...run.calls.entries()].find(
        ([key, c]) => !open.some((o) => o.key === key) && open.some((o) => o.id === c.id),
      );
      const decisionId =
        event.repeatId && run.decisionIds.length > 0 ? run.decisionIds.at(-1)! : `d-${run.decisionIds.length + 1}`;
      const decision = {
        decisionId,
        decision: event.kind,
        ...(event.kind === 'edit' ? { arguments: { edited: true } } : {}),
        ...(event.kind === 'respond' ? { response: 'answered by a person' } : {}),
        toolCallId: event.target === 'unknown' ? 'call_nope' : event.target === 'stale' ? stale?.[1].id : call?.id,
        ...(event.target === 'stale' && stale ? { callKey: stale[0] } : {}),
        sentAt: new Date(event.late ? d.clock + 8 * 86_400_000 : d.clock).toISOString(),
      };
      const before = d.core.state();
      const sent: SentDecision = {
        decisionId,
        kind: event.kind,
        late: event.late,
        waiting: new Set(d.calls.filter((c) => d.core.awaitsApproval(c)).map((c) => c.key)),
      };
      const outcome = decide(d, decision, event.via, { verified: event.verified });
      if ('verifying' in outcome) {
        run.verifying.push(sent);
        return;
      }
      if ('refusal' in outcome) {
        // A refused decision changes nothing but the record of refusals.
        const after = d.core.state();
        expect({ ...after, refusedDecisions: [], lastError: undefined }).toEqual({
          ...before,
          refusedDecisions: [],
          lastError: undefined,
        });
        if (event.target === 'stale' && stale) expect(outcome.refusal).toMatch(/different call|No tool call/);
        return;
      }
      return checkDecided(run, sent, outcome);
    }
    case 'verdict': {
      const sent = run.verifying.shift();
      if (!sent) return;
      // Calls still waiting when the last verification ends after their deadline passed time out then.
      const waiting = d.calls.filter((c) => d.core.awaitsApproval(c)).map((c) => c.key);
      const outcome = verdict(d);
      checkDecided(run, sent, outcome);
      if (run.deadlineHeld) run.verdictsAfterDeadline++;
      if (run.deadlineHeld && run.verifying.length === 0) {
        const decided = 'ids' in outcome ? outcome.ids : [];
        for (const key of waiting) {
          if (!decided.some((id) => run.calls.get(key)?.id === id))
            run.calls.get(key)!.expectedKind = 'approval_timeout';
        }
        run.deadlineHeld = false;
      }
      return;
    }
    case 'tool': {
      const running = d.calls.filter((c) => c.phase === 'running');
      const call = running[event.index % Math.max(running.length, 1)];
      if (!call) return;
      const known = run.calls.get(call.key)!;
      if (event.result === 'ok') {
        known.expected = JSON.stringify({ kind: 'ok', done: call.key });
        return d.toolReports(call, { content: known.expected });
      }
      const cutOff = event.result === 'cut_off' ? 'it ran longer than its timeout of 60000 ms' : undefined;
      known.expectedKind = cutOff && call.idempotent === false ? 'effect_unknown' : 'tool_failed';
      return d.toolReports(call, { message: 'the tool failed', reason: 'error', cutOff });
    }
    case 'lateReport': {
      // A report for a call that already has its outcome (settled, or its batch closed) changes nothing.
      const settled = [...run.driver.calls.filter((c) => c.phase === 'settled'), ...d.closedCalls];
      const call = settled[event.index % Math.max(settled.length, 1)];
      if (call) d.toolReports(call, { content: JSON.stringify({ kind: 'ok', late: true }) });
      return;
    }
    case 'deadline':
      if (d.stage !== 'calls' || !d.calls.some((c) => d.core.awaitsApproval(c))) return;
      // A decision being verified (sent in time) holds the deadline until its verdict.
      if (run.verifying.length > 0) run.deadlineHeld = true;
      else
        for (const call of d.calls.filter((c) => d.core.awaitsApproval(c)))
          run.calls.get(call.key)!.expectedKind = 'approval_timeout';
      return deadlinePasses(d);
    case 'continueAsNew': {
      if (d.stage !== 'idle' || d.closed) return;
      const before = d.core.state();
      d.continueAsNew();
      const after = d.core.state();
      expect(after.runs).toBe(before.runs + 1);
      const kept = (s: typeof before) => [
        s.steps,
        s.messageCount,
        s.lastError,
        s.decisionsApplied,
        s.recentTurns,
        s.unknownEffectsCount,
        s.refusedDecisions,
        s.usage,
      ];
      expect(kept(after)).toEqual(kept(before));
      return;
    }
    case 'refuseNextWrite':
      d.db.refuseNextWrite = true;
      return;
    case 'holdFlush':
      d.db.holdFlushes = true;
      return;
    case 'completeFlush':
      return d.db.completeFlush();
    case 'end':
      d.core.end();
      return d.advance();
  }
}

/** The stored transcript as the pairing rules see it. */
function pairingItems(stored: readonly ChatMessage[]): PairingItem[] {
  return stored.map((m) => ({
    role: m.role,
    callIds: m.role === 'assistant' ? m.tool_calls?.map((c) => c.id) : undefined,
    answers: m.role === 'tool' ? m.tool_call_id : undefined,
  }));
}

/**
 * Each stored tool message with the effect key of the call it answers
 * (positional: results follow their assistant message in call order), and
 * the keys whose result PostgreSQL refused (a note in its place).
 */
function resultsByKey(
  conversationId: string,
  stored: readonly ChatMessage[],
  refused: ReadonlySet<number>,
): { results: Map<string, string[]>; notStored: Set<string> } {
  const results = new Map<string, string[]>();
  const notStored = new Set<string>();
  stored.forEach((m, seq) => {
    if (m.role !== 'assistant') return;
    (m.tool_calls ?? []).forEach((call, index) => {
      const answer = stored[seq + 1 + index];
      expect(answer).toMatchObject({ role: 'tool', tool_call_id: call.id });
      const key = callInstanceKey(conversationId, seq, index);
      results.set(key, [...(results.get(key) ?? []), (answer as { content: string }).content]);
      if (refused.has(seq + 1 + index)) notStored.add(key);
    });
  });
  return { results, notStored };
}

function checkAfterEvent(run: Run): void {
  const d = run.driver;
  const state = d.core.state();
  // What the search attributes say is what the state says.
  expect(d.published.status).toBe(state.status);
  // (While the write before a wait is under way, the state does not show the waiting calls yet.)
  if (!d.db.flushHeld) expect(d.published.pendingApprovals).toBe(state.pendingApprovals.length);
  // A call is shown waiting for a person only once the message that asked for it is stored: whoever sees it may read
  // it.
  for (const pending of state.pendingApprovals) {
    const assistantSeq = Number(/\/msg-(\d+)\//.exec(pending.callKey)?.[1]);
    const asked = d.stored[assistantSeq];
    expect(asked?.role === 'assistant' && asked.tool_calls?.some((c) => c.id === pending.toolCallId)).toBe(true);
  }
  expect(d.published.unknownEffects).toBe(state.unknownEffectsCount);
  // The conversation's tokens and cost: exact between turns (a turn's end publishes them), never ahead of the state.
  const spent = { tokens: state.usage.promptTokens + state.usage.completionTokens, costUsd: state.usage.costUsd };
  if (d.stage === 'idle') expect(d.published.usage).toEqual(spent);
  expect(d.published.usage!.tokens).toBeLessThanOrEqual(spent.tokens);
  expect(d.published.usage!.costUsd).toBeLessThanOrEqual(spent.costUsd);
  // Every model call sees a transcript that keeps the pairing rules, with nothing to repair.
  if (d.stage === 'model') {
    const view = d.modelView();
    expect(findPairingProblems(pairingItems(view))).toEqual([]);
    expect(d.request).toMatchObject({ throughSeq: view.length - 1, omitSeqs: [], synthesized: [] });
  }
  // No side effect twice: a call instance is started at most once, and only when it may run.
  for (const [key, count] of d.starts) {
    expect(count, key).toBe(1);
    const call = d.calls.find((c) => c.key === key);
    if (call?.needsApproval) expect(call.decision?.approved).toBe(true);
  }
  expect(state.transcriptRepairs).toBe(0);
}

function checkAtEnd(run: Run): void {
  const d = run.driver;
  while (d.db.flushHeld) d.db.completeFlush(); // every write ends
  if (d.stage !== 'idle') d.stop(true); // the workflow is cancelled with a turn open
  expect(findPairingProblems(pairingItems(d.stored))).toEqual([]);
  const refused = new Set(d.db.refusedSeqs);
  const { results, notStored } = resultsByKey(d.conversationId, d.stored, refused);
  expect([...results.keys()].sort()).toEqual([...run.calls.keys()].sort()); // every call instance answered...
  for (const [key, known] of run.calls) {
    const answers = results.get(key)!;
    expect(answers).toHaveLength(1); // ...exactly once
    const kind = (JSON.parse(answers[0]) as { kind: string }).kind;
    if (notStored.has(key)) {
      expect(kind).toBe('not_stored'); // a result PostgreSQL refused is a note, never a gap
      continue;
    }
    if (known.handoff) {
      // A handoff never runs: it is the agent it moved to, refused, or (asked past maxSteps, or cut off by a stop) not
      // run.
      expect(d.starts.has(key)).toBe(false);
      if (kind === undefined) expect(Object.keys(JSON.parse(answers[0]) as object)).toEqual(['assistant']);
      else expect(['tool_failed', 'cancelled']).toContain(kind);
      continue;
    }
    if (known.expectedKind === 'responded') expect(d.starts.has(key)).toBe(false); // a person answered it: the tool never ran
    if (known.expected)
      expect(answers[0]).toBe(known.expected); // a reported result is never replaced
    else if (known.expectedKind) expect(kind).toBe(known.expectedKind);
    if (kind === 'ok') expect(answers[0]).toBe(known.expected); // and only the call's own report is its result
  }
  // Every accepted user message is stored once, in order, and answered by exactly one turn.
  // (The core's own notes asking again for a typed output are user messages too; no sender sent them.)
  const outputCheck = (m: ChatMessage): boolean => m.role === 'user' && m.content.startsWith('[output check]');
  const refusedChecks = new Set(
    d.db.refusedEntries.flatMap((e) => ('message' in e && outputCheck(e.message) ? [e.seq] : [])),
  );
  const userSeqs = d.stored.flatMap((m, seq) =>
    m.role === 'user' && !outputCheck(m) && !refusedChecks.has(seq) ? [seq] : [],
  );
  const users = userSeqs.map((seq) => d.stored[seq].content);
  const queued = d.core.state().queuedMessages;
  expect(users).toEqual(
    run.messages.slice(0, run.messages.length - queued).map((m, i) => (refused.has(userSeqs[i]) ? NOTE : m.text)),
  );
  const answered = d.turns.flatMap((t) => t.messageIds);
  expect(answered).toHaveLength(users.length);
  expect(new Set(answered).size).toBe(answered.length);
  expect(d.core.state().decisionsApplied).toBeLessThanOrEqual(run.decisionIds.length);
}

describe('the conversation core under random events (property)', () => {
  it('keeps every model call valid, runs each call at most once, never loses a result or a message, and answers every call exactly once', () => {
    const totals = {
      cases: 0,
      events: 0,
      upsertsWithSpending: 0,
      calls: 0,
      started: 0,
      turns: 0,
      reusedIdCases: 0,
      interrupted: 0,
      cancelled: 0,
      decisions: 0,
      flushesHeld: 0,
      verdictsAfterDeadline: 0,
      editedRuns: 0,
      outputRetries: 0,
      turnOutcomes: {} as Record<string, number>,
      outcomes: {} as Record<string, number>,
    };
    fc.assert(
      fc.property(
        fc.array(eventArbitrary, { minLength: 1, maxLength: 60 }),
        fc.boolean(),
        fc.constantFrom('interrupt' as const, 'queue' as const),
        fc.integer({ min: 1, max: 4 }),
        (sequence, reusedIds, onNewMessage, maxSteps) => {
          const driver = new CoreDriver(
            { systemPrompt: 'You help.', onNewMessage, maxSteps, approvalTimeoutMs: 60_000 },
            'conv-1',
          );
          const run: Run = {
            driver,
            reusedIds,
            messages: [],
            sent: 0,
            responses: 0,
            decisionIds: [],
            calls: new Map(),
            verifying: [],
            deadlineHeld: false,
            verdictsAfterDeadline: 0,
            askedAgain: 0,
          };
          driver.userMessage({ text: 'first', messageId: 'm-0' });
          run.messages.push({ id: 'm-0', text: 'first' });
          for (const event of sequence) {
            apply(run, event);
            checkAfterEvent(run);
          }
          checkAtEnd(run);
          totals.upsertsWithSpending += driver.upserts.filter(
            (u) => u.usage && u.usage.tokens > 0 && u.usage.costUsd > 0,
          ).length;
          totals.cases++;
          totals.events += sequence.length;
          totals.calls += run.calls.size;
          totals.turns += driver.turns.length;
          totals.reusedIdCases += reusedIds ? 1 : 0;
          totals.interrupted += driver.turns.filter((t) => t.outcome === 'interrupted').length;
          totals.cancelled += driver.turns.filter((t) => t.outcome === 'cancelled').length;
          totals.started += driver.starts.size;
          totals.decisions += run.decisionIds.length;
          totals.flushesHeld += driver.db.flushesHeld;
          totals.verdictsAfterDeadline += run.verdictsAfterDeadline;
          totals.editedRuns += [...driver.calls, ...driver.closedCalls].filter(
            (c) => c.decision?.kind === 'edit' && driver.starts.has(c.key),
          ).length;
          totals.outputRetries += run.askedAgain;
          for (const t of driver.turns) totals.turnOutcomes[t.outcome] = (totals.turnOutcomes[t.outcome] ?? 0) + 1;
          for (const m of driver.stored) {
            if (m.role !== 'tool') continue;
            const parsed = JSON.parse(m.content) as { kind?: string; assistant?: string; reason?: string };
            const kind =
              parsed.assistant !== undefined
                ? 'handoff'
                : parsed.reason === 'handoff_refused'
                  ? 'handoff_refused'
                  : (parsed.kind ?? 'ok');
            totals.outcomes[kind] = (totals.outcomes[kind] ?? 0) + 1;
          }
        },
      ),
      { numRuns: 2000 },
    );
    console.log('conversation core property:', JSON.stringify(totals));
    expect(totals.interrupted).toBeGreaterThan(0);
    expect(totals.cancelled).toBeGreaterThan(0);
    expect(totals.upsertsWithSpending).toBeGreaterThan(0); // figures of priced calls were published, not only zeros
    expect(totals.flushesHeld).toBeGreaterThan(0); // events arrived while a write was under way
    for (const kind of [
      'ok',
      'tool_failed',
      'rejected',
      'approval_timeout',
      'cancelled',
      'interrupted',
      'effect_unknown',
      'not_stored',
      'handoff',
      'handoff_refused',
      'guardrail_blocked',
    ]) {
      expect(totals.outcomes[kind], kind).toBeGreaterThan(0); // every way a call ends was exercised
    }
    for (const outcome of ['answered', 'invalid_output', 'guardrail_tripped'])
      expect(totals.turnOutcomes[outcome], outcome).toBeGreaterThan(0);
    expect(totals.outputRetries).toBeGreaterThan(0);
  });
});
