import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DurableAgentPlugin } from '../../src/worker/plugin';
import { PRE_RELEASE_WORKFLOW_TYPE, PreReleaseConversationsError } from '../../src/worker/pre-release-conversations';
import { backofficeTools } from '../../src/demo/tools';
import { startHarness, type Harness } from '../support/harness';

// A task queue where a build before 1.0 still has open conversations (workflow
// type conversationWorkflow, whose histories only that build's code replays):
// a 1.0 worker refuses to start there, saying how many and how to drain them,
// instead of failing their workflow tasks for good; once they have ended it
// starts. The open conversation is a real execution of that type on the dev
// server (nothing polls it).

let h: Harness;
let connection: NativeConnection;
beforeAll(async () => {
  h = await startHarness({ worker: false });
  connection = await NativeConnection.connect({ address: h.temporalAddress });
});
afterAll(async () => {
  await connection?.close();
  await h?.stop();
});

const createWorker = () =>
  Worker.create({
    connection,
    taskQueue: h.taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    plugins: [
      new DurableAgentPlugin({
        tools: backofficeTools(),
        model: { name: 'scripted-model', apiKey: 'test-key', baseUrl: h.model.url },
        database: { pool: h.pool },
      }),
    ],
  });

describe('conversations started by a build before 1.0', () => {
  it('a 1.0 worker refuses their task queue, naming how many and how to drain them, and starts once they have ended', async () => {
    const old = await h.temporal.workflow.start(PRE_RELEASE_WORKFLOW_TYPE, {
      workflowId: h.newConversationId('pre-1.0'),
      taskQueue: h.taskQueue,
      args: [{}],
    });
    let err: unknown;
    await expect
      .poll(
        async () => {
          err = await createWorker().then(
            () => undefined,
            (e: unknown) => e,
          );
          return err instanceof PreReleaseConversationsError;
        },
        { timeout: 10_000 },
      )
      .toBe(true);
    expect((err as Error).message).toContain(
      `Task queue "${h.taskQueue}" of namespace "default" has 1 open conversation started by a build before 1.0`,
    );
    expect((err as Error).message).toContain(
      `temporal workflow terminate --namespace default --query "WorkflowType = '${PRE_RELEASE_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND TaskQueue = '${h.taskQueue}'"`,
    );
    expect((err as Error).message).toContain('TEMPORAL_TASK_QUEUE');

    await old.terminate('drained for the test');
    let started: Worker | undefined;
    await expect
      .poll(
        async () => {
          started = await createWorker().catch(() => undefined);
          return started?.getState();
        },
        { timeout: 10_000 },
      )
      .toBe('INITIALIZED');
    const running = started!.run();
    await expect.poll(() => started!.getState()).toBe('RUNNING');
    started!.shutdown();
    await running;
  });
});
