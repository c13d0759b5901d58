import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countTokens } from '../../src/common/tokens';
import { SCRIPTED_IMAGE_TOKENS } from '../../src/testing/content-tokens';
import { countPromptTokens } from '../../src/testing/context-window';
import { countInputTokens } from '../../src/testing/responses-plan';
import { startHarness, type Harness } from '../support/harness';

// The scripted server counts input as OpenAI bills it: reasoning items sent back, and an image at a fixed share. The
// worker's calibration (the provider's count of a prompt per token the worker estimated) must stay sane with it: the
// estimate is never below the count (the context is not overfilled), nor so far above it that the next fit shrinks.

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

/** A window small enough that the worker counts each prompt (a larger one is sent on a bound, uncounted). */
const WINDOW = 8000;

/** Each answer's provider count and the worker's estimate of its prompt, oldest first. */
const counted = async (id: string) =>
  (
    await h.pool.query<{ usage: { promptTokens: number }; prompt_estimate: number }>(
      'SELECT usage, prompt_estimate FROM durable_agent.model_responses WHERE conversation_id = $1 ORDER BY created_at',
      [id],
    )
  ).rows.map((r) => ({ provider: r.usage.promptTokens, estimate: r.prompt_estimate }));

/** The scripted server's count of a request as sent, its image parts left out. */
function countedWithoutImages(body: Record<string, unknown>): number {
  const strip = (items: unknown) =>
    (items as Record<string, unknown>[]).map((item) =>
      Array.isArray(item.content)
        ? {
            ...item,
            content: (item.content as { type: string }[]).filter(
              (p) => p.type !== 'image_url' && p.type !== 'input_image',
            ),
          }
        : item,
    );
  return Array.isArray(body.messages)
    ? countPromptTokens({ ...body, messages: strip(body.messages) })
    : countInputTokens({ ...body, input: strip(body.input) });
}

const png = (size: number) =>
  Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(size - 8)]);

describe("the provider's input count and the worker's calibration", () => {
  it('on the Responses API, the reasoning sent back is billed as input, and the estimate stays at or above the count', async () => {
    const id = h.newConversationId('rs-usage-reasoning');
    const thought = 'I weigh the refund policy against the order history, step by step, before I answer. '.repeat(80);
    h.model.enqueue({ reasoningContent: thought, content: 'First.' }, { content: 'Second.' });
    await h.client.ask(id, 'RS-USAGE one', { input: { model: { api: 'responses', contextWindow: WINDOW } } });
    await h.client.ask(id, 'RS-USAGE two');
    const [second] = h.requestsFor('RS-USAGE two') as unknown as { input: { type?: string }[] }[];
    expect(second.input.filter((i) => i.type === 'reasoning')).toHaveLength(1);

    const [first, next] = await counted(id);
    // The reasoning the first answer held is in the second prompt's count (its own tokens and 4 of framing).
    expect(next.provider - first.provider).toBeGreaterThanOrEqual(countTokens(thought) + 4);
    expect(next.provider).toBeLessThanOrEqual(next.estimate);
    expect(next.provider / next.estimate).toBeGreaterThan(0.6);
    h.expectOnlyValidModelRequests();
  });

  for (const api of ['chat', 'responses'] as const) {
    it(`an image is counted as ${SCRIPTED_IMAGE_TOKENS.auto} tokens (${api}): below the worker's estimate, and the next turn answers`, async () => {
      const id = h.newConversationId(`usage-image-${api}`);
      const files = await h.client.storeMessageFiles(id, [
        { mediaType: 'image/png', bytes: png(30_000), filename: 'chart.png' },
      ]);
      h.model.enqueue({ content: 'A chart.' }, { content: 'Still a chart.' });
      await h.client.ask(id, `USAGE-IMAGE-${api} what is this?`, {
        files,
        input: { model: { api, contextWindow: WINDOW } },
      });
      await h.client.ask(id, `USAGE-IMAGE-${api} and now?`);
      const [withImage, text] = await counted(id);
      // The image's share, not its bytes: the same request without the image part counts 765 less.
      const sent = h.model.requests.find((r) => JSON.stringify(r.body).includes(`USAGE-IMAGE-${api} what`))!
        .body as Record<string, unknown>;
      expect(withImage.provider - countedWithoutImages(sent)).toBe(SCRIPTED_IMAGE_TOKENS.auto);
      expect(withImage.provider).toBeLessThanOrEqual(withImage.estimate);
      expect(text.provider).toBeLessThanOrEqual(text.estimate);
      h.expectOnlyValidModelRequests();
    });
  }
});
