import { countTokens } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import {
  contextWindowOf,
  DEFAULT_CONTEXT_WINDOW,
  fitToContext,
  MESSAGE_SHARE,
} from '../../src/activities/context-budget';
import type { ChatMessage } from '../../src/contract/messages';
import { findPairingProblems } from '../../src/core/pairing';
import { countPromptTokens } from '../../src/testing/context-window';

// The context budget (src/activities/context-budget.ts): what is sent is fitted to the window,
// counted with the real tokenizer; what is stored is not touched.

const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i % 97} value ${i}`).join(' ');

/**
 * A conversation of `turns` turns, each a question, a tool call and a result of `resultChars` characters, and an
 * answer.
 */
function conversation(turns: number, resultChars: number): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: 'You help the back office.' }];
  for (let t = 0; t < turns; t++) {
    messages.push({ role: 'user', content: `question ${t}` });
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: `call_${t}`, type: 'function', function: { name: 'export_report', arguments: '{}' } }],
    });
    messages.push({
      role: 'tool',
      tool_call_id: `call_${t}`,
      content: words(resultChars / 12, `r${t}-`).slice(0, resultChars),
    });
    messages.push({ role: 'assistant', content: `answer ${t}` });
  }
  return messages;
}

const pairing = (messages: ChatMessage[]) =>
  findPairingProblems(
    messages.map((m) => ({
      role: m.role,
      callIds: m.role === 'assistant' ? m.tool_calls?.map((c) => c.id) : undefined,
      answers: m.role === 'tool' ? m.tool_call_id : undefined,
    })),
  );

describe('the context budget', () => {
  it('knows the windows of common models and takes a configured one first', () => {
    expect(contextWindowOf('gpt-4o-mini')).toBe(128_000);
    expect(contextWindowOf('openai/gpt-4.1-2025-04-14')).toBe(1_047_576);
    expect(contextWindowOf('deepseek-chat')).toBe(128_000);
    expect(contextWindowOf('my-local-model')).toBe(DEFAULT_CONTEXT_WINDOW);
    expect(contextWindowOf('gpt-4o', 32_000)).toBe(32_000);
  });

  it("sends a conversation that fits unchanged; counted, its estimate is the provider's count", () => {
    const messages = conversation(3, 2_000);
    const { messages: sent, report } = fitToContext(messages, {
      windowTokens: 128_000,
      replyTokens: 4096,
      alwaysCount: true,
    });
    expect(sent).toEqual(messages);
    expect(report).toMatchObject({ truncated: [], elided: 0 });
    // The estimate is the provider's count (the scripted server counts the same way).
    expect(report.promptTokens).toBe(countPromptTokens({ messages }) - 3);
  });

  it('sends a request its byte bound shows to fit without counting it, the bound above the real count', () => {
    const messages = conversation(3, 2_000);
    const { messages: sent, report } = fitToContext(messages, { windowTokens: 128_000, replyTokens: 4096 });
    expect(sent).toEqual(messages);
    expect(report.promptTokens).toBeUndefined();
    expect(report.boundTokens).toBeGreaterThanOrEqual(countPromptTokens({ messages }) - 3);
    expect(report).toMatchObject({ truncated: [], elided: 0 });
  });

  it('counts as soon as the bound says the request may not fit, and then fits it as before', () => {
    // About 4 bytes a token: 30,000 tokens of results are 120,000 bytes, over a 100,000-token budget by bytes only.
    const messages = conversation(3, 40_000);
    const bound = fitToContext(messages, { windowTokens: 100_000, replyTokens: 4096 });
    const counted = fitToContext(messages, { windowTokens: 100_000, replyTokens: 4096, alwaysCount: true });
    expect(bound.report.boundTokens).toBeUndefined();
    expect(bound).toEqual(counted);
    expect(bound.report.promptTokens).toBe(countPromptTokens({ messages }) - 3);
  });

  it('shows a result larger than its share truncated, with a marker naming the size, the stored message and how to get more', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'export it' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'export_report', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: words(250_000, 'x') },
    ];
    const total = (messages[2].content as string).length;
    const { messages: sent, report } = fitToContext(messages, {
      windowTokens: 100_000,
      replyTokens: 4096,
      seqs: [4, 5, 6],
    });
    const shown = sent[2].content as string;
    expect(shown).toMatch(
      new RegExp(
        `showing the first \\d+ of ${total} characters\\. The full text is stored with the conversation \\(message 6\\)`,
      ),
    );
    expect(shown).toContain('call the tool again for a narrower or later part');
    expect(countTokens(shown)).toBeLessThanOrEqual(Math.floor(report.budgetTokens * MESSAGE_SHARE));
    expect(messages[2].content).toHaveLength(total); // the stored list is untouched
    expect(report.truncated).toEqual([2]);
  });

  it('leaves out the oldest turns whole, keeps every call with its results, and always sends the system prompt and the current turn', () => {
    const messages = conversation(20, 200_000);
    messages.push({ role: 'user', content: 'hello' });
    const { messages: sent, report } = fitToContext(messages, { windowTokens: 100_000, replyTokens: 4096 });
    expect(pairing(sent)).toEqual([]);
    expect(sent[0]).toEqual(messages[0]);
    expect(sent[1]).toMatchObject({
      role: 'system',
      content: expect.stringMatching(/^\[Context note: \d+ earlier messages were left out/),
    });
    expect(sent[2].role).toBe('user'); // the first kept message starts a turn
    expect(sent.at(-1)).toEqual({ role: 'user', content: 'hello' });
    expect(report.elided % 4).toBe(0);
    expect(report.elided).toBeGreaterThan(0);
    const providerCount = countPromptTokens({ messages: sent });
    expect(providerCount).toBeLessThanOrEqual(100_000 - 4096);
    expect(countPromptTokens({ messages })).toBeGreaterThan(1_000_000);
  });

  it('cuts the current turn further when it alone is over the window', () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'export three' }];
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [0, 1, 2, 3, 4].map((i) => ({
        id: `c${i}`,
        type: 'function' as const,
        function: { name: 'export_report', arguments: '{}' },
      })),
    });
    for (const i of [0, 1, 2, 3, 4])
      messages.push({ role: 'tool', tool_call_id: `c${i}`, content: words(40_000, `t${i}-`) });
    const { messages: sent, report } = fitToContext(messages, { windowTokens: 50_000, replyTokens: 2048 });
    expect(pairing(sent)).toEqual([]);
    expect(sent).toHaveLength(messages.length);
    expect(countPromptTokens({ messages: sent })).toBeLessThanOrEqual(50_000 - 2048);
    expect(report.truncated).toEqual([2, 3, 4, 5, 6]);
  });

  it('leaves more room when the provider counted more than the estimate (calibration)', () => {
    const messages = conversation(10, 40_000);
    const plain = fitToContext(messages, { windowTokens: 60_000, replyTokens: 2048, alwaysCount: true });
    const calibrated = fitToContext(messages, {
      windowTokens: 60_000,
      replyTokens: 2048,
      calibration: 1.5,
      alwaysCount: true,
    });
    expect(calibrated.report.budgetTokens).toBeLessThan(plain.report.budgetTokens);
    expect(calibrated.report.promptTokens! * 1.5).toBeLessThanOrEqual(60_000);
  });
});
