import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { startHarness, type Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

describe('determinism', () => {
  it("replaying a finished conversation's history against the current workflow code raises no nondeterminism", async () => {
    const id = h.newConversationId('replay');
    h.model.enqueue(
      {
        toolCalls: [
          { name: 'find_customer', arguments: { query: 'Ada' } },
          { name: 'no_such_tool', arguments: {} },
          { name: 'list_orders', arguments: '{"customer_id":' },
        ],
      },
      { kind: 'http_error', status: 503 },
      { content: 'First answer.' },
      { content: 'Second answer.' },
    );
    await h.client.ask(id, 'Replay me', { input: { systemPrompt: 'Be brief.' } });
    await h.client.ask(id, 'And again');
    await h.client.end(id);
    await h.temporal.workflow.getHandle(id).result();

    const history = await h.temporal.workflow.getHandle(id).fetchHistory();
    expect(history.events?.length).toBeGreaterThan(20);
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, id),
    ).resolves.toBeUndefined();
  });
});
