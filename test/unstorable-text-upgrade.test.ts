import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CONVERSATION_WORKFLOW_TYPE, userMessageSignal } from '../src/workflows/api';
import { exportHistoryFixture } from './support/fixture-export';
import { startHarness, type Harness } from './support/harness';
import { previousSources, runWorkerOn } from './support/upgrade';
import { startWorkerProcess } from './support/worker-process';

// A conversation the code before this change stalled: a user message holding
// U+0000, taken by the workflow, then refused by PostgreSQL at every write
// (the model calls that carried it failed their attempts, the write after the
// turn retried for ever). When the workers are upgraded, the history replays
// on the current code (which takes the message as it was taken), the write
// stores it with U+FFFD, and the conversation answers the next message.

/** The last commit before text PostgreSQL cannot store was refused or replaced. */
const PRE_UNSTORABLE_COMMIT = '40254048ff6a74ffd7b44875791cdf70835fa068';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(async () => {
  await h?.stop();
});

/** The conversation's activity retrying now, with its attempt and last failure. */
async function retrying(id: string): Promise<{ type: string; attempt: number; failure: string } | undefined> {
  const { raw } = await h.temporal.workflow.getHandle(id).describe();
  const pending = raw.pendingActivities?.find((a) => (a.attempt ?? 0) > 1);
  return pending ? { type: pending.activityType?.name ?? '', attempt: pending.attempt ?? 0, failure: pending.lastFailure?.message ?? '' } : undefined;
}

describe('a conversation stalled by U+0000 before this change', () => {
  it('recovers when the workers are upgraded: the stalled write stores the message with U+FFFD and the next message is answered', async () => {
    const id = h.newConversationId('stalled-nul');
    const sources = previousSources(PRE_UNSTORABLE_COMMIT);
    const previous = await startWorkerProcess(h.workerEnv({ OPENAI_MODEL: 'scripted-model' }), 60_000, sources.dir);
    try {
      await h.temporal.workflow.signalWithStart(CONVERSATION_WORKFLOW_TYPE, {
        workflowId: id,
        taskQueue: h.taskQueue,
        args: [{ timeouts: { modelCallAttempts: 2 } }],
        signal: userMessageSignal,
        signalArgs: [{ text: 'hello\u0000world', messageId: 'stalled-1' }],
      });
      // Stalled: the model calls failed on the write, and the write after the turn retries, refused every time.
      await expect
        .poll(() => retrying(id), { timeout: 45_000, interval: 500 })
        .toMatchObject({ type: 'durableAgent.appendMessages', failure: expect.stringContaining('unsupported Unicode escape sequence') });
    } finally {
      await previous.stop();
      sources.remove();
    }
    expect(h.model.requests).toHaveLength(0);

    const current = await runWorkerOn(h, { codePath: inject('workflowBundlePath') });
    try {
      const turn = await h.client.waitForTurn(id, 'stalled-1', 30_000);
      // The previous code had failed the turn on its model calls; what changed is that it ends.
      expect(turn.outcome).toBe('failed');
      const [stored] = await h.client.transcript(id);
      expect(stored.message).toEqual({ role: 'user', content: 'hello\uFFFDworld' });
      h.model.enqueue({ content: 'Answered after the upgrade.' });
      const { turn: next, answer } = await h.client.ask(id, 'are you there now?');
      expect(next.outcome).toBe('answered');
      expect(answer).toBe('Answered after the upgrade.');
      expect((h.model.requests[0].body as { messages: { content: string }[] }).messages[0].content).toBe('hello\uFFFDworld');
      h.expectOnlyValidModelRequests();
      await h.client.end(id);
      await h.temporal.workflow.getHandle(id).result();
    } finally {
      await current.stop();
    }
    await exportHistoryFixture(h.temporal, id, 'upgrade-stalled-by-nul');
  });
});
