import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ToolCallBatch, type CallOutcome } from '../src/transcript/batch';
import { findPairingProblems, type PairingItem } from '../src/transcript/pairing';

// The pure core of a turn, driven by random events exactly as the workflow
// drives it: the model answers with 0-4 calls (some needing approval, some
// that cannot run), people decide (one, all, unknown ids, twice), tools start,
// finish or fail, approvals time out, the user cancels or interrupts.

type Event =
  | { type: 'model'; calls: { needsApproval: boolean; broken: boolean }[] }
  | { type: 'decide'; target: number | 'all' | 'unknown'; approve: boolean }
  | { type: 'start'; index: number }
  | { type: 'finish'; index: number; ok: boolean }
  | { type: 'timeout' }
  | { type: 'cancel' }
  | { type: 'userMessage'; policy: 'interrupt' | 'queue' };

const eventArbitrary: fc.Arbitrary<Event> = fc.oneof(
  fc.record({
    type: fc.constant('model' as const),
    calls: fc.array(fc.record({ needsApproval: fc.boolean(), broken: fc.constantFrom(false, false, false, false, true) }), { maxLength: 4 }),
  }),
  fc.record({
    type: fc.constant('decide' as const),
    target: fc.oneof(fc.nat(4), fc.constant('all' as const), fc.constant('unknown' as const)),
    approve: fc.boolean(),
  }),
  fc.record({ type: fc.constant('start' as const), index: fc.nat(4) }),
  fc.record({ type: fc.constant('finish' as const), index: fc.nat(4), ok: fc.boolean() }),
  fc.constant({ type: 'timeout' as const }),
  fc.constant({ type: 'cancel' as const }),
  fc.record({ type: fc.constant('userMessage' as const), policy: fc.constantFrom('interrupt' as const, 'queue' as const) }),
);

interface Simulation {
  transcript: PairingItem[];
  batch?: ToolCallBatch;
  firstOutcome: Map<string, CallOutcome>;
  calls: number;
  steps: number;
}

function closeIfSettled(sim: Simulation): void {
  if (!sim.batch?.isSettled()) return;
  for (const { toolCallId } of sim.batch.results()) sim.transcript.push({ role: 'tool', answers: toolCallId });
  sim.batch = undefined;
}

function apply(sim: Simulation, event: Event, now: number): void {
  const batch = sim.batch;
  const id = (index: number) => batch?.all()[index % Math.max(batch.all().length, 1)]?.id;
  switch (event.type) {
    case 'model': {
      if (batch) return; // the model is only called when no batch is open
      sim.steps++;
      const ids = event.calls.map(() => `call_${++sim.calls}`);
      sim.transcript.push({ role: 'assistant', callIds: ids });
      if (ids.length > 0) {
        sim.batch = new ToolCallBatch(
          event.calls.map((c, i) => ({
            id: ids[i],
            key: `conv/msg-${sim.steps}/call-${i}`,
            name: 'tool',
            arguments: '{}',
            needsApproval: c.needsApproval,
            problem: c.broken ? { reason: 'invalid_arguments' as const, message: 'bad' } : undefined,
          })),
          now,
        );
      }
      break;
    }
    case 'decide': {
      if (!batch) return;
      const target = event.target === 'all' ? undefined : event.target === 'unknown' ? 'call_nope' : id(event.target);
      const before = JSON.stringify(batch.snapshot());
      const checked = batch.checkDecision(target);
      if ('ids' in checked) {
        batch.decide(checked.ids, { decisionId: `d${now}`, approved: event.approve, decidedAt: now });
      } else {
        expect(JSON.stringify(batch.snapshot())).toBe(before); // a refused decision changes nothing
      }
      break;
    }
    case 'start': {
      const target = id(event.index);
      if (batch && target) batch.markRunning(target);
      break;
    }
    case 'finish': {
      const call = batch?.all()[event.index % Math.max(batch?.all().length ?? 1, 1)];
      if (batch && call?.phase === 'running') {
        batch.settle(call.id, event.ok ? { kind: 'ok', content: '"done"' } : { kind: 'tool_failed', content: '{}' });
      }
      break;
    }
    case 'timeout':
      batch?.timeOutApprovals();
      break;
    case 'cancel':
      batch?.interrupt('the user cancelled the turn');
      break;
    case 'userMessage':
      if (batch && event.policy === 'interrupt') {
        batch.interrupt('a new user message interrupted the turn');
        closeIfSettled(sim);
      }
      if (!sim.batch) sim.transcript.push({ role: 'user' });
      break;
  }
  closeIfSettled(sim);
}

/** The transcript the next model call would see: what is stored, plus, if a batch is open, its settlement by a cancel. */
function nextModelView(sim: Simulation): PairingItem[] {
  if (!sim.batch) return sim.transcript;
  const settled = ToolCallBatch.fromSnapshot(sim.batch.snapshot());
  settled.interrupt('check');
  return [...sim.transcript, ...settled.results().map((r) => ({ role: 'tool', answers: r.toolCallId }))];
}

describe('the turn core under random events (property)', () => {
  it('keeps the next model call valid, never loses a finished result, and gives every call exactly one outcome', () => {
    let cases = 0;
    let events = 0;
    let calls = 0;
    fc.assert(
      fc.property(fc.array(eventArbitrary, { minLength: 1, maxLength: 40 }), (sequence) => {
        cases++;
        const sim: Simulation = { transcript: [{ role: 'user' }], firstOutcome: new Map(), calls: 0, steps: 0 };
        sequence.forEach((event, i) => {
          events++;
          apply(sim, event, i);
          expect(findPairingProblems(nextModelView(sim))).toEqual([]);
          for (const call of sim.batch?.all() ?? []) {
            if (!call.outcome) continue;
            const first = sim.firstOutcome.get(call.id) ?? call.outcome;
            sim.firstOutcome.set(call.id, first);
            expect(call.outcome).toEqual(first); // an outcome never changes once set
          }
        });
        sim.batch?.interrupt('end of test');
        closeIfSettled(sim);
        calls += sim.calls;
        expect(findPairingProblems(sim.transcript)).toEqual([]);
        const answers = sim.transcript.filter((m) => m.role === 'tool').map((m) => m.answers);
        const asked = sim.transcript.flatMap((m) => m.callIds ?? []);
        expect([...answers].sort()).toEqual([...asked].sort()); // exactly one tool message per call
      }),
      { numRuns: 3000 },
    );
    console.log(`turn core property: ${cases} cases, ${events} events, ${calls} tool calls; every next model call valid`);
  });
});
