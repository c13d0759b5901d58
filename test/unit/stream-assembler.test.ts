import { describe, expect, it } from 'vitest';
import { StreamAssembler, type StreamChunk } from '../../src/activities/stream-assembler';

const delta = (d: NonNullable<NonNullable<StreamChunk['choices']>[number]['delta']>, finish?: string): StreamChunk => ({
  choices: [{ index: 0, delta: d, finish_reason: finish ?? null }],
});

describe('assembling a streamed response', () => {
  it('joins tool-call fragments by index, in any order, and a later empty id or name never overwrites a stored one', () => {
    const a = new StreamAssembler();
    a.push(
      delta({
        tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'list_orders', arguments: '' } }],
      }),
    );
    a.push(
      delta({
        tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'find_customer', arguments: '' } }],
      }),
    );
    a.push(delta({ tool_calls: [{ index: 0, id: '', function: { name: '', arguments: '{"query":' } }] }));
    a.push(
      delta({ tool_calls: [{ index: 1, id: '', function: { name: '', arguments: '{"customer_id":"cus_ada"}' } }] }),
    );
    a.push(delta({ tool_calls: [{ index: 0, function: { arguments: '"Ada"}' } }] }));
    a.push(delta({}, 'tool_calls'));
    expect(a.finish()).toMatchObject({
      problems: [],
      finishReason: 'tool_calls',
      toolCalls: [
        { index: 0, id: 'call_a', name: 'find_customer', arguments: '{"query":"Ada"}' },
        { index: 1, id: 'call_b', name: 'list_orders', arguments: '{"customer_id":"cus_ada"}' },
      ],
    });
  });

  it('returns the text each chunk adds, and collects reasoning_content apart from it', () => {
    const a = new StreamAssembler();
    expect(a.push(delta({ reasoning_content: 'think ' }))).toBe('');
    expect(a.push(delta({ content: 'Hel' }))).toBe('Hel');
    expect(a.push(delta({ content: 'lo' }, 'stop'))).toBe('lo');
    expect(a.finish()).toMatchObject({ content: 'Hello', reasoningContent: 'think ', problems: [] });
  });

  it('reports a stream cut before its finish_reason, a length finish inside tool calls, and calls without a name (a missing id is given one later)', () => {
    const cut = new StreamAssembler();
    cut.push(delta({ content: 'partial' }));
    expect(cut.finish().problems).toEqual(['the stream ended without a finish_reason (connection cut mid-response)']);

    const truncated = new StreamAssembler();
    truncated.push(
      delta(
        { tool_calls: [{ index: 0, id: 'call_x', function: { name: 'find_customer', arguments: '{"qu' } }] },
        'length',
      ),
    );
    expect(truncated.finish().problems).toEqual([
      'finish_reason "length" in the middle of tool calls: their arguments may be truncated',
    ]);

    const anonymous = new StreamAssembler();
    anonymous.push(delta({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] }, 'tool_calls'));
    expect(anonymous.finish().problems).toEqual(['tool call #0 has no function name']);

    const nameless = new StreamAssembler();
    nameless.push(
      delta({ tool_calls: [{ index: 0, function: { name: 'find_customer', arguments: '{}' } }] }, 'tool_calls'),
    );
    expect(nameless.finish()).toMatchObject({ problems: [], toolCalls: [{ index: 0, id: '', name: 'find_customer' }] });
  });
});
