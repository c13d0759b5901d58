import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyPairingRepair, findPairingProblems, planPairingRepair, type PairingItem } from '../../src/core/pairing';

const user: PairingItem = { role: 'user' };
const assistant = (...callIds: string[]): PairingItem => ({ role: 'assistant', callIds });
const tool = (id: string): PairingItem => ({ role: 'tool', answers: id });

describe('the pairing rules', () => {
  it('accept parallel calls answered in any order before the next message', () => {
    expect(findPairingProblems([user, assistant('a', 'b'), tool('b'), tool('a'), assistant(), user])).toEqual([]);
  });

  it('report every unanswered call, not only the first', () => {
    expect(findPairingProblems([user, assistant('a', 'b', 'c'), tool('b'), user])).toEqual([
      { kind: 'missing_result', index: 1, toolCallId: 'a' },
      { kind: 'missing_result', index: 1, toolCallId: 'c' },
    ]);
  });

  it('report calls still open at the end of the list', () => {
    expect(findPairingProblems([user, assistant('a')])).toEqual([
      { kind: 'missing_result', index: 1, toolCallId: 'a' },
    ]);
  });

  it('report orphan and duplicate results', () => {
    expect(findPairingProblems([user, tool('x'), assistant('a'), tool('a'), tool('a')])).toEqual([
      { kind: 'orphan_result', index: 1, toolCallId: 'x' },
      { kind: 'duplicate_result', index: 4, toolCallId: 'a' },
    ]);
  });

  it('a result after a later user message is an orphan, and its call is unanswered', () => {
    expect(findPairingProblems([assistant('a'), user, tool('a')])).toEqual([
      { kind: 'missing_result', index: 0, toolCallId: 'a' },
      { kind: 'orphan_result', index: 2, toolCallId: 'a' },
    ]);
  });
});

const itemArbitrary: fc.Arbitrary<PairingItem> = fc.oneof(
  fc.constant<PairingItem>({ role: 'user' }),
  fc.constant<PairingItem>({ role: 'system' }),
  fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e'), { maxLength: 4 }).map((ids) => assistant(...ids)),
  fc.constantFrom('a', 'b', 'c', 'd', 'e', 'z').map(tool),
);

describe('repair', () => {
  it('turns any list of messages into one with no pairing problems, keeping every valid result (property)', () => {
    let cases = 0;
    fc.assert(
      fc.property(fc.array(itemArbitrary, { maxLength: 30 }), (items) => {
        cases++;
        const repair = planPairingRepair(items);
        const repaired = applyPairingRepair(
          items,
          repair,
          (id) => tool(id),
          (item) => item.role === 'tool',
        );
        expect(findPairingProblems(repaired)).toEqual([]);
        // Nothing but orphans and duplicates is dropped; every synthesized result answers a missing call.
        expect(repaired.length).toBe(items.length - repair.omit.length + repair.synthesize.length);
        if (repair.problems.length === 0) expect(repaired).toEqual(items);
      }),
      { numRuns: 5000 },
    );
    console.log(`pairing repair property: ${cases} generated transcripts checked`);
  });
});
