import { describe, expect, it } from 'vitest';
import { fitToContext } from '../../src/activities/context-budget';
import { REASONING_FIELD } from '../../src/activities/model/responses-request';
import { IMAGE_TOKENS, reasoningItemTokens } from '../../src/activities/sent-extras';
import { countTokens } from '../../src/common/tokens';
import type { ChatMessage } from '../../src/contract/messages';
import type { ReasoningEntry } from '../../src/db/reasoning-store';

// What a request sends besides text, in the context budget's estimate (src/activities/sent-extras.ts): a user's
// images at OpenAI's per-image count, and the Responses API's reasoning items sent back at the tokens of the
// reasoning their encrypted content holds, plus their summary. The estimate grows by them, counted or bounded, and
// the fitting leaves earlier turns out for them.

const image = (n: number) => ({ fileId: n.toString(16).padStart(64, '0'), mediaType: 'image/png', bytes: 1000 });
const pdf = { fileId: 'f'.repeat(64), mediaType: 'application/pdf', bytes: 1000 };

/** A reasoning entry whose encrypted content is `chars` long, with a one-line summary. */
function reasoning(chars: number, id = 'rs_1'): ReasoningEntry {
  return {
    item: {
      type: 'reasoning',
      id,
      summary: [{ type: 'summary_text', text: 'Checked the order before answering.' }],
      encrypted_content: 'gAAAAA' + 'x'.repeat(chars - 6),
    },
    before: { type: 'message', id: 'msg_1' },
  };
}

const answer = (text: string, entries: ReasoningEntry[] = []): ChatMessage =>
  ({ role: 'assistant', content: text, ...(entries.length ? { [REASONING_FIELD]: entries } : {}) }) as ChatMessage;

const prompt = (messages: ChatMessage[], alwaysCount: boolean) => {
  const { report } = fitToContext(messages, { windowTokens: 128_000, replyTokens: 1000, alwaysCount });
  return report.promptTokens ?? report.boundTokens!;
};

describe('what a request sends besides text', () => {
  it("counts each image of a user message at OpenAI's most for one image (auto detail), a PDF not as an image", () => {
    expect(IMAGE_TOKENS).toEqual({ low: 85, high: 1445, auto: 1445 });
    const text: ChatMessage[] = [{ role: 'user', content: 'What is on these?' }];
    const withImages: ChatMessage[] = [{ role: 'user', content: 'What is on these?', files: [image(1), image(2)] }];
    const withPdf: ChatMessage[] = [{ role: 'user', content: 'What is on these?', files: [pdf] }];
    for (const counted of [true, false]) {
      expect(prompt(withImages, counted) - prompt(text, counted)).toBe(2 * IMAGE_TOKENS.auto);
      expect(prompt(withPdf, counted)).toBe(prompt(text, counted));
    }
  });

  it('counts a reasoning item sent back as its encrypted reasoning (3/16 of a token per character) and its summary', () => {
    const entry = reasoning(16_000);
    const summary = countTokens('Checked the order before answering.');
    expect(reasoningItemTokens(entry.item, countTokens)).toBe(4 + summary + 3000);
    const plain: ChatMessage[] = [{ role: 'user', content: 'Where is ord_1?' }, answer('In Lisbon.')];
    const sentBack: ChatMessage[] = [
      { role: 'user', content: 'Where is ord_1?' },
      answer('In Lisbon.', [entry, reasoning(1600, 'rs_2')]),
    ];
    const expected =
      reasoningItemTokens(entry.item, countTokens) + reasoningItemTokens(reasoning(1600).item, countTokens);
    expect(prompt(sentBack, true) - prompt(plain, true)).toBe(expected);
    // The byte bound, used when nothing is counted, stays above the count.
    expect(prompt(sentBack, false) - prompt(plain, false)).toBeGreaterThanOrEqual(expected);
  });

  it('leaves earlier turns out for their images and reasoning where their text alone would fit', () => {
    // Six turns of a few words each, every question with two images and every answer with reasoning of ~1,500 tokens.
    const turns = (extras: boolean): ChatMessage[] => [
      { role: 'system', content: 'You look orders up.' },
      ...Array.from({ length: 6 }, (_, t): ChatMessage[] => [
        {
          role: 'user',
          content: `What is in photo ${t}?`,
          ...(extras ? { files: [image(2 * t), image(2 * t + 1)] } : {}),
        },
        answer(`Photo ${t} shows a parcel.`, extras ? [reasoning(8000, `rs_${t}`)] : []),
      ]).flat(),
    ];
    const options = { windowTokens: 12_000, replyTokens: 1000 };
    for (const alwaysCount of [true, false]) {
      const textOnly = fitToContext(turns(false), { ...options, alwaysCount });
      expect(textOnly.report.elided).toBe(0);
      const full = fitToContext(turns(true), { ...options, alwaysCount });
      // A turn is about 2 × 1,445 + 1,500 tokens: one earlier turn fits beside the current one; four are left out.
      expect(full.report.elided).toBe(8);
      expect(full.report.promptTokens).toBeLessThanOrEqual(full.report.budgetTokens);
      expect(full.messages[1]).toMatchObject({
        role: 'system',
        content: expect.stringMatching(/^\[Context note: 8 earlier/),
      });
      expect(full.messages.at(-2)).toMatchObject({ role: 'user', content: 'What is in photo 5?' });
    }
  });
});
