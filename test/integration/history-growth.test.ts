import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tool } from '../../src/tools/tool';
import { historyBytesPerStep } from '../support/history';
import { startHarness, type Harness } from '../support/harness';

const STEPS = 41;
const PAGE = 'x'.repeat(1500);

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    tools: [
      tool({
        name: 'read_report_page',
        description: 'Read one page of the quarterly report.',
        parameters: z.object({ page: z.number().int() }),
        execute: ({ page }) => `page ${String(page).padStart(3, '0')}: ${PAGE}`,
      }),
    ],
  });
});
afterAll(async () => {
  await h?.stop();
});

describe('where the bytes live', () => {
  it('history bytes added per step do not grow with the conversation (step 40 ≈ step 5)', async () => {
    const id = h.newConversationId('long');
    h.model.setResponder((request) => {
      const messages = (request.body as { messages: { role: string }[] }).messages;
      const done = messages.filter((m) => m.role === 'tool').length;
      return done < STEPS - 1
        ? { toolCalls: [{ name: 'read_report_page', arguments: { page: done + 1 } }] }
        : { content: 'I have read the whole report.' };
    });
    try {
      const { turn } = await h.client.ask(id, 'Read the whole report, page by page', {
        input: { systemPrompt: 'You read reports.', maxSteps: STEPS + 5 },
        timeoutMs: 300_000,
      });
      expect(turn).toMatchObject({ outcome: 'answered', steps: STEPS });
    } finally {
      h.model.setResponder(undefined);
    }

    const perStep = await historyBytesPerStep(h.temporal, id);
    expect(perStep).toHaveLength(STEPS);
    const requests = h.requestsFor('Read the whole report');
    const sentAt = (step: number) => JSON.stringify(requests[step - 1].messages).length;
    console.log(
      `history bytes added by step 5: ${perStep[4]}, by step 40: ${perStep[39]} (ratio ${(perStep[39] / perStep[4]).toFixed(3)}); ` +
        `transcript sent to the model at step 5: ${sentAt(5)} chars, at step 40: ${sentAt(40)} chars`,
    );
    // The conversation the model sees grew about eightfold...
    expect(sentAt(40)).toBeGreaterThan(6 * sentAt(5));
    // ...while what each step adds to the workflow history stayed the same.
    expect(perStep[39]).toBeLessThan(perStep[4] * 1.1);
    expect(perStep[39]).toBeGreaterThan(perStep[4] * 0.9);
    h.expectOnlyValidModelRequests();
  });
});
