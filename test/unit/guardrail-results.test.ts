import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { boundedOutputInfo, readGuardrailVerdict } from '../../src/activities/guardrail-results';
import { formatGuardrailResults } from '../../src/cli/guardrail-lines';
import { GUARDRAIL_OUTPUT_INFO_MAX_CHARS, withGuardrailResults } from '../../src/contract/guardrail-results';

// A guardrail's verdict in our shape ({tripwire, reason}) or the OpenAI Agents SDK's ({tripwireTriggered,
// outputInfo}), read into what a turn's record keeps, with its outputInfo bounded.

describe('readGuardrailVerdict', () => {
  it('takes our shape, with or without outputInfo', () => {
    expect(readGuardrailVerdict('input', 'cards', { tripwire: true, reason: 'Remove the card number.' })).toEqual({
      on: 'input',
      guardrail: 'cards',
      tripwire: true,
      reason: 'Remove the card number.',
    });
    expect(readGuardrailVerdict('output', 'ids', { tripwire: false, outputInfo: { checked: 3 } })).toEqual({
      on: 'output',
      guardrail: 'ids',
      tripwire: false,
      outputInfo: { checked: 3 },
    });
  });

  it("takes the Agents SDK's shape", () => {
    expect(
      readGuardrailVerdict('input', 'topic', { tripwireTriggered: true, outputInfo: { topic: 'weather', score: 0.2 } }),
    ).toEqual({ on: 'input', guardrail: 'topic', tripwire: true, outputInfo: { topic: 'weather', score: 0.2 } });
    expect(readGuardrailVerdict('output', 'topic', { tripwireTriggered: false, outputInfo: 'fine' })).toEqual({
      on: 'output',
      guardrail: 'topic',
      tripwire: false,
      outputInfo: 'fine',
    });
    // Both, saying the same: taken.
    expect(readGuardrailVerdict('input', 'both', { tripwire: true, tripwireTriggered: true }).tripwire).toBe(true);
  });

  it('leaves out an empty reason', () => {
    expect(readGuardrailVerdict('input', 'g', { tripwire: true, reason: '  ' })).toEqual({
      on: 'input',
      guardrail: 'g',
      tripwire: true,
    });
  });

  it('refuses, for good, a verdict without a boolean tripwire or with two that differ, naming the guardrail', () => {
    for (const verdict of [undefined, null, {}, { tripwire: 'yes' }, { outputInfo: 1 }, 'tripped']) {
      const err = catchError(() => readGuardrailVerdict('input', 'sloppy', verdict));
      expect(err).toBeInstanceOf(ApplicationFailure);
      expect(err).toMatchObject({ type: 'GuardrailFailed', nonRetryable: true });
      expect(err.message).toContain('The input guardrail "sloppy" returned');
      expect(err.message).toContain('says no tripwire');
      expect(err.message).toContain('{ tripwireTriggered: boolean, outputInfo? }');
    }
    const both = catchError(() => readGuardrailVerdict('output', 'torn', { tripwire: false, tripwireTriggered: true }));
    expect(both.message).toContain('says tripwire and tripwireTriggered differently');
  });
});

describe('boundedOutputInfo', () => {
  it('keeps JSON up to the limit, as JSON.stringify keeps it', () => {
    expect(boundedOutputInfo(undefined)).toEqual({});
    expect(boundedOutputInfo(null)).toEqual({ outputInfo: null });
    expect(boundedOutputInfo({ at: new Date('2026-01-02T03:04:05Z'), skip: undefined, n: 1 })).toEqual({
      outputInfo: { at: '2026-01-02T03:04:05.000Z', n: 1 },
    });
    const exact = 'x'.repeat(GUARDRAIL_OUTPUT_INFO_MAX_CHARS - 2); // its JSON has the two quotes
    expect(boundedOutputInfo(exact)).toEqual({ outputInfo: exact });
  });

  it('leaves out one over the limit or not JSON, saying why', () => {
    const over = boundedOutputInfo('x'.repeat(GUARDRAIL_OUTPUT_INFO_MAX_CHARS - 1));
    expect(over.outputInfo).toBeUndefined();
    expect(over.outputInfoDropped).toBe(
      `outputInfo is ${GUARDRAIL_OUTPUT_INFO_MAX_CHARS + 1} characters of JSON, over the ${GUARDRAIL_OUTPUT_INFO_MAX_CHARS} a turn's record keeps (GUARDRAIL_OUTPUT_INFO_MAX_CHARS): return a summary, and keep the rest where operators can read it (a table, a log)`,
    );
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(boundedOutputInfo(cycle).outputInfoDropped).toMatch(
      /^outputInfo is not JSON \(.*circular.*\); return plain data$/i,
    );
    expect(boundedOutputInfo(10n).outputInfoDropped).toMatch(/^outputInfo is not JSON \(.*BigInt.*\)/);
    expect(boundedOutputInfo(() => 1)).toEqual({
      outputInfoDropped: 'outputInfo is not JSON (a function); return plain data',
    });
  });
});

describe('withGuardrailResults', () => {
  it('keeps one result per guardrail and place, the later replacing the earlier in its position', () => {
    const a = { on: 'input' as const, guardrail: 'a', tripwire: false };
    const b = { on: 'output' as const, guardrail: 'b', tripwire: false, outputInfo: 1 };
    const sameNameOtherPlace = { on: 'output' as const, guardrail: 'a', tripwire: false };
    const b2 = { ...b, tripwire: true, outputInfo: 2 };
    expect(withGuardrailResults(undefined, [a])).toEqual([a]);
    expect(withGuardrailResults([a, b], [sameNameOtherPlace, b2])).toEqual([a, b2, sameNameOtherPlace]);
  });

  it("keeps a tool guardrail's result per call: another call's adds one, the same call's replaces it", () => {
    const first = {
      on: 'tool' as const,
      guardrail: 't',
      toolCallId: 'call_1',
      action: 'block' as const,
      tripwire: true,
    };
    const second = { ...first, toolCallId: 'call_2', action: 'allow' as const, tripwire: false, outputInfo: 1 };
    const again = { ...first, action: 'require_approval' as const, tripwire: false };
    expect(withGuardrailResults([first], [second])).toEqual([first, second]);
    expect(withGuardrailResults([first, second], [again])).toEqual([again, second]);
  });
});

describe('formatGuardrailResults (show)', () => {
  it('prints each guardrail of each recent turn with its verdict and outputInfo', () => {
    const text = formatGuardrailResults([
      { messageIds: ['m1'], outcome: 'answered', steps: 1 },
      {
        messageIds: ['m2'],
        outcome: 'guardrail_tripped',
        steps: 1,
        guardrails: [
          { on: 'input', guardrail: 'topic', tripwire: true, reason: 'Off topic.', outputInfo: { topic: 'weather' } },
          { on: 'input', guardrail: 'big', tripwire: false, outputInfoDropped: 'outputInfo is 9000 characters' },
        ],
      },
    ]);
    expect(text).toBe(
      [
        'guardrails of the turn for m2 (guardrail_tripped):',
        '  input topic: tripped (Off topic.)  outputInfo {"topic":"weather"}',
        '  input big: passed  outputInfo not kept: outputInfo is 9000 characters',
      ].join('\n'),
    );
    expect(formatGuardrailResults([{ messageIds: ['m1'], outcome: 'answered', steps: 1 }])).toBe('');
  });
});

function catchError(run: () => unknown): Error & Record<string, unknown> {
  try {
    run();
  } catch (err) {
    return err as Error & Record<string, unknown>;
  }
  throw new Error('expected a throw');
}
